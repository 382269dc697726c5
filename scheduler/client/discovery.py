"""What the API server serves: its version (``/version``) and, per API group, the versions served and the
resources of each (the legacy discovery documents ``/api``, ``/apis`` and ``/apis/<group>/<version>``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class JsonGetter(Protocol):
    def request_json(self, method: str, path: str) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ServedApis:
    """``resources`` maps ``group/version`` (``v1`` for the core group) to the plural names served there
    (subresources left out); ``server_version`` is ``/version``'s gitVersion, e.g. ``v1.35.4``."""

    server_version: str
    resources: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def serves(self, group: str, version: str, plural: str) -> bool:
        return plural in self.resources.get(f"{group}/{version}" if group else version, frozenset())

    def versions_of(self, group: str, plural: str) -> list[str]:
        """The versions of ``group`` that serve ``plural``, as discovery lists them (preferred first)."""
        prefix = f"{group}/" if group else ""
        out = []
        for group_version, plurals in self.resources.items():
            if plural not in plurals:
                continue
            if group and group_version.startswith(prefix) and "/" not in group_version[len(prefix) :]:
                out.append(group_version[len(prefix) :])
            elif not group and "/" not in group_version:
                out.append(group_version)
        return out

    @property
    def minor(self) -> int | None:
        """The server's minor version (35 for ``v1.35.4``), None when /version says something else."""
        parts = self.server_version.lstrip("v").split(".")
        digits = "".join(c for c in parts[1] if c.isdigit()) if len(parts) > 1 else ""
        return int(digits) if digits else None


def _plurals(document: Mapping[str, Any]) -> frozenset[str]:
    names = (r.get("name") for r in document.get("resources") or () if isinstance(r, Mapping))
    return frozenset(n for n in names if isinstance(n, str) and "/" not in n)


def discover(api: JsonGetter, groups: Iterable[str]) -> ServedApis:
    """Reads /version and the discovery documents of ``groups`` ("" is the core group). Errors (the
    server unreachable, a 403) propagate: the caller decides whether to retry."""
    version = api.request_json("GET", "/version").get("gitVersion")
    wanted = set(groups)
    resources: dict[str, frozenset[str]] = {}
    if "" in wanted:
        for v in api.request_json("GET", "/api").get("versions") or ():
            if isinstance(v, str):
                resources[v] = _plurals(api.request_json("GET", f"/api/{v}"))
    for group in api.request_json("GET", "/apis").get("groups") or ():
        if not isinstance(group, Mapping) or group.get("name") not in wanted:
            continue
        for entry in group.get("versions") or ():
            group_version = entry.get("groupVersion") if isinstance(entry, Mapping) else None
            if isinstance(group_version, str):
                resources[group_version] = _plurals(api.request_json("GET", f"/apis/{group_version}"))
    return ServedApis(server_version=version if isinstance(version, str) else "unknown", resources=resources)
