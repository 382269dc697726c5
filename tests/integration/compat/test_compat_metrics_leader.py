"""Metrics and leader election against each older API server (../test_metrics_recorded.py,
../test_leader_election.py)."""

from tests.integration.test_leader_election import (  # noqa: F401  (fixtures and tests collected here)
    candidates,
    lease_name,
    test_a_stolen_lease_stops_the_leader_within_a_retry_period,
    test_exactly_one_leads,
)
from tests.integration.test_metrics_recorded import (  # noqa: F401
    test_every_documented_metric_is_recorded_with_matching_counts,
)
