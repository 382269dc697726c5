"""Configuration errors in the style of apimachinery's ``field.Error`` and strict decoding.

Every problem is collected with the full path of the field it concerns (``profiles[0].plugins.score``)
and all of them are reported together, so one start-up attempt shows everything wrong with a file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


class ConfigError(ValueError):
    """An invalid KubeSchedulerConfiguration. ``errors`` holds one line per problem."""

    def __init__(self, errors: Iterable[str], source: str | None = None) -> None:
        self.errors: tuple[str, ...] = tuple(errors)
        self.source = source
        where = f"{source}: " if source else ""
        if len(self.errors) == 1:
            message = f"{where}{self.errors[0]}"
        else:
            lines = "\n".join(f"  - {e}" for e in self.errors)
            message = f"{where}invalid KubeSchedulerConfiguration ({len(self.errors)} errors):\n{lines}"
        super().__init__(message)


# A wrong-typed value (a whole list where a number belongs) is echoed into the error; past this many
# characters it is cut, so one bad field cannot turn the one-line start-up error into megabytes.
MAX_VALUE_CHARS = 200


def format_value(value: Any) -> str:
    """Render a value the way ``field.Error`` does: strings quoted, Go spellings for bool and nil;
    at most MAX_VALUE_CHARS characters."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = repr(value)
    if len(text) > MAX_VALUE_CHARS:
        return f"{text[:MAX_VALUE_CHARS]}...({len(text) - MAX_VALUE_CHARS} more characters)"
    return text


class FieldPath:
    """An immutable field path; ``str()`` gives ``a.b[0].c``."""

    __slots__ = ("_text",)

    def __init__(self, text: str = "") -> None:
        self._text = text

    def child(self, *names: str) -> FieldPath:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return FieldPath(text)

    def index(self, i: int) -> FieldPath:
        return FieldPath(f"{self._text}[{i}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"FieldPath({self._text!r})"


class ErrorList:
    """Accumulates field errors; ``raise_if_any`` turns them into one ConfigError."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.errors)

    def __len__(self) -> int:
        return len(self.errors)

    def invalid(self, path: FieldPath, value: Any, detail: str) -> None:
        self.errors.append(f"{path}: Invalid value: {format_value(value)}: {detail}")

    def required(self, path: FieldPath, detail: str = "") -> None:
        self.errors.append(f"{path}: Required value" + (f": {detail}" if detail else ""))

    def duplicate(self, path: FieldPath, value: Any) -> None:
        self.errors.append(f"{path}: Duplicate value: {format_value(value)}")

    def not_supported(self, path: FieldPath, value: Any, supported: Iterable[str]) -> None:
        choices = ", ".join(json.dumps(s) for s in supported)
        self.errors.append(f"{path}: Unsupported value: {format_value(value)}: supported values: {choices}")

    def forbidden(self, path: FieldPath, detail: str) -> None:
        self.errors.append(f"{path}: Forbidden: {detail}")

    def unknown_field(self, path: FieldPath, hint: str = "") -> None:
        self.errors.append(f'unknown field "{path}"' + (f" ({hint})" if hint else ""))

    def duplicate_field(self, path: FieldPath) -> None:
        self.errors.append(f'duplicate field "{path}"')

    def other(self, message: str) -> None:
        self.errors.append(message)

    def extend(self, other: ErrorList) -> None:
        self.errors.extend(other.errors)

    def raise_if_any(self, source: str | None = None) -> None:
        if self.errors:
            raise ConfigError(self.errors, source)
