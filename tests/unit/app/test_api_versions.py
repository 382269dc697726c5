"""Discovery and the version of each kind py-scheduler watches (API servers v1.35 to v1.37)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from informers import InformerFactory
from informers.resource import (
    DEVICE_TAINT_RULES,
    ELASTIC_QUOTAS,
    NODES,
    PODGROUPS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    WORKLOAD_PODGROUPS,
)
from scheduler.app.api_versions import resolve, with_version
from scheduler.cache.informer_listers import InformerListers
from scheduler.client.discovery import ServedApis, discover
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.framework.unsupported import UnsupportedFieldGuard
from scheduler.plugins.registry import IN_TREE_REGISTRY
from tests.unit.plugins.plugin_testlib import pod


class FakeDiscovery:
    """Answers discovery GETs as a kube-apiserver serving ``served`` (group/version -> plurals)."""

    def __init__(self, version: str, served: Mapping[str, list[str]]) -> None:
        self.version = version
        self.served = served
        self.paths: list[str] = []

    def request_json(self, method: str, path: str) -> Mapping[str, Any]:
        assert method == "GET"
        self.paths.append(path)
        if path == "/version":
            return {"gitVersion": self.version}
        if path == "/api":
            return {"versions": ["v1"]}
        if path == "/apis":
            groups: dict[str, list[str]] = {}
            for gv in self.served:
                if "/" in gv:
                    group, version = gv.split("/")
                    groups.setdefault(group, []).append(version)
            return {
                "groups": [
                    {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs]}
                    for g, vs in groups.items()
                ]
            }
        gv = path.removeprefix("/apis/").removeprefix("/api/")
        names = self.served[gv]
        return {"resources": [{"name": n} for n in names] + [{"name": f"{names[0]}/status"}]}


V135 = {
    "v1": ["pods", "nodes"],
    "resource.k8s.io/v1": ["resourceclaims", "resourceslices", "deviceclasses", "resourceclaimtemplates"],
    "resource.k8s.io/v1alpha3": ["devicetaintrules"],
    "scheduling.k8s.io/v1": ["priorityclasses"],
    "scheduling.k8s.io/v1alpha1": ["workloads"],
    "storage.k8s.io/v1": ["csinodes"],
}
V136 = {
    "v1": ["pods", "nodes"],
    "resource.k8s.io/v1beta2": ["resourceclaims", "resourceslices"],
    "scheduling.k8s.io/v1": ["priorityclasses"],
    "scheduling.k8s.io/v1alpha2": ["podgroups", "workloads"],
}


def test_discover_reads_the_server_version_and_the_resources_of_the_wanted_groups_only() -> None:
    fake = FakeDiscovery("v1.35.4", V135)
    apis = discover(fake, {"", "resource.k8s.io"})
    assert apis.server_version == "v1.35.4" and apis.minor == 35
    assert apis.serves("resource.k8s.io", "v1", "resourceclaims")
    assert not apis.serves("resource.k8s.io", "v1", "resourceclaims/status")
    assert apis.serves("", "v1", "pods")
    assert apis.versions_of("resource.k8s.io", "devicetaintrules") == ["v1alpha3"]
    assert not any(p.startswith("/apis/scheduling.k8s.io") for p in fake.paths)


def test_a_kind_served_at_another_readable_version_is_watched_there() -> None:
    apis = discover(FakeDiscovery("v1.36.3", V136), {"", "resource.k8s.io"})
    got = resolve([PODS, NODES, RESOURCE_CLAIMS, RESOURCE_SLICES], apis)
    assert got.refusal is None and got.unserved == set()
    assert got.served == {
        RESOURCE_CLAIMS: with_version(RESOURCE_CLAIMS, "v1beta2"),
        RESOURCE_SLICES: with_version(RESOURCE_SLICES, "v1beta2"),
    }


def test_the_gang_api_not_served_at_v1beta1_refuses_with_one_line_naming_api_and_server() -> None:
    apis = discover(FakeDiscovery("v1.36.3", V136), {"", "scheduling.k8s.io"})
    got = resolve([PODS, WORKLOAD_PODGROUPS], apis)
    assert got.refusal is not None and "\n" not in got.refusal
    assert got.refusal.startswith(
        "the GenericWorkload feature gate (GangScheduling) needs scheduling.k8s.io/v1beta1 podgroups, "
        "which the API server (v1.36.3) does not serve (it serves podgroups only at v1alpha2)"
    )
    v135 = resolve([WORKLOAD_PODGROUPS], discover(FakeDiscovery("v1.35.4", V135), {"scheduling.k8s.io"}))
    assert v135.refusal is not None and "(v1.35.4) does not serve:" in v135.refusal


def test_device_taint_rules_empty_where_no_version_is_served_refused_where_only_alpha_is() -> None:
    none = resolve([DEVICE_TAINT_RULES], discover(FakeDiscovery("v1.36.3", V136), {"resource.k8s.io"}))
    assert none.unserved == {DEVICE_TAINT_RULES} and none.refusal is None
    alpha = resolve([DEVICE_TAINT_RULES], discover(FakeDiscovery("v1.35.4", V135), {"resource.k8s.io"}))
    assert alpha.refusal is not None and "only at v1alpha3" in alpha.refusal


def test_crds_are_left_to_their_own_probe() -> None:
    got = resolve([PODGROUPS, ELASTIC_QUOTAS], ServedApis("v1.37.2", {}))
    assert got.refusal is None and got.unserved == set() and got.served == {}


def test_factory_lists_the_served_version_under_the_callers_spec_and_unserved_listers_read_empty() -> None:
    served = with_version(RESOURCE_CLAIMS, "v1beta2")
    factory = InformerFactory(transport=None, served={RESOURCE_CLAIMS: served})  # type: ignore[arg-type]
    listers = InformerListers()
    claims, rules = listers.lister(RESOURCE_CLAIMS), listers.lister(DEVICE_TAINT_RULES)
    started = listers.start(factory, unserved={DEVICE_TAINT_RULES})
    assert set(started) == {RESOURCE_CLAIMS}
    assert started[RESOURCE_CLAIMS].spec.path() == "/apis/resource.k8s.io/v1beta2/resourceclaims"
    assert factory.informer_for(RESOURCE_CLAIMS) is started[RESOURCE_CLAIMS]
    assert claims.list() == [] and rules.list() == [] and rules.get("r") is None


def test_v135s_gang_field_is_refused_by_name_even_with_every_plugin_registered() -> None:
    """spec.workloadRef (v1.35's v1alpha1 gang API) has no plugin in any build: always refused."""
    guard = UnsupportedFieldGuard(available_plugins=IN_TREE_REGISTRY)
    status = guard.check(PodInfo(pod("p", extra_spec={"workloadRef": {"name": "w", "podGroup": "g"}})))
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == (
        "pod uses workloadRef (the scheduling.k8s.io/v1alpha1 gang API of Kubernetes v1.35), which "
        "py-scheduler does not support yet (GangScheduling on scheduling.k8s.io/v1alpha1)"
    )
