"""Configs kube-scheduler v1.36.3 accepts are accepted; configs it refuses are refused (issue 11).

``CASES`` records the real binary's verdict (``kube-scheduler --config FILE``); the integration test
``tests/integration/test_config_oracle.py`` re-checks every row against that binary. Deliberate
differences (docs/configuration.md, scheduler/config/README.md) are not in the table.
"""

from __future__ import annotations

import pytest

from scheduler.config import ConfigError, parse_config
from scheduler.plugins.registry import IN_TREE_REGISTRY

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
ACCEPT, REFUSE = True, False


def score(weight: object, point: str = "score", name: str = "NodeResourcesFit") -> str:
    entry = f"{{name: {name}, weight: {weight}}}"
    return f"profiles:\n- schedulerName: x\n  plugins:\n    {point}:\n      enabled: [{entry}]\n"


# name -> (body after the header, kube-scheduler's verdict, whether it refuses at once).
# kube-scheduler checks renewDeadline against retryPeriod*1.2 only when it builds the leader elector,
# after its informers sync (~40 s without an API server); we refuse it at load time.
CASES: dict[str, tuple[str, bool, bool]] = {
    "score weight 0": (score(0), ACCEPT, True),
    "score weight 1000": (score(1000), ACCEPT, True),
    "score weight int32 max": (score(2147483647), ACCEPT, True),
    "score weight past int32": (score(2147483648), REFUSE, True),
    "score weight negative": (score(-1), REFUSE, True),
    "score weight string": (score("'2'"), REFUSE, True),
    "multiPoint weight 0": (score(0, "multiPoint"), ACCEPT, True),
    "multiPoint weight 500": (score(500, "multiPoint"), ACCEPT, True),
    "weight on a disabled entry": (
        "profiles:\n- schedulerName: x\n  plugins:\n    score:\n"
        "      disabled: [{name: ImageLocality, weight: 3}]\n",
        ACCEPT,
        True,
    ),
    "parallelism 0": ("parallelism: 0\n", REFUSE, True),
    "parallelism past int32": ("parallelism: 2147483648\n", REFUSE, True),
    "parallelism 16.0": ("parallelism: 16.0\n", ACCEPT, True),
    "parallelism 16.5": ("parallelism: 16.5\n", REFUSE, True),
    "parallelism string": ("parallelism: '16'\n", REFUSE, True),
    "parallelism null": ("parallelism: null\n", ACCEPT, True),
    "percentageOfNodesToScore 101": ("percentageOfNodesToScore: 101\n", REFUSE, True),
    "percentageOfNodesToScore -1": ("percentageOfNodesToScore: -1\n", REFUSE, True),
    "backoff 0": ("podInitialBackoffSeconds: 0\n", REFUSE, True),
    "backoff max < initial": ("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n", REFUSE, True),
    "backoff past int32 (int64)": (
        "podInitialBackoffSeconds: 3000000000\npodMaxBackoffSeconds: 3000000000\n",
        ACCEPT,
        True,
    ),
    "leaseDuration 0s is defaulted": ("leaderElection: {leaseDuration: 0s}\n", ACCEPT, True),
    "renewDeadline >= leaseDuration": (
        "leaderElection: {leaseDuration: 10s, renewDeadline: 10s}\n",
        REFUSE,
        True,
    ),
    "renewDeadline <= 1.2 retryPeriod": (
        "leaderElection: {renewDeadline: 2s, retryPeriod: 2s}\n",
        REFUSE,
        False,
    ),
    "bad durations, election off": (
        "leaderElection: {leaderElect: false, leaseDuration: 1s, renewDeadline: 5s}\n",
        ACCEPT,
        True,
    ),
    "resourceLock endpoints": ("leaderElection: {resourceLock: endpoints}\n", REFUSE, True),
    "duration as a number": ("leaderElection: {leaseDuration: 15}\n", REFUSE, True),
    "unknown field": ("parallelizm: 4\n", REFUSE, True),
    # v1.37.2's Plugins has podGroupPostFilter (empty: accepted), and no placementFeasible.
    "empty podGroupPostFilter": (
        "profiles:\n- schedulerName: x\n  plugins:\n    podGroupPostFilter: {}\n",
        ACCEPT,
        True,
    ),
    "placementFeasible is no field": (
        "profiles:\n- schedulerName: x\n  plugins:\n    placementFeasible: {}\n",
        REFUSE,
        True,
    ),
    "field in the wrong case": ("Parallelism: 4\n", REFUSE, True),
    "duplicate key": ("parallelism: 4\nparallelism: 5\n", REFUSE, True),
    "enableProfiling string": ("enableProfiling: 'yes'\n", REFUSE, True),
    "burst -1": ("clientConnection: {burst: -1}\n", REFUSE, True),
    "qps -1": ("clientConnection: {qps: -1}\n", ACCEPT, True),
    "qps 0.5": ("clientConnection: {qps: 0.5}\n", ACCEPT, True),
    "contentType protobuf": (
        "clientConnection: {contentType: application/vnd.kubernetes.protobuf}\n",
        ACCEPT,
        True,
    ),
    "delayCacheUntilActive": ("delayCacheUntilActive: true\n", ACCEPT, True),
    "empty profiles": ("profiles: []\n", ACCEPT, True),
    "two unnamed profiles": ("profiles: [{}, {}]\n", REFUSE, True),
    "empty schedulerName": ("profiles: [{schedulerName: ''}]\n", REFUSE, True),
    "disabled unknown plugin": (
        "profiles:\n- schedulerName: x\n  plugins:\n    score:\n      disabled: [{name: Nope}]\n",
        ACCEPT,
        True,
    ),
    "enabled unknown plugin": (score(1, name="Nope"), REFUSE, True),
    "pluginConfig for an unknown plugin": (
        "profiles:\n- schedulerName: x\n  pluginConfig: [{name: Nope, args: {}}]\n",
        ACCEPT,
        True,
    ),
    # StorageCapacityScoring is beta and on since v1.37: kube-scheduler accepts VolumeBindingArgs.shape
    # (its validation, like every plugin's args, is py-scheduler's at framework build, not here).
    "VolumeBinding shape": (
        "profiles:\n- schedulerName: x\n  pluginConfig:\n  - name: VolumeBinding\n"
        "    args: {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}\n",
        ACCEPT,
        True,
    ),
    "pluginConfig duplicate": (
        "profiles:\n- schedulerName: x\n  pluginConfig: [{name: NodeAffinity}, {name: NodeAffinity}]\n",
        REFUSE,
        True,
    ),
    "args kind mismatch": (
        "profiles:\n- schedulerName: x\n"
        "  pluginConfig: [{name: NodeAffinity, args: {kind: InterPodAffinityArgs}}]\n",
        REFUSE,
        True,
    ),
    "removed plugin": (
        "profiles:\n- schedulerName: x\n  plugins:\n    filter:\n      enabled: [{name: EBSLimits}]\n",
        REFUSE,
        True,
    ),
    "two queueSort plugins": (
        "profiles:\n- schedulerName: x\n  plugins:\n    queueSort:\n"
        "      enabled: [{name: PrioritySort}, {name: PrioritySort}]\n",
        REFUSE,
        True,
    ),
}


def accepted(body: str) -> bool:
    try:
        parse_config(HEADER + body, registry=IN_TREE_REGISTRY)
    except ConfigError:
        return False
    return True


@pytest.mark.parametrize("name", list(CASES))
def test_verdict_matches_kube_scheduler(name: str) -> None:
    body, upstream, _ = CASES[name]
    assert accepted(body) is upstream


def test_a_wrong_typed_value_is_echoed_bounded() -> None:
    """Issue 11: a whole list where a number belongs was echoed into the error in full."""
    huge = "[" + ", ".join(str(i) for i in range(100_000)) + "]"
    with pytest.raises(ConfigError) as info:
        parse_config(
            HEADER + f"parallelism: {huge}\nprofiles: [{{schedulerName: {'x' * 5000}, plugins: 7}}]\n"
        )
    message = str(info.value)
    assert "parallelism: Invalid value: [0,1,2," in message
    assert "more characters)" in message
    assert len(message) < 1500
