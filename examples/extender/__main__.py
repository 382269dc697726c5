from examples.extender.extender import main

raise SystemExit(main())
