"""DRA (resource.k8s.io/v1, served from v1.34) against each older API server (../test_dra.py): claims
allocated, reserved and written by py-scheduler, and PostFilter's deallocation."""

from tests.integration.test_dra import (  # noqa: F401  (fixtures and tests collected here)
    run_id,
    scheduler,
    test_post_filter_deallocates_an_idle_claim_allocated_where_the_pod_cannot_go,
)
