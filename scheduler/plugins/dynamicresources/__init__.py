"""DynamicResources: ResourceClaims allocated by the structured allocator, as kube-scheduler does."""

from scheduler.plugins.dynamicresources.plugin import DynamicResources

__all__ = ["DynamicResources"]
