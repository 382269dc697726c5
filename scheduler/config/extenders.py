"""The ``extenders`` part of a KubeSchedulerConfiguration: decode, validate, encode.

Decoding is strict like the rest of the file (upstream ``Extender`` / ``ExtenderTLSConfig`` /
``ExtenderManagedResource`` JSON tags). Validation is upstream's ``validateExtenders``, same rules and
messages: a positive weight for a prioritizer, at most one binder, managed resources that are distinct
extended resource names.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config.decoder import Decoder
from scheduler.config.duration import format_duration
from scheduler.config.errors import ErrorList, FieldPath
from scheduler.config.types import ExtenderConfig, ExtenderManagedResource, ExtenderTLSConfig
from scheduler.util.resource_names import is_extended_resource_name
from scheduler.util.validation import qualified_name_error

_EXTENDER_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")
_MANAGED_RESOURCE_FIELDS = ("name", "ignoredByScheduler")


def decode_extenders(dec: Decoder, raw: Any, path: FieldPath) -> tuple[ExtenderConfig, ...]:
    out = []
    for i, item in enumerate(dec.sequence(raw, path)):
        p = path.index(i)
        d = dec.mapping(item, p, _EXTENDER_FIELDS)
        out.append(
            ExtenderConfig(
                url_prefix=dec.string(d, "urlPrefix", p, ""),
                filter_verb=dec.string(d, "filterVerb", p, ""),
                preempt_verb=dec.string(d, "preemptVerb", p, ""),
                prioritize_verb=dec.string(d, "prioritizeVerb", p, ""),
                weight=dec.integer(d, "weight", p, 0) or 0,
                bind_verb=dec.string(d, "bindVerb", p, ""),
                enable_https=dec.boolean(d, "enableHTTPS", p, False),
                tls_config=_decode_tls(dec, d.get("tlsConfig"), p.child("tlsConfig")),
                http_timeout=dec.duration(d, "httpTimeout", p, 0.0),
                node_cache_capable=dec.boolean(d, "nodeCacheCapable", p, False),
                managed_resources=_decode_managed(
                    dec, d.get("managedResources"), p.child("managedResources")
                ),
                ignorable=dec.boolean(d, "ignorable", p, False),
            )
        )
    return tuple(out)


def _decode_tls(dec: Decoder, raw: Any, path: FieldPath) -> ExtenderTLSConfig | None:
    if raw is None:
        return None
    d = dec.mapping(raw, path, _TLS_FIELDS)
    return ExtenderTLSConfig(
        insecure=dec.boolean(d, "insecure", path, False),
        server_name=dec.string(d, "serverName", path, ""),
        cert_file=dec.string(d, "certFile", path, ""),
        key_file=dec.string(d, "keyFile", path, ""),
        ca_file=dec.string(d, "caFile", path, ""),
        cert_data=_bytes(dec, d, "certData", path),
        key_data=_bytes(dec, d, "keyData", path),
        ca_data=_bytes(dec, d, "caData", path),
    )


def _bytes(dec: Decoder, d: Mapping[str, Any], key: str, path: FieldPath) -> bytes:
    """A Go ``[]byte`` field: standard base64 in JSON and YAML (newlines ignored, as Go does)."""
    text = dec.string(d, key, path, "")
    if not text:
        return b""
    try:
        return base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
    except (binascii.Error, ValueError):
        dec.errs.invalid(path.child(key), "<redacted>", "illegal base64 data")
        return b""


def _decode_managed(dec: Decoder, raw: Any, path: FieldPath) -> tuple[ExtenderManagedResource, ...]:
    out = []
    for j, item in enumerate(dec.sequence(raw, path)):
        p = path.index(j)
        d = dec.mapping(item, p, _MANAGED_RESOURCE_FIELDS)
        out.append(
            ExtenderManagedResource(
                name=dec.string(d, "name", p, ""),
                ignored_by_scheduler=dec.boolean(d, "ignoredByScheduler", p, False),
            )
        )
    return tuple(out)


def validate_extenders(extenders: Sequence[ExtenderConfig], path: FieldPath, errs: ErrorList) -> None:
    """Upstream ``validateExtenders``. Upstream does not require ``urlPrefix``; neither do we."""
    binders = 0
    seen: set[str] = set()
    for i, ext in enumerate(extenders):
        p = path.index(i)
        if ext.prioritize_verb and ext.weight <= 0:
            errs.invalid(p.child("weight"), ext.weight, "must have a positive weight applied to it")
        if ext.bind_verb:
            binders += 1
        for j, resource in enumerate(ext.managed_resources):
            name_path = p.child("managedResources").index(j).child("name")
            _validate_extended_resource_name(name_path, resource.name, errs)
            if resource.name in seen:
                errs.invalid(name_path, resource.name, "duplicate extender managed resource name")
            seen.add(resource.name)
    if binders > 1:
        errs.invalid(
            path, f"found {binders} extenders implementing bind", "only one extender can implement bind"
        )


def _validate_extended_resource_name(path: FieldPath, name: str, errs: ErrorList) -> None:
    problem = qualified_name_error(name)
    if problem is not None:
        errs.invalid(path, name, problem)
    elif not is_extended_resource_name(name):
        errs.invalid(path, name, "is an invalid extended resource name")


def ignored_resources(extenders: Sequence[ExtenderConfig]) -> tuple[str, ...]:
    """Managed resources marked ``ignoredByScheduler``: upstream hands them to NodeResourcesFit as
    ``ignoredResources`` in every profile (``buildExtenders``)."""
    return tuple(r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler)


def extenders_to_dict(extenders: Sequence[ExtenderConfig]) -> list[dict[str, Any]]:
    """Back to the file's shape, with ``omitempty`` fields left out as upstream's encoder does."""
    out = []
    for e in extenders:
        d: dict[str, Any] = {"urlPrefix": e.url_prefix}
        for key, value in (
            ("filterVerb", e.filter_verb),
            ("preemptVerb", e.preempt_verb),
            ("prioritizeVerb", e.prioritize_verb),
            ("weight", e.weight),
            ("bindVerb", e.bind_verb),
            ("enableHTTPS", e.enable_https),
        ):
            if value:
                d[key] = value
        if e.tls_config is not None:
            d["tlsConfig"] = _tls_to_dict(e.tls_config)
        d["httpTimeout"] = format_duration(e.http_timeout)
        if e.node_cache_capable:
            d["nodeCacheCapable"] = True
        if e.managed_resources:
            d["managedResources"] = [
                {"name": r.name, **({"ignoredByScheduler": True} if r.ignored_by_scheduler else {})}
                for r in e.managed_resources
            ]
        if e.ignorable:
            d["ignorable"] = True
        out.append(d)
    return out


def _tls_to_dict(t: ExtenderTLSConfig) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for key, value in (
        ("insecure", t.insecure),
        ("serverName", t.server_name),
        ("certFile", t.cert_file),
        ("keyFile", t.key_file),
        ("caFile", t.ca_file),
    ):
        if value:
            d[key] = value
    for key, data in (("certData", t.cert_data), ("keyData", t.key_data), ("caData", t.ca_data)):
        if data:
            d[key] = base64.b64encode(data).decode("ascii")
    return d
