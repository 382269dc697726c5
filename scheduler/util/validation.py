"""Name checks from ``k8s.io/apimachinery/pkg/util/validation`` that plugin args and selectors need."""

from __future__ import annotations

import re

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_INT64 = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def qualified_name_error(value: str) -> str | None:
    """Why ``value`` is not a qualified name (``[prefix/]name``, as label keys are), or None."""
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if slash and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character"
        )
    return None


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: None where Go returns an error."""
    if not _INT64.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None
