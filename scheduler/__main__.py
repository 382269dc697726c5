import sys

from scheduler.app.cli import main

sys.exit(main())
