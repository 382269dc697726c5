"""Volumes against each older API server (tests of ../test_volumes.py)."""

from tests.integration.test_volumes import (  # noqa: F401  (fixtures and tests collected here)
    run_id,
    scheduler,
    test_csinode_limit_leaves_the_third_volume_waiting,
    test_local_pvs_pin_pods_to_their_nodes_and_a_full_node_leaves_the_pod_waiting,
    test_zonal_pv_places_the_pod_in_its_zone_or_leaves_it_waiting,
)
