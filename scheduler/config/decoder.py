"""The strict field reader that every part of the config decoder shares (the top level, profiles,
extenders): unknown fields and type errors are collected with their field path, and a default stands in
so decoding goes on and reports every problem in one pass."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scheduler.config.duration import parse_duration
from scheduler.config.errors import ErrorList, FieldPath

# Top-level fields that older API versions had: their unknown-field error says where they went.
_REMOVED_TOP_FIELDS = {
    "healthzBindAddress": "removed in kubescheduler.config.k8s.io/v1beta3; it is a command-line flag now",
    "metricsBindAddress": "removed in kubescheduler.config.k8s.io/v1beta3; it is a command-line flag now",
}


class Decoder:
    """Reads fields of a decoded YAML/JSON document strictly, collecting type errors with their paths."""

    def __init__(self, errs: ErrorList) -> None:
        self.errs = errs

    def mapping(self, value: Any, path: FieldPath, known: tuple[str, ...]) -> dict[str, Any]:
        """``value`` as a dict (null -> {}), reporting unknown keys. Non-mappings report and give {}."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.errs.invalid(path, value, "must be an object")
            return {}
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.errs.unknown_field(path.child(str(key)))
            elif key not in known:
                self.errs.unknown_field(
                    path.child(key), _REMOVED_TOP_FIELDS.get(key, "") if not str(path) else ""
                )
            else:
                out[key] = item
        return out

    def sequence(self, value: Any, path: FieldPath) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            self.errs.invalid(path, value, "must be a list")
            return []
        return list(value)

    def integer(
        self, d: Mapping[str, Any], key: str, path: FieldPath, default: int | None, *, bits: int = 32
    ) -> int | None:
        """An int of upstream's Go type (int32 unless ``bits`` says otherwise): values past its range
        fail to decode there ("cannot unmarshal number ... of type int32"), so they fail here."""
        value = d.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            if not (isinstance(value, float) and value.is_integer()):
                self.errs.invalid(path.child(key), value, "must be an integer")
                return default
            value = int(value)
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        if not low <= value <= high:
            self.errs.invalid(path.child(key), value, f"must fit in int{bits} [{low}, {high}]")
            return default
        return value

    def number(self, d: Mapping[str, Any], key: str, path: FieldPath, default: float) -> float:
        value = d.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.errs.invalid(path.child(key), value, "must be a number")
            return default
        if not math.isfinite(value):
            self.errs.invalid(path.child(key), value, "must be a finite number")
            return default
        return float(value)

    def boolean(self, d: Mapping[str, Any], key: str, path: FieldPath, default: bool) -> bool:
        value = d.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.errs.invalid(path.child(key), value, "must be a boolean")
            return default
        return value

    def string(self, d: Mapping[str, Any], key: str, path: FieldPath, default: str) -> str:
        value = d.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.errs.invalid(path.child(key), value, "must be a string")
            return default
        return value

    def duration(self, d: Mapping[str, Any], key: str, path: FieldPath, default: float) -> float:
        value = d.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.errs.invalid(path.child(key), value, 'must be a duration string such as "15s" or "1m30s"')
            return default
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            self.errs.invalid(path.child(key), value, str(exc))
            return default
        return seconds if seconds != 0 else default
