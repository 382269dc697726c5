"""Scheduling and binding against each older API server (tests of ../test_scheduling.py)."""

from tests.integration.test_scheduling import (  # noqa: F401  (fixtures and tests collected here)
    scheduler,
    test_a_bound_pod_requesting_past_int64_does_not_stop_scheduling,
    test_deleting_a_bound_pod_makes_room_for_a_pending_one,
    test_unschedulable_pod_reports_reason_and_binds_when_a_node_arrives,
)
