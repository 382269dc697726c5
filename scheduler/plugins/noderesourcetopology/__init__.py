"""NodeResourceTopologyMatch with the NodeResourceTopology CRD (scheduler-plugins v0.34.7
``pkg/noderesourcetopology``)."""

from scheduler.plugins.noderesourcetopology.args import NAME, NodeResourceTopologyMatchArgs, parse_args
from scheduler.plugins.noderesourcetopology.plugin import (
    MISFITS_KEY,
    PLACEMENTS_KEY,
    NodeResourceTopologyMatch,
    misfit_detail,
    placement_detail,
)

__all__ = [
    "MISFITS_KEY",
    "NAME",
    "PLACEMENTS_KEY",
    "NodeResourceTopologyMatch",
    "NodeResourceTopologyMatchArgs",
    "misfit_detail",
    "parse_args",
    "placement_detail",
]
