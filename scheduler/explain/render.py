"""Readable text for decision records (the JSON of /debug/pods and of simulate): why pending, why
this node."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

NAMES_SHOWN = 3


def render_pod(doc: Mapping[str, Any], *, attempts: int = 1) -> str:
    """The last ``attempts`` attempts of a /debug/pods document, newest last."""
    records: Sequence[Mapping[str, Any]] = doc.get("attempts") or []
    lines = [f"Pod {doc.get('pod', '?')}: {len(records)} recorded attempt(s)"]
    for record in records[-attempts:]:
        lines.append("")
        lines.extend(render_attempt(record))
    return "\n".join(lines) + "\n"


def render_attempt(record: Mapping[str, Any]) -> list[str]:
    when = datetime.datetime.fromtimestamp(float(record.get("time") or 0), tz=datetime.UTC)
    nodes = record.get("nodes") or {}
    outcome = record.get("outcome", "")
    head = f"Attempt {record.get('attempt')} at {when:%Y-%m-%dT%H:%M:%SZ}, profile {record.get('profile')}"
    lines = [head, f"  Outcome:   {outcome}" + (f" on {record['node']}" if record.get("node") else "")]
    lines.append(
        f"  Nodes:     {nodes.get('total', 0)} in cluster, {nodes.get('evaluated', 0)} evaluated, "
        f"{nodes.get('feasible', 0)} feasible"
    )
    if record.get("message"):
        lines.append(f"  Message:   {record['message']}")
    for note in record.get("nodeNotes") or ():
        lines.append(f"  On {record.get('node')}: {note}")
    lines.extend(_why_pending(record))
    lines.extend(_why_this_node(record))
    return lines


def _why_pending(record: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if record.get("preFilter"):
        lines += ["", f"  Rejected before Filter (PreFilter): {record['preFilter']}"]
    filters: Mapping[str, Mapping[str, Any]] = record.get("filter") or {}
    if filters:
        rows = [("PLUGIN", "NODES", "REASONS", "E.G.")]
        for plugin, verdict in sorted(filters.items(), key=lambda kv: -int(kv[1].get("rejected", 0))):
            reasons = ", ".join(f"{reason} ({count})" for reason, count in verdict.get("reasons", {}).items())
            names = list(verdict.get("nodes") or [])
            example = ", ".join(names[:NAMES_SHOWN]) + (
                ", ..." if verdict.get("rejected", 0) > NAMES_SHOWN else ""
            )
            rows.append((plugin or "?", str(verdict.get("rejected", 0)), reasons, example))
        lines += ["", "  Filter rejections:", *_table(rows)]
    if record.get("postFilter"):
        lines.append(f"  PostFilter: {record['postFilter']}")
    if record.get("nominatedNode"):
        lines.append(f"  Nominated node: {record['nominatedNode']}")
    misses: Sequence[Mapping[str, Any]] = record.get("nearestMisses") or []
    if misses:
        lines += [
            "",
            f"  Nearest misses (failed exactly one plugin; {record.get('nearestMissesProbed', 0)} probed):",
        ]
        lines += [f"    {m['node']}: {m['detail']}  [{m['plugin']}]" for m in misses]
    elif record.get("outcome") == "Unschedulable" and record.get("nearestMissesProbed"):
        lines.append(
            f"  No nearest misses: every probed node ({record['nearestMissesProbed']}) failed 2+ plugins."
        )
    return lines


def _why_this_node(record: Mapping[str, Any]) -> list[str]:
    scores: Sequence[Mapping[str, Any]] = record.get("scores") or []
    if not scores:
        return []
    if len(scores) == 1 and not scores[0].get("plugins"):
        return ["", f"  Why {scores[0]['node']}: the only feasible node (nothing to score)."]
    plugins = sorted({name for s in scores for name in s.get("plugins", {})})
    names = (f"{s['node']}{' (chosen)' if s.get('chosen') else ''}" for s in scores)
    header = ("SCORE (raw/normalised/weighted)", *names)
    rows = [header]
    for plugin in plugins:
        cells = []
        for s in scores:
            value = s.get("plugins", {}).get(plugin)
            cells.append(
                "-" if value is None else f"{value['raw']}/{value['normalized']}/{value['weighted']}"
            )
        rows.append((plugin, *cells))
    rows.append(("TOTAL", *(str(s.get("total", 0)) for s in scores)))
    return ["", "  Why this node (top scored nodes):", *_table(rows), *_measured_load(record)]


def _percent(resource: Mapping[str, Any] | None) -> str:
    if not resource:
        return "-"
    return f"{resource.get('avgPercent', 0):.1f}% avg, {resource.get('stdPercent', 0):.1f}% std"


def _measured_load(record: Mapping[str, Any]) -> list[str]:
    """The load a load-aware plugin read per top node: the sample's numbers, its age, any fallback."""
    load: Mapping[str, Mapping[str, Any]] = record.get("measuredLoad") or {}
    if not load:
        return []
    rows = [("NODE", "CPU", "MEMORY", "SAMPLE", "NOTE")]
    for node, entry in load.items():
        age = entry.get("sampleAgeSeconds")
        sample = "none" if age is None else f"{entry.get('window') or '-'} window, {age:g}s old"
        note = f"fallback: {entry['fallback']}" if entry.get("fallback") else ""
        if entry.get("lastError"):
            note = (note + "; " if note else "") + f"last refresh failed: {entry['lastError']}"
        rows.append((node, _percent(entry.get("cpu")), _percent(entry.get("memory")), sample, note))
    source = next(iter(load.values())).get("source", "")
    return ["", f"  Measured load ({source}):", *_table(rows)]


def _table(rows: Sequence[Sequence[str]], indent: str = "    ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
