"""Builds and runs the real local control plane (etcd, kube-apiserver, kube-scheduler) for tests and demos.

Never imported by the product; tests, the demo and the benchmarks use it.
"""

from devcluster.binaries import BinariesMissingError, binaries_dir, k8s_version
from devcluster.cluster import ControlPlane, ControlPlaneError
from devcluster.nodes import create_nodes, delete_nodes, make_node

__all__ = [
    "BinariesMissingError",
    "ControlPlane",
    "ControlPlaneError",
    "binaries_dir",
    "create_nodes",
    "delete_nodes",
    "k8s_version",
    "make_node",
]
