"""PodTopologySpread (``plugins/podtopologyspread`` upstream)."""

from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
