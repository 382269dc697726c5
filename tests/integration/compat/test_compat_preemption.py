"""Preemption against each older API server (tests of ../test_preemption_on_cluster.py)."""

from tests.integration.test_preemption_on_cluster import (  # noqa: F401  (fixtures and tests collected here)
    run_id,
    scheduler,
    test_high_priority_pod_preempts_one_victim_and_binds_there,
    test_preemption_policy_never_evicts_nothing_and_waits,
)
