"""Constraints against each older API server (tests of ../test_constraints.py)."""

from tests.integration.test_constraints import (  # noqa: F401  (fixtures and tests collected here)
    scheduler,
    test_min_domains_above_the_zone_count_holds_pods_back,
    test_pods_using_unsupported_fields_get_a_clear_failed_scheduling,
    test_topology_spread_keeps_zones_within_max_skew_at_every_step,
)
