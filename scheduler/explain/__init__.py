"""Explain and simulate: decision records, nearest misses, the debug endpoint's data, and the
``explain`` / ``simulate`` / ``snapshot`` subcommands. The scheduling cycle calls in through
:class:`~scheduler.explain.recorder.DecisionRecorder`; nothing here schedules on its own: simulate runs
the product's SchedulingAlgorithm and Frameworks on a read-only snapshot.
"""
