"""Storage helpers shared by the volume plugins.

Mirrors ``k8s.io/component-helpers/storage/volume`` (``helpers.go``, ``pv_helpers.go``) and
``k8s.io/component-helpers/storage/ephemeral``. Objects are the raw JSON dicts of the watch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cachetools import LRUCache

from informers.objects import resource_version
from scheduler.framework.objects import (
    annotations_of,
    labels_of,
    name_of,
    namespaced_name,
    object_meta,
    spec_of,
)
from scheduler.framework.objects_storage import (
    pv_claim_ref,
    pv_node_affinity,
    pv_status,
    pvc_storage_requests,
)
from scheduler.framework.quantity import QuantityError, value
from scheduler.util.labelselector import parse_label_selector
from scheduler.util.nodeselector import NodeSelector, SelectorError, parse_node_selector

KubeObject = Mapping[str, Any]

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


# The volume plugins' short names for the framework's accessors (annotations_of, name_of and
# namespaced_name are imported from it above and used from here by those plugins as well).
meta = object_meta


# The ``spec`` of any object these helpers read (pod, PV, PVC, CSINode, CSIDriver), untyped; the typed
# views are ``pv_spec``/``pvc_spec``... of ``scheduler.framework.objects_storage``.
spec = spec_of


def claim_name(pod_name: str, volume: Mapping[str, Any]) -> tuple[str, bool] | None:
    """The PVC a pod volume uses and whether it is ephemeral, or None for other volume kinds."""
    pvc = volume.get("persistentVolumeClaim")
    if pvc is not None:
        return str(pvc.get("claimName") or ""), False
    if volume.get("ephemeral") is not None:
        # ephemeral.VolumeClaimName: the generic ephemeral volume controller names the claim so.
        return f"{pod_name}-{volume.get('name', '')}", True
    return None


def volume_is_for_pod(pod: KubeObject, pvc: KubeObject) -> str | None:
    """``ephemeral.VolumeIsForPod``: why the claim was not created for this pod, or None."""
    pod_meta, pvc_meta = meta(pod), meta(pvc)
    controller = next(
        (ref for ref in pvc_meta.get("ownerReferences") or () if ref.get("controller")),
        None,
    )
    owned = controller is not None and controller.get("uid") == pod_meta.get("uid")
    if pvc_meta.get("namespace") != pod_meta.get("namespace") or not owned:
        return (
            f"PVC {pvc_meta.get('namespace', '')}/{pvc_meta.get('name', '')} was not created for pod "
            f"{pod_meta.get('namespace', '')}/{pod_meta.get('name', '')} (pod is not owner)"
        )
    return None


def claim_class(pvc: KubeObject) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation wins over ``spec.storageClassName``."""
    anns = annotations_of(pvc)
    if BETA_STORAGE_CLASS_ANNOTATION in anns:
        return anns[BETA_STORAGE_CLASS_ANNOTATION]
    return str(spec(pvc).get("storageClassName") or "")


def volume_class(pv: KubeObject) -> str:
    """``GetPersistentVolumeClass``."""
    anns = annotations_of(pv)
    if BETA_STORAGE_CLASS_ANNOTATION in anns:
        return anns[BETA_STORAGE_CLASS_ANNOTATION]
    return str(spec(pv).get("storageClassName") or "")


def _storage(resources: Mapping[str, Any] | None) -> int:
    raw = resources.get("storage") if resources else None
    if raw is None:
        return 0
    try:
        return value(raw)
    except QuantityError:
        return 0


def claim_request(pvc: KubeObject) -> int:
    """The claim's requested storage in bytes (0 when absent)."""
    return _storage(pvc_storage_requests(pvc))


def claim_has_request(pvc: KubeObject) -> bool:
    return "storage" in pvc_storage_requests(pvc)


def volume_capacity(pv: KubeObject) -> int:
    return _storage(spec(pv).get("capacity"))


def is_claim_fully_bound(pvc: KubeObject) -> bool:
    """``isPVCFullyBound``: the PV controller finished binding (volumeName and bind-completed)."""
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def is_volume_bound_to_claim(pv: KubeObject, pvc: KubeObject) -> bool:
    ref = spec(pv).get("claimRef")
    if not ref:
        return False
    pvc_meta = meta(pvc)
    if ref.get("name") != pvc_meta.get("name") or ref.get("namespace", "") != pvc_meta.get("namespace", ""):
        return False
    return not ref.get("uid") or ref.get("uid") == pvc_meta.get("uid")


# A PV's node affinity is parsed once per PV version, not once per node per cycle.
_AFFINITIES: LRUCache[tuple[str, str], NodeSelector | None] = LRUCache(maxsize=16384)


def _pv_node_selector(pv: KubeObject) -> NodeSelector | None:
    key = (str(meta(pv).get("uid") or name_of(pv)), resource_version(pv))
    try:
        return _AFFINITIES[key]
    except KeyError:
        pass
    required = pv_node_affinity(pv).get("required")
    selector = None if required is None else parse_node_selector(required, "nodeAffinity.required", lazy=True)
    if key[1]:
        _AFFINITIES[key] = selector
    return selector


def check_node_affinity(pv: KubeObject, node_labels: Mapping[str, str]) -> str | None:
    """``CheckNodeAffinity``: why the PV's required node affinity rejects the labels, or None.

    Like upstream, the node is labels only: ``matchFields`` on ``metadata.name`` never matches.
    """
    try:
        selector = _pv_node_selector(pv)
    except SelectorError as err:
        return str(err)
    if selector is None:
        return None
    matched, error = selector.match(node_labels, "")
    if matched:
        return None
    return error or "no matching NodeSelectorTerms"


def _volume_mode(s: Mapping[str, Any]) -> str:
    return str(s.get("volumeMode") or "Filesystem")


def check_access_modes(pvc: KubeObject, pv: KubeObject) -> bool:
    """Every access mode the claim asks for is offered by the volume."""
    offered = set(spec(pv).get("accessModes") or ())
    return all(mode in offered for mode in spec(pvc).get("accessModes") or ())


class MatchError(ValueError):
    """A claim that cannot be matched at all (a bad selector, an unsupported attributes class)."""


def find_matching_volume(
    pvc: KubeObject,
    volumes: Iterable[KubeObject],
    node_labels: Mapping[str, str] | None,
    excluded: Mapping[str, Any],
    *,
    delay_binding: bool,
) -> KubeObject | None:
    """``FindMatchingVolume``: the PV pre-bound to the claim, else the smallest available fit.

    Fit means: capacity, volume mode, storage class, selector, deletion, node affinity (when a node is
    given) and access modes. VolumeAttributesClass is GA in v1.36: classes must be equal.
    """
    pvc_spec = spec(pvc)
    requested = claim_request(pvc)
    requested_class = claim_class(pvc)
    selector = None
    if pvc_spec.get("selector") is not None:
        try:
            selector = parse_label_selector(pvc_spec["selector"], "spec.selector")
        except SelectorError as err:
            raise MatchError(
                f"error creating internal label selector for claim: {namespaced_name(pvc)}: {err}"
            ) from err
    claim_vac = pvc_spec.get("volumeAttributesClassName") or ""
    smallest: KubeObject | None = None
    smallest_size = 0
    for pv in volumes:
        pv_name = name_of(pv)
        if pv_name in excluded:
            continue
        pv_spec = spec(pv)
        bound_to_claim = is_volume_bound_to_claim(pv, pvc)
        if pv_spec.get("claimRef") and not bound_to_claim:
            continue
        size = volume_capacity(pv)
        if size < requested:
            continue
        if _volume_mode(pvc_spec) != _volume_mode(pv_spec):
            continue
        if (pv_spec.get("volumeAttributesClassName") or "") != claim_vac:
            continue
        if meta(pv).get("deletionTimestamp"):
            continue
        affinity_ok = node_labels is None or check_node_affinity(pv, node_labels) is None
        if bound_to_claim:
            # A PV pre-bound to the claim is the only candidate: it fits here or nowhere.
            return pv if affinity_ok else None
        if node_labels is None and delay_binding:
            continue
        if pv_status(pv).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(labels_of(pv)):
            continue
        if volume_class(pv) != requested_class:
            continue
        if not affinity_ok:
            continue
        if node_labels is not None and not check_access_modes(pvc, pv):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = pv, size
    return smallest


def match_topology_selector_terms(terms: Any, labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no terms match everything; terms OR, expressions AND."""
    if not terms:
        return True
    for term in terms:
        expressions = (term.get("matchLabelExpressions") if term else None) or ()
        if all(labels.get(e.get("key", "")) in (e.get("values") or ()) for e in expressions):
            return True
    return False


def claim_ref(pvc: KubeObject) -> dict[str, Any]:
    """``reference.GetReference`` of a claim: what a PV's ``claimRef`` holds once bound."""
    m = meta(pvc)
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": m.get("namespace", ""),
        "name": m.get("name", ""),
        "uid": m.get("uid", ""),
        "apiVersion": "v1",
        "resourceVersion": m.get("resourceVersion", ""),
    }


def bind_volume_to_claim(pv: KubeObject, pvc: KubeObject) -> tuple[dict[str, Any], bool]:
    """``GetBindVolumeToClaim``: a copy of the PV bound to the claim, and whether anything changed."""
    should_set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    clone: dict[str, Any] = {**pv, "metadata": dict(meta(pv)), "spec": dict(spec(pv))}
    dirty = False
    ref = pv_claim_ref(pv)
    pvc_meta = meta(pvc)
    if (
        not ref
        or ref.get("name") != pvc_meta.get("name")
        or ref.get("namespace") != pvc_meta.get("namespace")
        or ref.get("uid") != pvc_meta.get("uid")
    ):
        clone["spec"]["claimRef"] = claim_ref(pvc)
        dirty = True
    if should_set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations_of(pv):
        clone["metadata"]["annotations"] = {**annotations_of(pv), ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    return clone, dirty


def with_selected_node(pvc: KubeObject, node_name: str) -> dict[str, Any]:
    """A copy of the claim annotated with the node chosen for provisioning."""
    return {
        **pvc,
        "metadata": {**meta(pvc), "annotations": {**annotations_of(pvc), ANN_SELECTED_NODE: node_name}},
    }


def is_delay_binding_class(storage_class: KubeObject | None) -> bool:
    return storage_class is not None and storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
