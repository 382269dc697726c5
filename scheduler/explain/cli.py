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
from scheduler.explain import reevaluate as reevaluate_mod
from scheduler.explain.listing import list_cluster
from scheduler.explain.manifests import (
    DUMP_KIND,
    SNAPSHOT_KINDS,
    ManifestError,
    expand_pods,
    load_documents,
    load_dump,
    pending_pods,
)
from scheduler.explain.render import render_pod
from scheduler.explain.scenario import ScenarioError, run_scenario
from scheduler.explain.simulate import Placement, Simulation
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
    explain.add_argument(
        "--no-reevaluate",
        action="store_true",
        help="when the scheduler's record cannot be had, only say why (default: re-evaluate the pod now "
        "on a read-only snapshot of the cluster, labelled as such)",
    )
    explain.add_argument(
        "--config",
        help="for a re-evaluation: the scheduler's KubeSchedulerConfiguration (default: the ConfigMap "
        f"{reevaluate_mod.CONFIG_MAP} in --service-namespace, else the scheduler's /configz, else defaults)",
    )

    simulate = sub.add_parser("simulate", help="place pods on a snapshot with a configuration; read-only")
    simulate.add_argument("--config", help="KubeSchedulerConfiguration (default: the built-in defaults)")
    source = simulate.add_mutually_exclusive_group()
    source.add_argument("--kubeconfig", help="read nodes and pods from this live cluster (never written)")
    source.add_argument("--cluster", help="a snapshot file (py-scheduler snapshot) or any node/pod manifests")
    simulate.add_argument(
        "--pods",
        help="Pod, Deployment, StatefulSet, ReplicaSet or Job manifests to place (new pods); without it, "
        "the snapshot's pending pods of the configurations' profiles",
    )
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
    try:
        status, body = _fetch_direct(args, key) if args.endpoint else _fetch_via_proxy(args, key)
    except (OSError, urllib3.exceptions.HTTPError) as err:
        status, body = 0, str(err).encode()
    try:
        loaded: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        loaded = {"error": body.decode(errors="replace").strip()}
    doc: dict[str, Any] = (
        loaded if isinstance(loaded, dict) else {"error": f"unexpected answer: {body[:100]!r}"}
    )
    if status != 200:
        print(what_was_tried(status, doc, args, key), file=sys.stderr)
        if args.no_reevaluate:
            return 1
        return reevaluate(args, key)
    if args.output == "json":
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_pod(doc, attempts=args.attempts))
    return 0


def what_was_tried(status: int, doc: dict[str, Any], args: argparse.Namespace, key: str) -> str:
    """What explain asked, of whom, what came back, and the permissions it takes: the user's next step."""
    namespace, _, name = key.partition("/")
    answer = refusal(status, doc, args) if status else f"no answer: {doc.get('error') or 'connection failed'}"
    url_rbac = f"get on the non-resource URL /debug/pods/{namespace}/{name}"
    if args.endpoint:
        lines = [
            f"py-scheduler explain {key}: no decision record from the scheduler at {args.endpoint}.",
            f"  Tried:   GET {args.endpoint.rstrip('/')}/debug/pods/{namespace}/{name} with your "
            "kubeconfig's credentials",
            f"  Answer:  {_status_label(status)}: {answer}",
            f"  Needs:   {url_rbac} (the ClusterRole py-scheduler:explain of "
            "deploy/components/explain-access)",
        ]
    else:
        target = f"{args.scheme}:{args.service}:{args.service_port}" if args.scheme else args.service
        path = proxy_path(args.service_namespace, args.service, args.service_port, key, args.scheme)
        lines = [
            f"py-scheduler explain {key}: no decision record from the scheduler.",
            f"  Tried:   the Service {args.service} (port {args.service_port}, {args.scheme or 'http'}) in "
            f"namespace {args.service_namespace}, through the API server's service proxy:",
            f"           GET {path}",
            f"  Answer:  {_status_label(status)}: {answer}",
            f"  Needs:   get on services/proxy for {target} in namespace {args.service_namespace}, and "
            f"{url_rbac} (the ClusterRole py-scheduler:explain of deploy/components/explain-access)",
            "  Elsewhere? --service-namespace/--service/--service-port name another Service; --endpoint "
            "https://HOST:10259 talks to a scheduler directly (a process, or after kubectl port-forward).",
        ]
    if status == 404 and "debug/pods" not in str(doc):
        lines.append(
            "  A 404 from the scheduler itself means it has no record of the pod (not one of its profiles, "
            "or it restarted since)."
        )
    return "\n".join(lines)


def _status_label(status: int) -> str:
    return f"HTTP {status}" if status else "no connection"


def reevaluate(args: argparse.Namespace, key: str) -> int:
    """The pod judged now on a read-only snapshot, with the scheduler's configuration where it can be
    read (scheduler/explain/reevaluate.py); printed under a label that says it is no record."""
    rest = RestClient(load_configuration(args.kubeconfig), qps=20, burst=20)
    try:

        def api_get(path: str) -> tuple[int, bytes]:
            try:
                return rest.request("GET", path, timeout=10.0)
            except (OSError, urllib3.exceptions.HTTPError) as err:
                return 0, str(err).encode()

        configz_get = _configz_getter(args, rest)
        source = reevaluate_mod.find_config(
            config_path=args.config,
            api_get=api_get,
            config_map_namespace=args.service_namespace,
            configz_get=configz_get,
            registry=IN_TREE_REGISTRY,
        )
    finally:
        rest.close()
    try:
        objects, unlisted = list_cluster(args.kubeconfig)
    except OSError as err:
        print(
            f"py-scheduler explain {key}: cannot re-evaluate: {err} (a re-evaluation needs list on nodes and "
            "pods, and reads the other kinds plugins use when allowed)",
            file=sys.stderr,
        )
        return 1
    result = reevaluate_mod.reevaluate(key, objects, source, now=time.time(), unlisted=unlisted)
    if result is None:
        print(f"py-scheduler explain {key}: cannot re-evaluate: no such pod in the cluster", file=sys.stderr)
        return 1
    if args.output == "json":
        sys.stdout.write(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(result.render())
    return 0


def _configz_getter(args: argparse.Namespace, rest: RestClient) -> reevaluate_mod.Getter:
    """GET /configz by the same route the record was asked by (your credentials, the scheduler's check)."""

    def via_endpoint(path: str) -> tuple[int, bytes]:
        try:
            return _get_direct(args, f"{args.endpoint.rstrip('/')}{path}")
        except (OSError, urllib3.exceptions.HTTPError) as err:
            return 0, str(err).encode()

    def via_proxy(path: str) -> tuple[int, bytes]:
        target = f"{args.scheme}:{args.service}:{args.service_port}" if args.scheme else args.service
        full = (
            f"/api/v1/namespaces/{quote(args.service_namespace, safe='')}/services/"
            f"{quote(target, safe=':')}/proxy{path}"
        )
        try:
            authorization = rest.credentials.current().authorization
            headers = {FORWARDED_AUTHORIZATION: authorization} if authorization else {}
            return rest.request("GET", full, timeout=10.0, headers=headers)
        except (OSError, urllib3.exceptions.HTTPError) as err:
            return 0, str(err).encode()

    return via_endpoint if args.endpoint else via_proxy


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
    return _get_direct(
        args, f"{args.endpoint.rstrip('/')}/debug/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"
    )


def _get_direct(args: argparse.Namespace, url: str) -> tuple[int, bytes]:
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


def snapshot(args: argparse.Namespace) -> int:
    objects, unlisted = list_cluster(args.kubeconfig)
    items = [item for spec in SNAPSHOT_KINDS for item in objects.get(spec.name, ())]
    meta: dict[str, Any] = {"snapshotKind": DUMP_KIND, "takenAt": time.time()}
    if unlisted:
        meta["unlisted"] = unlisted
    doc = {"apiVersion": "v1", "kind": "List", "metadata": meta, "items": items}
    Path(args.file).write_bytes(orjson.dumps(doc))
    counts = ", ".join(
        f"{len(objects.get(s.name, ()))} {s.name}" for s in SNAPSHOT_KINDS if objects.get(s.name)
    )
    print(f"wrote {args.file}: {counts}")
    if unlisted:
        print(
            f"py-scheduler snapshot: not in the snapshot (a replay may judge differently from the "
            f"scheduler where a plugin reads them): {reevaluate_mod.unlisted_text(unlisted)}",
            file=sys.stderr,
        )
    return 0


# --- simulate -----------------------------------------------------------------------------------------


def _objects(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    if args.cluster:
        return load_dump(args.cluster)
    objects, unlisted = list_cluster(args.kubeconfig)
    if unlisted:
        print(
            f"py-scheduler simulate: not read (placements may differ from the scheduler's where a plugin "
            f"reads them): {reevaluate_mod.unlisted_text(unlisted)}",
            file=sys.stderr,
        )
    return objects


def _simulation(config_path: str | None, objects: dict[str, list[dict[str, Any]]], seed: int) -> Simulation:
    config, registry = load_config_with_plugins(config_path, registry=IN_TREE_REGISTRY)
    return Simulation(config, registry, objects, seed=seed)


def simulate(args: argparse.Namespace) -> int:
    objects = _objects(args)
    first = _simulation(args.config, objects, args.seed)
    second_sim = _simulation(args.compare, objects, args.seed) if args.compare else None
    # The snapshot's pending pods come first (they would be scheduled first), then the new ones.
    profiles = set(first.frameworks) | set(second_sim.frameworks if second_sim is not None else ())
    pods = pending_pods(objects, profiles) + (expand_pods(load_documents(args.pods)) if args.pods else [])
    if not pods:
        print(
            "py-scheduler simulate: nothing to place: the snapshot has no pending pod of profiles "
            f"{', '.join(sorted(profiles))}; pass --pods (or --scenario)",
            file=sys.stderr,
        )
        return 2
    placements = first.place_all(pods)
    second = second_sim
    compared = second.place_all(pods) if second is not None else []
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
    """The pods the two configurations place differently and, for each, why: every Score plugin's
    weighted score at both nodes under each configuration (a node outside a record's top nodes shows
    "-"), or the reason a pod stays pending."""
    rows = [("POD", "FIRST", "SECOND")]
    why: list[str] = []
    for a, b in zip(first, second, strict=True):
        if a.node != b.node:
            rows.append((a.pod, a.node or "<pending>", b.node or "<pending>"))
            why.extend(_why_different(a, b))
    if len(rows) == 1:
        return "No differences in placement."
    return f"{len(rows) - 1} pod(s) placed differently:\n" + _table(rows) + "\n" + "\n".join(why)


def plugin_scores(placement: Placement, node: str | None) -> dict[str, int] | None:
    """Each Score plugin's weighted score at ``node`` in this placement's record (None: not among the
    record's top nodes, or no record)."""
    if placement.record is None or not node:
        return None
    for scored in placement.record.scores:
        if scored.node == node:
            return {name: weighted for name, (_, _, weighted) in scored.plugins.items()}
    return None


def _why_different(a: Placement, b: Placement) -> list[str]:
    lines = [f"{a.pod}:"]
    for label, placement in (("first", a), ("second", b)):
        if placement.node is None:
            lines.append(f"  {label}: pending: {placement.reason}")
            continue
        nodes = [n for n in dict.fromkeys((a.node, b.node)) if n]
        cells = []
        for node in nodes:
            scores = plugin_scores(placement, node)
            if scores is None:
                cells.append(f"{node} -")
            else:
                parts = ", ".join(f"{name} {value}" for name, value in scores.items())
                cells.append(f"{node} {sum(scores.values())} ({parts})")
        lines.append(f"  {label}: " + "; ".join(cells))
    return lines


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
