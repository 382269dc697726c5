"""``py-scheduler explain | simulate | snapshot`` (also ``kubectl py-scheduler ...`` via the
``kubectl-py_scheduler`` entry point)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import urllib3

from scheduler.client.kubeclient import KubeconfigError, RestClient, load_configuration
from scheduler.config import ConfigError, load_config_with_plugins
from scheduler.explain.manifests import (
    DUMP_KIND,
    SNAPSHOT_KINDS,
    ManifestError,
    expand_pods,
    load_documents,
    load_dump,
)
from scheduler.explain.render import render_pod
from scheduler.explain.scenario import ScenarioError, run_scenario
from scheduler.explain.simulate import Placement, Simulation
from scheduler.framework.objects import list_continue
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduler.serving.authn import FORWARDED_AUTHORIZATION

SUBCOMMANDS = ("explain", "simulate", "snapshot")
# Where deploy/ runs the scheduler: the Service in front of /metrics and /debug.
DEFAULT_SERVICE_NAMESPACE = "py-scheduler"
DEFAULT_SERVICE = "py-scheduler-metrics"
DEFAULT_SERVICE_PORT = "metrics"
# The scheduler serves HTTPS (scheduler/serving): the API server's service proxy needs the scheme.
DEFAULT_SCHEME = "https"
# The Service has both replicas as endpoints and the proxy picks one per request; only the leader has
# records, so a standby's 503 means "ask again".
LEADER_TRIES = 8


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="py-scheduler", description="Explain and simulate scheduling.")
    sub = parser.add_subparsers(dest="command", required=True)

    explain = sub.add_parser("explain", help="why a pod is pending, or why it went where it did")
    explain.add_argument("pod", help="NAMESPACE/NAME (or NAME with -n)")
    explain.add_argument("-n", "--namespace", default="default")
    explain.add_argument("--kubeconfig", help="default: in-cluster, then ~/.kube/config")
    explain.add_argument("--service-namespace", default=DEFAULT_SERVICE_NAMESPACE)
    explain.add_argument("--service", default=DEFAULT_SERVICE)
    explain.add_argument("--service-port", default=DEFAULT_SERVICE_PORT, help="port name or number")
    explain.add_argument(
        "--scheme", default=DEFAULT_SCHEME, choices=("", "http", "https"), help="the Service port's scheme"
    )
    explain.add_argument(
        "--endpoint",
        help="talk to the scheduler directly (e.g. https://127.0.0.1:10259 after kubectl port-forward), "
        "with your kubeconfig's token or client certificate",
    )
    explain.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="with --endpoint: do not verify the scheduler's (by default self-signed) certificate",
    )
    explain.add_argument(
        "--certificate-authority", help="with --endpoint: the CA of the scheduler's certificate"
    )
    explain.add_argument("--attempts", type=int, default=1, help="how many recent attempts to show")
    explain.add_argument("-o", "--output", choices=("table", "json"), default="table")

    simulate = sub.add_parser("simulate", help="place pods on a snapshot with a configuration; read-only")
    simulate.add_argument("--config", help="KubeSchedulerConfiguration (default: the built-in defaults)")
    source = simulate.add_mutually_exclusive_group()
    source.add_argument("--kubeconfig", help="read nodes and pods from this live cluster (never written)")
    source.add_argument("--cluster", help="a snapshot file (py-scheduler snapshot) or any node/pod manifests")
    simulate.add_argument("--pods", help="Pod, Deployment, StatefulSet, ReplicaSet or Job manifests to place")
    simulate.add_argument("--compare", help="a second configuration to run on the same snapshot")
    simulate.add_argument(
        "--scenario", help="a scenario file of steps and expectations (see examples/scenarios)"
    )
    simulate.add_argument("--seed", type=int, default=1, help="tie-breaking seed")
    simulate.add_argument("-o", "--output", choices=("table", "json"), default="table")

    snapshot = sub.add_parser("snapshot", help="write a live cluster's nodes, pods and related objects")
    snapshot.add_argument("--kubeconfig")
    snapshot.add_argument("-f", "--file", required=True, help="output file (JSON)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "explain":
            return explain(args)
        if args.command == "snapshot":
            return snapshot(args)
        if args.scenario:
            return scenario(args)
        return simulate(args)
    except (
        ConfigError,
        KubeconfigError,
        ManifestError,
        ScenarioError,
        OSError,
        urllib3.exceptions.HTTPError,
    ) as err:
        print(f"py-scheduler {args.command}: {err}", file=sys.stderr)
        return 2


def kubectl_plugin() -> int:
    """``kubectl py-scheduler explain ns/pod`` runs ``kubectl-py_scheduler explain ns/pod``."""
    return main(sys.argv[1:])


# --- explain ------------------------------------------------------------------------------------------


def proxy_path(service_namespace: str, service: str, port: str, pod_key: str, scheme: str = "") -> str:
    """The API server's service-proxy path to the scheduler's /debug/pods/<namespace>/<name>."""
    namespace, _, name = pod_key.partition("/")
    target = f"{scheme}:{service}:{port}" if scheme else f"{service}:{port}"
    return (
        f"/api/v1/namespaces/{quote(service_namespace, safe='')}/services/{quote(target, safe=':')}"
        f"/proxy/debug/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"
    )


def explain(args: argparse.Namespace) -> int:
    key = args.pod if "/" in args.pod else f"{args.namespace}/{args.pod}"
    status, body = _fetch_direct(args, key) if args.endpoint else _fetch_via_proxy(args, key)
    try:
        loaded: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        loaded = {"error": body.decode(errors="replace").strip()}
    doc: dict[str, Any] = (
        loaded if isinstance(loaded, dict) else {"error": f"unexpected answer: {body[:100]!r}"}
    )
    if status != 200:
        print(f"py-scheduler explain {key}: {refusal(status, doc, args)}", file=sys.stderr)
        return 1
    if args.output == "json":
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_pod(doc, attempts=args.attempts))
    return 0


def refusal(status: int, doc: dict[str, Any], args: argparse.Namespace) -> str:
    """One line for an answer that is not the record; for a refusal, the permission that is missing."""
    message = str(doc.get("message") or doc.get("error") or f"HTTP {status}")
    if status == 401:
        return f"the scheduler did not accept your credentials ({message})"
    if status != 403:
        return message
    details = doc.get("details") or {}
    if details.get("kind") == "services" or "services/proxy" in message:
        # The API server refused the proxy request itself.
        target = f"{args.scheme}:{args.service}:{args.service_port}" if args.scheme else args.service
        return (
            f"missing permission: get services/proxy on {target} in namespace {args.service_namespace} "
            f"(bind the ClusterRole py-scheduler:explain); the API server said: {message}"
        )
    path = (
        message.rpartition(' path "')[2].rstrip('"').split('"')[0]
        if ' path "' in message
        else "/debug/pods/..."
    )
    return (
        f"missing permission: get on the non-resource URL {path} (bind the ClusterRole py-scheduler:explain "
        f"with a ClusterRoleBinding, or grant /debug/pods/<namespace>/*); the scheduler said: {message}"
    )


def _fetch_direct(args: argparse.Namespace, key: str) -> tuple[int, bytes]:
    """Straight to the scheduler's HTTPS port with your own credentials: your kubeconfig's bearer token
    or client certificate (the scheduler checks them with a TokenReview or against the client CA)."""
    namespace, _, name = key.partition("/")
    url = f"{args.endpoint.rstrip('/')}/debug/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"
    headers: dict[str, str] = {}
    kwargs: dict[str, Any] = {}
    if url.startswith("https:"):
        configuration = load_configuration(args.kubeconfig)
        credential = RestClient(configuration).credentials.current()
        if credential.authorization:
            headers["Authorization"] = credential.authorization
        # An exec plugin's certificate pair, else the kubeconfig's own.
        cert = credential.cert or (
            (configuration.cert_file, configuration.key_file) if configuration.cert_file else None
        )
        if cert:
            kwargs["cert_file"], kwargs["key_file"] = cert
        if args.insecure_skip_tls_verify:
            kwargs["cert_reqs"] = "CERT_NONE"
            # Asked for by name; urllib3's multi-line warning would bury the one-line answer.
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        elif args.certificate_authority:
            kwargs["ca_certs"] = args.certificate_authority
    pool = urllib3.PoolManager(**kwargs)
    response = pool.request("GET", url, headers=headers, timeout=10.0, retries=False)
    return response.status, response.data


def _fetch_via_proxy(args: argparse.Namespace, key: str) -> tuple[int, bytes]:
    """Through the API server's service proxy. The API server consumes your Authorization header (it
    never reaches the backend), so your bearer token rides in FORWARDED_AUTHORIZATION and the scheduler
    reviews it like any token: its checks apply to you, not to the API server."""
    rest = RestClient(load_configuration(args.kubeconfig), qps=20, burst=LEADER_TRIES)
    path = proxy_path(args.service_namespace, args.service, args.service_port, key, args.scheme)
    try:
        authorization = rest.credentials.current().authorization
        if not authorization or not authorization.lower().startswith("bearer "):
            raise OSError(
                "your kubeconfig's user has no bearer token (a client certificate?), which the API server "
                "proxy cannot pass on to the scheduler: kubectl port-forward -n py-scheduler "
                "svc/py-scheduler-metrics 10259, then add --endpoint https://127.0.0.1:10259 "
                "--insecure-skip-tls-verify"
            )
        forwarded = {FORWARDED_AUTHORIZATION: authorization}
        status, body = 0, b""
        for _ in range(LEADER_TRIES):
            status, body = rest.request("GET", path, timeout=10.0, headers=forwarded)
            if status != 503 or b'"leader":false' not in body:
                break
        return status, body
    finally:
        rest.close()


# --- snapshot -----------------------------------------------------------------------------------------


def list_cluster(kubeconfig: str | None) -> dict[str, list[dict[str, Any]]]:
    """Every object of SNAPSHOT_KINDS, by GET only. A kind this user may not list is left out."""
    rest = RestClient(load_configuration(kubeconfig), qps=50, burst=50)
    out: dict[str, list[dict[str, Any]]] = {}
    try:
        for spec in SNAPSHOT_KINDS:
            items: list[dict[str, Any]] = []
            token = ""
            while True:
                query = "?limit=500" + (f"&continue={quote(token)}" if token else "")
                status, body = rest.request("GET", spec.path() + query)
                if status != 200:
                    if spec.name in ("nodes", "pods"):
                        raise OSError(
                            f"listing {spec.name}: HTTP {status}: {body[:200].decode(errors='replace')}"
                        )
                    break
                page = orjson.loads(body)
                for item in page.get("items") or ():
                    item["kind"], item["apiVersion"] = spec.kind, spec.api_version
                    if isinstance(item.get("metadata"), dict):
                        item["metadata"].pop("managedFields", None)
                    items.append(item)
                token = list_continue(page)
                if not token:
                    break
            out[spec.name] = items
    finally:
        rest.close()
    return out


def snapshot(args: argparse.Namespace) -> int:
    objects = list_cluster(args.kubeconfig)
    items = [item for spec in SNAPSHOT_KINDS for item in objects.get(spec.name, ())]
    meta = {"snapshotKind": DUMP_KIND, "takenAt": time.time()}
    doc = {"apiVersion": "v1", "kind": "List", "metadata": meta, "items": items}
    Path(args.file).write_bytes(orjson.dumps(doc))
    counts = ", ".join(
        f"{len(objects.get(s.name, ()))} {s.name}" for s in SNAPSHOT_KINDS if objects.get(s.name)
    )
    print(f"wrote {args.file}: {counts}")
    return 0


# --- simulate -----------------------------------------------------------------------------------------


def _objects(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    if args.cluster:
        return load_dump(args.cluster)
    return list_cluster(args.kubeconfig)


def _simulation(config_path: str | None, objects: dict[str, list[dict[str, Any]]], seed: int) -> Simulation:
    config, registry = load_config_with_plugins(config_path, registry=IN_TREE_REGISTRY)
    return Simulation(config, registry, objects, seed=seed)


def simulate(args: argparse.Namespace) -> int:
    if not args.pods:
        print("py-scheduler simulate: --pods (or --scenario) is required", file=sys.stderr)
        return 2
    objects = _objects(args)
    pods = expand_pods(load_documents(args.pods))
    first = _simulation(args.config, objects, args.seed)
    placements = first.place_all(pods)
    second: Simulation | None = None
    compared: list[Placement] = []
    if args.compare:
        second = _simulation(args.compare, objects, args.seed)
        compared = second.place_all(pods)
    if args.output == "json":
        doc: dict[str, Any] = {
            "placements": [_placement_json(p) for p in placements],
            "summary": first.summary(),
        }
        if second is not None:
            doc["compare"] = {
                "placements": [_placement_json(p) for p in compared],
                "summary": second.summary(),
            }
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"Placements ({args.config or 'default configuration'}):")
    print(format_placements(placements))
    print(format_summary(first.summary()))
    if second is not None:
        print(f"\nCompared with {args.compare}:")
        print(format_differences(placements, compared))
        print(format_summary_pair(first.summary(), second.summary(), args.config or "default", args.compare))
    return 0


def scenario(args: argparse.Namespace) -> int:
    result = run_scenario(Path(args.scenario), config_override=args.config, seed=args.seed)
    print(result.report())
    return 0 if result.ok else 1


def _placement_json(p: Placement) -> dict[str, Any]:
    return {
        "pod": p.pod,
        "node": p.node,
        "reason": p.reason,
        "record": p.record.to_json() if p.record else None,
    }


def why(p: Placement) -> str:
    record = p.record
    if p.node is None:
        text = p.reason
        if record is not None and record.nearest_misses:
            text += " Nearest: " + "; ".join(m.text() for m in record.nearest_misses[:2])
        return text
    if record is None or not record.scores:
        return ""
    chosen = next((s for s in record.scores if s.chosen), record.scores[0])
    if not chosen.plugins:
        return "only feasible node"
    runner_up = next((s for s in record.scores if not s.chosen), None)
    against = f" vs {runner_up.node} {runner_up.total}" if runner_up else ""
    return f"score {chosen.total}{against} of {record.feasible} feasible"


def format_placements(placements: Sequence[Placement]) -> str:
    rows = [("POD", "NODE", "WHY")] + [(p.pod, p.node or "<pending>", why(p)) for p in placements]
    return _table(rows)


def format_summary(summary: dict[str, Any]) -> str:
    cpu = summary["cpuUtilisation"]
    zones = ", ".join(f"{zone}={count}" for zone, count in summary["zones"].items()) or "-"
    return (f"Placed {summary['placed']}, pending {summary['pending']}, on {summary['nodesUsed']} node(s); "
            f"cpu utilisation min {cpu['min']:.0%} max {cpu['max']:.0%} (spread {cpu['spread']:.0%}); "
            f"per zone: {zones}")  # fmt: skip


def format_differences(first: Sequence[Placement], second: Sequence[Placement]) -> str:
    rows = [("POD", "FIRST", "SECOND")]
    for a, b in zip(first, second, strict=True):
        if a.node != b.node:
            rows.append((a.pod, a.node or "<pending>", b.node or "<pending>"))
    if len(rows) == 1:
        return "No differences in placement."
    return f"{len(rows) - 1} pod(s) placed differently:\n" + _table(rows)


def format_summary_pair(a: dict[str, Any], b: dict[str, Any], name_a: str, name_b: str) -> str:
    def cells(s: dict[str, Any]) -> tuple[str, ...]:
        cpu = s["cpuUtilisation"]
        zones = ", ".join(f"{z}={c}" for z, c in s["zones"].items()) or "-"
        return (str(s["placed"]), str(s["pending"]), str(s["nodesUsed"]), f"{cpu['spread']:.0%}", zones)

    rows = [("CONFIG", "PLACED", "PENDING", "NODES USED", "CPU SPREAD", "PER ZONE"), (name_a, *cells(a)),
            (name_b, *cells(b))]  # fmt: skip
    return _table(rows)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
