"""Loading, defaulting and round-tripping KubeSchedulerConfiguration files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from scheduler.config import (
    API_VERSION,
    KIND,
    ConfigError,
    PluginConfig,
    PluginRef,
    SchedulerConfig,
    config_to_dict,
    dump_config,
    format_duration,
    load_config,
    parse_config,
    parse_duration,
)

HEADER = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"


def test_defaults_match_upstream_with_our_names() -> None:
    cfg = load_config(None)
    # Upstream SetDefaults_KubeSchedulerConfiguration + RecommendedDefaultLeaderElectionConfiguration.
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score == 0
    assert cfg.pod_initial_backoff_seconds == 1
    assert cfg.pod_max_backoff_seconds == 10
    assert cfg.enable_profiling is True
    assert cfg.enable_contention_profiling is True
    assert cfg.delay_cache_until_active is False
    le = cfg.leader_election
    assert le.leader_elect is True
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (15.0, 10.0, 2.0)
    assert le.resource_lock == "leases"
    assert le.resource_namespace == "kube-system"
    cc = cfg.client_connection
    assert (cc.qps, cc.burst) == (50.0, 100)
    assert cc.kubeconfig == ""
    # Deliberate differences: our own lease and profile name. Upstream's protobuf writes.
    assert le.resource_name == "py-scheduler"
    assert cc.content_type == "application/vnd.kubernetes.protobuf"
    assert [p.scheduler_name for p in cfg.profiles] == ["py-scheduler"]
    assert cfg.profiles[0].percentage_of_nodes_to_score is None
    assert cfg.profiles[0].plugin_config == ()
    assert cfg == SchedulerConfig()


def test_minimal_file_equals_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(HEADER)
    assert load_config(path) == load_config(None)


def test_zero_values_take_defaults_as_upstream() -> None:
    cfg = parse_config(
        HEADER
        + textwrap.dedent("""
        leaderElection: {leaseDuration: 0s, renewDeadline: "0", retryPeriod: 0s, resourceName: ""}
        clientConnection: {qps: 0, burst: 0, contentType: ""}
        profiles: []
        """)
    )
    assert cfg.leader_election.lease_duration == 15.0
    assert cfg.leader_election.renew_deadline == 10.0
    assert cfg.leader_election.retry_period == 2.0
    assert cfg.leader_election.resource_name == "py-scheduler"
    assert (cfg.client_connection.qps, cfg.client_connection.burst) == (50.0, 100)
    assert cfg.scheduler_names == ("py-scheduler",)


def test_contention_profiling_follows_profiling() -> None:
    cfg = parse_config(HEADER + "enableProfiling: false\n")
    assert cfg.enable_profiling is False
    assert cfg.enable_contention_profiling is False
    cfg = parse_config(HEADER + "enableProfiling: false\nenableContentionProfiling: true\n")
    assert cfg.enable_contention_profiling is True


def test_single_unnamed_profile_gets_default_name() -> None:
    cfg = parse_config(HEADER + "profiles:\n- percentageOfNodesToScore: 30\n")
    assert cfg.profiles[0].scheduler_name == "py-scheduler"
    assert cfg.profiles[0].percentage_of_nodes_to_score == 30


def test_json_is_accepted() -> None:
    doc = {"apiVersion": API_VERSION, "kind": KIND, "parallelism": 4, "profiles": [{"schedulerName": "a"}]}
    cfg = parse_config(json.dumps(doc))
    assert cfg.parallelism == 4
    assert cfg.scheduler_names == ("a",)
    assert parse_config(doc) == cfg
    assert parse_config(json.dumps(doc).encode()) == cfg


def test_json_and_protobuf_are_taken_and_other_types_warned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg = parse_config(HEADER + "clientConnection: {contentType: application/vnd.kubernetes.protobuf}\n")
    assert cfg.client_connection.content_type == "application/vnd.kubernetes.protobuf"
    cfg = parse_config(HEADER + "clientConnection: {contentType: application/json}\n")
    assert cfg.client_connection.content_type == "application/json"
    assert caplog.text == ""
    cfg = parse_config(HEADER + "clientConnection: {contentType: application/yaml}\n")
    assert cfg.client_connection.content_type == "application/yaml"
    assert "application/yaml is accepted but py-scheduler writes JSON with it" in caplog.text


FULL = f"""\
apiVersion: {API_VERSION}
kind: {KIND}
parallelism: 8
leaderElection:
  leaderElect: true
  leaseDuration: 1m30s
  renewDeadline: 1m0s
  retryPeriod: 5s
  resourceLock: leases
  resourceName: py-scheduler-prod
  resourceNamespace: scheduling
clientConnection:
  kubeconfig: /etc/py-scheduler/kubeconfig
  acceptContentTypes: application/json
  contentType: application/json
  qps: 75.5
  burst: 150
enableProfiling: false
enableContentionProfiling: false
percentageOfNodesToScore: 40
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 30
delayCacheUntilActive: true
extenders: []
profiles:
- schedulerName: py-scheduler
  percentageOfNodesToScore: 50
  plugins:
    multiPoint:
      enabled:
      - name: NodeAffinity
        weight: 5
      disabled:
      - name: ImageLocality
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 3
    filter:
      disabled:
      - name: "*"
      enabled:
      - name: NodeName
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: {API_VERSION}
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
  - name: DefaultPreemption
    args:
      minCandidateNodesPercentage: 20
- schedulerName: py-scheduler-binpack
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
"""


def test_full_config_decodes_every_field() -> None:
    cfg = parse_config(FULL)
    assert cfg.parallelism == 8
    le = cfg.leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (90.0, 60.0, 5.0)
    assert (le.resource_name, le.resource_namespace) == ("py-scheduler-prod", "scheduling")
    cc = cfg.client_connection
    assert (cc.kubeconfig, cc.accept_content_types, cc.qps, cc.burst) == (
        "/etc/py-scheduler/kubeconfig",
        "application/json",
        75.5,
        150,
    )
    assert (cfg.enable_profiling, cfg.enable_contention_profiling) == (False, False)
    assert (
        cfg.percentage_of_nodes_to_score,
        cfg.pod_initial_backoff_seconds,
        cfg.pod_max_backoff_seconds,
    ) == (
        40,
        2,
        30,
    )
    assert cfg.delay_cache_until_active is True
    assert cfg.scheduler_names == ("py-scheduler", "py-scheduler-binpack")
    p0 = cfg.profiles[0]
    assert p0.percentage_of_nodes_to_score == 50
    assert p0.plugins["multiPoint"].enabled == (PluginRef("NodeAffinity", 5),)
    assert p0.plugins["multiPoint"].disabled == ("ImageLocality",)
    assert p0.plugins["filter"].disabled == ("*",)
    assert p0.plugins["reserve"].enabled == ()
    # apiVersion/kind of typed args are checked and dropped; the rest is the plugin's business.
    assert p0.plugin_config[0] == PluginConfig(
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}},
    )
    assert p0.args_for("DefaultPreemption") == {"minCandidateNodesPercentage": 20}
    assert p0.args_for("Nope") is None
    assert cfg.plugin_names() == {"NodeAffinity", "NodeResourcesFit", "NodeName", "DefaultPreemption"}


def test_full_config_round_trips() -> None:
    cfg = parse_config(FULL)
    written = config_to_dict(cfg)
    expected = yaml.safe_load(FULL)
    del expected["extenders"]
    for pc in expected["profiles"][0]["pluginConfig"]:
        pc["args"].pop("apiVersion", None)
        pc["args"].pop("kind", None)
    assert written == expected
    assert parse_config(dump_config(cfg)) == cfg
    assert parse_config(written) == cfg


def test_defaults_round_trip() -> None:
    cfg = load_config(None)
    assert parse_config(dump_config(cfg)) == cfg
    assert config_to_dict(cfg)["leaderElection"]["leaseDuration"] == "15s"


@pytest.mark.parametrize(
    ("text", "seconds", "canonical"),
    [
        ("15s", 15.0, "15s"),
        ("1m30s", 90.0, "1m30s"),
        ("100ms", 0.1, "100ms"),
        ("1h", 3600.0, "1h0m0s"),
        ("1.5s", 1.5, "1.5s"),
        ("2h45m", 9900.0, "2h45m0s"),
        ("300us", 0.0003, "300\u00b5s"),
        ("0", 0.0, "0s"),
        ("-2s", -2.0, "-2s"),
        ("2562047h", 2562047 * 3600.0, "2562047h0m0s"),  # near Go's int64-nanosecond limit
    ],
)
def test_go_durations(text: str, seconds: float, canonical: str) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert format_duration(parse_duration(text)) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("15", "missing unit"),
        ("abc", "invalid"),
        ("3x", 'unknown unit "x"'),
        # Past int64 nanoseconds, as Go's ParseDuration.
        ("2562048h", "invalid duration"),
        ("9223372036854775808ns", "invalid duration"),
        ("2562047h47m16.854775808s", "invalid duration"),
    ],
)
def test_bad_durations(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_duration(text)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "nope.yaml")


def test_empty_and_multi_document_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="empty"):
        parse_config("")
    with pytest.raises(ConfigError, match="found 2"):
        parse_config(HEADER + "---\n" + HEADER)
    with pytest.raises(ConfigError, match="invalid YAML"):
        parse_config("a: [")
    path = tmp_path / "c.yaml"
    path.write_text("- 1\n")
    with pytest.raises(ConfigError, match=f"{path}: config must be a {KIND} object"):
        load_config(path)


# What kube-scheduler v1.3x logs as "Using component config" / writes with --write-config-to
# (abridged): sorted keys, protobuf, ``weight: 0`` for unweighted plugins, typed plugin args.
UPSTREAM_DUMP = f"""\
apiVersion: {API_VERSION}
clientConnection:
  acceptContentTypes: ""
  burst: 100
  contentType: application/vnd.kubernetes.protobuf
  kubeconfig: /etc/kubernetes/scheduler.conf
  qps: 50
enableContentionProfiling: true
enableProfiling: true
kind: {KIND}
leaderElection:
  leaderElect: true
  leaseDuration: 15s
  renewDeadline: 10s
  resourceLock: leases
  resourceName: kube-scheduler
  resourceNamespace: kube-system
  retryPeriod: 2s
parallelism: 16
percentageOfNodesToScore: 0
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
- pluginConfig:
  - args:
      apiVersion: {API_VERSION}
      kind: DefaultPreemptionArgs
      minCandidateNodesAbsolute: 100
      minCandidateNodesPercentage: 10
    name: DefaultPreemption
  - args:
      apiVersion: {API_VERSION}
      hardPodAffinityWeight: 1
      ignorePreferredTermsOfExistingPods: false
      kind: InterPodAffinityArgs
    name: InterPodAffinity
  plugins:
    bind: {{}}
    filter: {{}}
    multiPoint:
      enabled:
      - name: SchedulingGates
        weight: 0
      - name: PrioritySort
        weight: 0
      - name: TaintToleration
        weight: 3
      - name: NodeAffinity
        weight: 2
      - name: DefaultBinder
        weight: 0
    permit: {{}}
    postBind: {{}}
    postFilter: {{}}
    preBind: {{}}
    preEnqueue: {{}}
    preFilter: {{}}
    preScore: {{}}
    queueSort: {{}}
    reserve: {{}}
    score: {{}}
  schedulerName: default-scheduler
"""


def test_upstream_dump_loads() -> None:
    cfg = parse_config(UPSTREAM_DUMP)
    assert cfg.scheduler_names == ("default-scheduler",)
    assert cfg.leader_election.resource_name == "kube-scheduler"
    multi = cfg.profiles[0].plugins["multiPoint"].enabled
    assert multi[0] == PluginRef("SchedulingGates", 0)
    assert cfg.profiles[0].args_for("InterPodAffinity") == {
        "hardPodAffinityWeight": 1,
        "ignorePreferredTermsOfExistingPods": False,
    }
