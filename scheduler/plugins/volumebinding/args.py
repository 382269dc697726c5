"""VolumeBindingArgs: defaults and validation (``apis/config/v1/defaults.go``,
``apis/config/validation/validation_pluginargs.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.noderesources.args import _shape as read_shape

DEFAULT_BIND_TIMEOUT_SECONDS = 600
# The default shape when StorageCapacityScoring is on: emptier volumes score higher.
DEFAULT_SHAPE: tuple[tuple[int, int], ...] = ((0, 10), (100, 0))


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs:
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[tuple[int, int], ...] = ()


def parse_args(raw: Mapping[str, Any] | None, *, storage_capacity_scoring: bool) -> VolumeBindingArgs:
    reader = ArgsReader(names.VOLUME_BINDING)
    args = reader.top(raw, "VolumeBindingArgs", ("bindTimeoutSeconds", "shape"))
    timeout = reader.integer(
        args.get("bindTimeoutSeconds"), "bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS
    )
    if timeout < 0:
        raise reader.error(
            "bindTimeoutSeconds",
            f"Invalid value: {timeout}: invalid BindTimeoutSeconds, should not be a negative value",
        )
    raw_shape = args.get("shape")
    if not storage_capacity_scoring:
        if raw_shape is not None:
            raise reader.error(
                "shape",
                "Invalid value: unexpected field `shape`, remove it or turn on the feature gate "
                "StorageCapacityScoring",
            )
        return VolumeBindingArgs(timeout, ())
    # Defaulting fills an empty shape before validation, as upstream's SetDefaults_VolumeBindingArgs.
    shape = read_shape(reader, raw_shape, "shape") if raw_shape else DEFAULT_SHAPE
    return VolumeBindingArgs(timeout, shape)
