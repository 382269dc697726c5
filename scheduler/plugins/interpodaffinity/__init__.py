"""InterPodAffinity (``pkg/scheduler/framework/plugins/interpodaffinity/``)."""

from scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
