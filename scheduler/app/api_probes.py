"""Start-up probes for APIs a configured feature needs: a CRD or an alpha API the server does not
serve would keep its informer from ever syncing, so start-up fails saying which, instead of hanging."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from informers.resource import PODGROUPS, ResourceSpec

log = logging.getLogger(__name__)

CRD_PROBE_SECONDS = 2.0
MISSING_CRD = (
    "Coscheduling is enabled but the API server does not serve {resource} (the PodGroup CRD is not "
    "installed): apply deploy/components/podgroup-crd, or set podGroup.crd.enabled=true in the Helm chart"
)


async def api_missing(
    api: Any,
    probe_every: float = CRD_PROBE_SECONDS,
    spec: ResourceSpec = PODGROUPS,
    missing: str = MISSING_CRD,
) -> str:
    """Returns (one line) once the API server answers that ``spec`` is not served; never
    returns while it is, or while it cannot tell (unreachable: the informers' own retries go on)."""
    loop = asyncio.get_running_loop()
    path = f"/apis/{spec.api_version}"
    message = missing.format(resource=f"{spec.name}/{spec.version}")
    while True:
        try:
            found = await loop.run_in_executor(None, api.request_json, "GET", path)
        except Exception as err:
            if getattr(err, "status", None) == 404:
                return message
            log.debug("probing %s: %s", path, err)
        else:
            served = {r.get("name") for r in found.get("resources") or [] if isinstance(r, Mapping)}
            if spec.plural in served:
                await asyncio.Event().wait()  # served: nothing to report, ever
            return message
        await asyncio.sleep(probe_every)


# GenericWorkload (GangScheduling) asked for upstream's PodGroups, and the API server does not serve them.
ELASTIC_QUOTA_MISSING = (
    "CapacityScheduling is enabled but the API server does not serve {resource} (the ElasticQuota CRD is "
    "not installed): apply deploy/components/elasticquota-crd, or set elasticQuota.crd.enabled=true in the "
    "Helm chart"
)
NODE_RESOURCE_TOPOLOGY_MISSING = (
    "NodeResourceTopologyMatch is enabled but the API server does not serve {resource} (the "
    "NodeResourceTopology CRD is not installed): apply deploy/components/noderesourcetopology-crd, or set "
    "nodeResourceTopology.crd.enabled=true in the Helm chart"
)
WORKLOAD_API_MISSING = (
    "the GenericWorkload feature gate is on but the API server does not serve {resource}: start "
    "kube-apiserver with --runtime-config=scheduling.k8s.io/v1beta1=true --feature-gates=GenericWorkload=true"
)
