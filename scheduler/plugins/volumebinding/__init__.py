"""VolumeBinding: PersistentVolumeClaims bound, matched or provisioned where the pod lands."""

from scheduler.plugins.volumebinding.plugin import VolumeBinding

__all__ = ["VolumeBinding"]
