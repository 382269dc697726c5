"""CapacityScheduling with scheduler-plugins' ElasticQuota CRD (``pkg/capacityscheduling``)."""

from scheduler.plugins.capacityscheduling.plugin import (
    ELASTIC_QUOTA_SNAPSHOT_KEY,
    NAME,
    PRE_FILTER_STATE_KEY,
    CapacityScheduling,
    QuotaPreemptor,
)

__all__ = [
    "ELASTIC_QUOTA_SNAPSHOT_KEY",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "CapacityScheduling",
    "QuotaPreemptor",
]
