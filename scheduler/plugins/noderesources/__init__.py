"""NodeResourcesFit and NodeResourcesBalancedAllocation (``plugins/noderesources`` upstream)."""
