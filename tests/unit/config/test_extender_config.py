"""``extenders[]`` decoding, defaults and validation: upstream ``validateExtenders`` and its cases in
``validation_test.go`` (extenderNegativeWeight, extenderDuplicateManagedResource, extenderDuplicateBind)."""

from __future__ import annotations

import base64
import textwrap

import pytest

from scheduler.config import API_VERSION, KIND, ConfigError, config_to_dict, parse_config
from scheduler.config.types import ExtenderConfig, ExtenderManagedResource, ExtenderTLSConfig
from scheduler.extender.setup import with_ignored_resources

HEADER = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"
# upstream validConfig's extender
VALID = "extenders:\n- prioritizeVerb: prioritize\n  weight: 1\n"


def errors_of(body: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(HEADER + textwrap.dedent(body))
    return list(info.value.errors)


def test_every_field_decodes() -> None:
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()
    cfg = parse_config(
        HEADER
        + textwrap.dedent(f"""\
        extenders:
        - urlPrefix: https://127.0.0.1:8888/scheduler
          filterVerb: filter
          preemptVerb: preempt
          prioritizeVerb: prioritize
          weight: 3
          bindVerb: bind
          enableHTTPS: true
          tlsConfig: {{insecure: false, serverName: ext.local, certFile: /c, keyFile: /k, caFile: /ca,
                       caData: "{ca}"}}
          httpTimeout: 1500ms
          nodeCacheCapable: true
          managedResources:
          - {{name: example.com/foo, ignoredByScheduler: true}}
          - {{name: example.com/bar}}
          ignorable: true
        """)
    )
    assert cfg.extenders == (
        ExtenderConfig(
            url_prefix="https://127.0.0.1:8888/scheduler",
            filter_verb="filter",
            preempt_verb="preempt",
            prioritize_verb="prioritize",
            weight=3,
            bind_verb="bind",
            enable_https=True,
            tls_config=ExtenderTLSConfig(
                server_name="ext.local",
                cert_file="/c",
                key_file="/k",
                ca_file="/ca",
                ca_data=b"-----BEGIN CERTIFICATE-----\n",
            ),
            http_timeout=1.5,
            node_cache_capable=True,
            managed_resources=(
                ExtenderManagedResource("example.com/foo", True),
                ExtenderManagedResource("example.com/bar", False),
            ),
            ignorable=True,
        ),
    )
    # Round trip through the encoder.
    assert parse_config(config_to_dict(cfg)) == cfg


def test_defaults_and_valid_config() -> None:
    (ext,) = parse_config(HEADER + VALID).extenders
    assert ext == ExtenderConfig(prioritize_verb="prioritize", weight=1)
    assert ext.http_timeout == 0.0  # the client applies upstream's 5s DefaultExtenderTimeout
    assert parse_config(HEADER + "extenders: []\n").extenders == ()


def test_negative_weight() -> None:
    assert errors_of("extenders:\n- prioritizeVerb: prioritize\n  weight: -1\n") == [
        "extenders[0].weight: Invalid value: -1: must have a positive weight applied to it"
    ]
    # weight 0 (unset) with a prioritizer is refused as well; without a prioritizer it is fine.
    assert errors_of("extenders:\n- prioritizeVerb: p\n") == [
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"
    ]
    parse_config(HEADER + "extenders:\n- filterVerb: filter\n")


def test_duplicate_managed_resource() -> None:
    body = VALID + "  managedResources: [{name: example.com/foo}, {name: example.com/foo}]\n"
    assert errors_of(body) == [
        'extenders[0].managedResources[1].name: Invalid value: "example.com/foo": '
        "duplicate extender managed resource name"
    ]


def test_duplicate_managed_resource_across_extenders() -> None:
    body = (
        "extenders:\n- filterVerb: f\n  managedResources: [{name: example.com/foo}]\n"
        "- filterVerb: f\n  managedResources: [{name: example.com/foo}]\n"
    )
    assert errors_of(body) == [
        'extenders[1].managedResources[0].name: Invalid value: "example.com/foo": '
        "duplicate extender managed resource name"
    ]


def test_only_one_binder() -> None:
    body = VALID + "  bindVerb: foo\n- prioritizeVerb: prioritize\n  bindVerb: bar\n  weight: 1\n"
    assert errors_of(body) == [
        'extenders: Invalid value: "found 2 extenders implementing bind": '
        "only one extender can implement bind"
    ]


def test_managed_resource_must_be_an_extended_resource_name() -> None:
    assert errors_of(
        "extenders:\n- managedResources: [{name: cpu}, {name: kubernetes.io/x}, {name: 'a/-b'}]\n"
    ) == [
        'extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name',
        'extenders[0].managedResources[1].name: Invalid value: "kubernetes.io/x": '
        "is an invalid extended resource name",
        'extenders[0].managedResources[2].name: Invalid value: "a/-b": '
        "name part must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character",
    ]


def test_strict_fields_and_types() -> None:
    errs = errors_of(
        "extenders:\n- urlPrefix: http://x\n  filterverb: f\n  weight: x\n  httpTimeout: 5\n"
        "  tlsConfig: {caData: '%%%', nope: 1}\n"
    )
    assert sorted(errs) == sorted(
        [
            'unknown field "extenders[0].filterverb"',
            'extenders[0].weight: Invalid value: "x": must be an integer',
            'extenders[0].tlsConfig.caData: Invalid value: "<redacted>": illegal base64 data',
            'unknown field "extenders[0].tlsConfig.nope"',
            'extenders[0].httpTimeout: Invalid value: 5: must be a duration string such as "15s" or "1m30s"',
        ]
    )


def test_ignored_by_scheduler_reaches_node_resources_fit_args() -> None:
    cfg = parse_config(
        HEADER + "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args: {ignoredResources: [example.com/old], scoringStrategy: {type: MostAllocated}}\n"
        "- schedulerName: b\n"
        "extenders:\n- filterVerb: f\n"
        "  managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]\n"
    )
    out = with_ignored_resources(cfg)
    a, b = out.profiles
    assert a.args_for("NodeResourcesFit") == {
        "ignoredResources": ["example.com/gpu"],
        "scoringStrategy": {"type": "MostAllocated"},
    }
    assert b.args_for("NodeResourcesFit") == {"ignoredResources": ["example.com/gpu"]}
    assert with_ignored_resources(parse_config(HEADER + VALID)) == parse_config(HEADER + VALID)
