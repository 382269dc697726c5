"""``py-scheduler``: the command line, flags named like kube-scheduler's where they overlap."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from scheduler.app.logs import setup_logging
from scheduler.app.scheduler_app import SchedulerApp, exit_now
from scheduler.app.version import version_text
from scheduler.client.kubeclient import KubeconfigError, one_line
from scheduler.config import ConfigError, load_config_with_plugins
from scheduler.config.duration import parse_duration
from scheduler.explain.recorder import ANNOTATION, ANNOTATION_MAX_BYTES
from scheduler.features import DEFAULT_FEATURE_GATES, FeatureGateError, FeatureGates, parse_feature_gates
from scheduler.plugins.registry import in_tree_registry
from scheduler.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, check_always_allow_paths
from scheduler.serving.delegating import DelegationError, DelegationOptions
from scheduler.serving.options import DEFAULT_SECURE_PORT, ServingOptions
from scheduler.serving.tls import TLSConfigError

log = logging.getLogger("scheduler.app.cli")

EXPLAIN_SUBCOMMANDS = ("explain", "simulate", "snapshot")

# Young-generation threshold of the cyclic GC (CPython's default: 700 allocations). Watch events
# arrive as fresh acyclic JSON dicts, refcounting frees them, and yet at the default the collector
# ran ~700 times in a 5,000-pod run, ~8% of the scheduler's CPU. At 50,000 it runs a dozen times.
GC_GEN0_THRESHOLD = 50_000
# After shutdown, how long idle worker threads get to finish before the process leaves without them.
EXIT_JOIN_SECONDS = 1.0


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _profiles(text: str) -> frozenset[str]:
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected one or more profile names, comma-separated")
    return names


def _feature_gates(text: str) -> FeatureGates:
    try:
        return parse_feature_gates(text)
    except FeatureGateError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _Parser(argparse.ArgumentParser):
    """Flag errors are start-up errors: one line and exit code 1 (kube-scheduler's), not usage + 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: {message}\n")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text[:40]!r}") from None
    if not -1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range [-1, 65535] (-1 disables serving)")
    return port


def _secure_port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text[:40]!r}") from None
    if not 0 <= port <= 65535:
        # k8s.io/apiserver's SecureServingOptions.Validate wording.
        raise argparse.ArgumentTypeError(
            f"{port} must be between 0 and 65535, inclusive. 0 for turning off secure port"
        )
    return port


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    try:
        return check_always_allow_paths(paths)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return seconds


def _address(text: str) -> str:
    # An empty value would listen on every interface without saying so; kube-scheduler's IP flag
    # refuses it too.
    if not text.strip():
        raise argparse.ArgumentTypeError("expected an IP address or host name, got ''")
    return text


def _verbosity(text: str) -> int:
    """klog's Level: a base-10 int32 (negative allowed)."""
    try:
        level = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text[:40]!r}") from None
    if not -(2**31) <= level < 2**31:
        raise argparse.ArgumentTypeError(f"{text[:40]} is out of range (a 32-bit integer)")
    return level


class _VersionAction(argparse.Action):
    """``--version``, computed only when asked for (it may run git)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="py-scheduler",
        description="A secondary Kubernetes scheduler. Pods opt in with spec.schedulerName.",
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="print the version, the Kubernetes reference release and exit",
    )
    parser.add_argument("--config", help="KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1)")
    parser.add_argument("--kubeconfig", help="kubeconfig path; default: in-cluster, then ~/.kube/config")
    _serving_flags(parser)
    parser.add_argument(
        "--leader-elect", type=_bool, default=None, help="override leaderElection.leaderElect"
    )
    parser.add_argument(
        "--record-decisions",
        type=_bool,
        default=True,
        help="keep decision records for explain and /debug/pods (py-scheduler only; default true)",
    )
    parser.add_argument(
        "--nearest-misses-in-events",
        type=_bool,
        default=False,
        help="append the nearest misses to FailedScheduling Events after upstream's text (py-scheduler "
        "only; default false: Events carry kube-scheduler's exact text)",
    )
    parser.add_argument(
        "--annotate-decisions",
        type=_profiles,
        default=frozenset(),
        metavar="PROFILE[,PROFILE]",
        help=f"write a decision summary (at most {ANNOTATION_MAX_BYTES} bytes) to the {ANNOTATION} "
        "annotation of the pods of these profiles (py-scheduler only; default none)",
    )
    parser.add_argument(
        "--feature-gates",
        type=_feature_gates,
        default=DEFAULT_FEATURE_GATES,
        metavar="GATE=BOOL[,GATE=BOOL]",
        help="feature gates, as kube-scheduler v1.37.2's flag: GenericWorkload (beta, off; upstream's "
        "scheduling.k8s.io/v1beta1 gang API), StorageCapacityScoring, VolumeLimitScaling, "
        "NominatedNodeNameForExpectation and OpportunisticBatching (beta, on), NodeDeclaredFeatures (GA, "
        "locked on); SchedulerAsyncPreemption, SchedulerPopFromBackoffQ (beta, on) and "
        "SchedulerAsyncAPICalls (beta, off) only at their default",
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument(
        "-v", "--v", dest="verbosity", type=_verbosity, default=0, help="log verbosity (klog style)"
    )
    return parser


def _serving_flags(parser: argparse.ArgumentParser) -> None:
    """kube-scheduler's secure serving, authentication and authorization flags (docs/security.md)."""
    parser.add_argument(
        "--bind-address", type=_address, default="0.0.0.0", help="address for /metrics, health and /debug"
    )
    parser.add_argument(
        "--secure-port",
        type=_secure_port,
        default=DEFAULT_SECURE_PORT,
        help="HTTPS port with authentication and authorization (default 10259); 0 turns HTTPS off",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=0,
        help="INSECURE: also serve plain HTTP on this port, with no authentication or authorization "
        "(default 0: off). Only for a port no one else can reach",
    )
    parser.add_argument(
        "--cert-dir", help="where the self-signed py-scheduler.crt/.key are kept (default: in memory)"
    )
    parser.add_argument("--tls-cert-file", help="the serving certificate (default: self-signed)")
    parser.add_argument("--tls-private-key-file", help="the key of --tls-cert-file")
    parser.add_argument(
        "--authentication-kubeconfig",
        help="kubeconfig allowed to create tokenreviews (default: in-cluster; none outside a cluster)",
    )
    parser.add_argument(
        "--authorization-kubeconfig",
        help="kubeconfig allowed to create subjectaccessreviews (default: in-cluster; else none)",
    )
    parser.add_argument(
        "--authentication-skip-lookup",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        help="do not read the client CA from kube-system/extension-apiserver-authentication",
    )
    parser.add_argument(
        "--authentication-tolerate-lookup-failure",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        help="start even when that ConfigMap cannot be read (default true, as kube-scheduler)",
    )
    parser.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=DEFAULT_ALWAYS_ALLOW_PATHS,
        metavar="PATH[,PATH]",
        help="paths served without authorization (default /healthz,/readyz,/livez; trailing * = prefix)",
    )
    parser.add_argument(
        "--client-ca-file", help="CA bundle for client certificates (skips the ConfigMap lookup)"
    )
    parser.add_argument(
        "--authentication-token-webhook-cache-ttl", type=_duration, default=10.0, metavar="DURATION",
        help="how long TokenReview answers are cached (default 10s)",
    )  # fmt: skip
    parser.add_argument(
        "--authorization-webhook-cache-authorized-ttl", type=_duration, default=10.0, metavar="DURATION",
        help="how long allowed SubjectAccessReview answers are cached (default 10s)",
    )  # fmt: skip
    parser.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl", type=_duration, default=10.0, metavar="DURATION",
        help="how long denied SubjectAccessReview answers are cached (default 10s)",
    )  # fmt: skip


def serving_options(args: argparse.Namespace) -> ServingOptions:
    """The serving flags checked together; StartupError (one line) for a bad combination."""
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise StartupError("--tls-cert-file and --tls-private-key-file go together")
    insecure = max(args.port, 0)
    if insecure and insecure == args.secure_port:
        raise StartupError(
            f"--port {insecure} is the --secure-port too: --port now serves plain, unauthenticated HTTP "
            "beside HTTPS; drop --port (HTTPS is served on --secure-port, 10259 by default) or give "
            "--secure-port=0 to serve only plain HTTP"
        )
    delegation = DelegationOptions(
        authentication_kubeconfig=args.authentication_kubeconfig or None,
        authorization_kubeconfig=args.authorization_kubeconfig or None,
        skip_lookup=args.authentication_skip_lookup,
        tolerate_lookup_failure=args.authentication_tolerate_lookup_failure,
        always_allow_paths=args.authorization_always_allow_paths,
        client_ca_file=args.client_ca_file or None,
        token_cache_ttl=args.authentication_token_webhook_cache_ttl,
        allow_cache_ttl=args.authorization_webhook_cache_authorized_ttl,
        deny_cache_ttl=args.authorization_webhook_cache_unauthorized_ttl,
    )
    return ServingOptions(
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        insecure_port=insecure,
        cert_dir=args.cert_dir or None,
        tls_cert_file=args.tls_cert_file or None,
        tls_key_file=args.tls_private_key_file or None,
        delegation=delegation,
    )


class StartupError(Exception):
    """Anything that stops the scheduler before its loop runs; ``str()`` is the one line to print."""


def _fail(message: str) -> int:
    print(f"py-scheduler: {message}", file=sys.stderr)
    return 1


def build_app(args: argparse.Namespace) -> SchedulerApp:
    """Config, client and the health server's socket: every start-up check, before the loop runs."""
    serving = serving_options(args)
    try:
        config, registry = load_config_with_plugins(
            args.config, registry=in_tree_registry(args.feature_gates)
        )
    except ConfigError as err:
        where = f"{err.source}: " if err.source else ""
        raise StartupError(f"invalid configuration: {where}{'; '.join(err.errors)}") from None
    if args.annotate_decisions and not args.record_decisions:
        raise StartupError("--annotate-decisions needs --record-decisions=true")
    if args.nearest_misses_in_events and not args.record_decisions:
        raise StartupError("--nearest-misses-in-events needs --record-decisions=true")
    unknown = sorted(set(args.annotate_decisions) - {p.scheduler_name for p in config.profiles})
    if unknown:
        raise StartupError(f"--annotate-decisions: no profile named {', '.join(unknown)}")
    if args.feature_gates.generic_workload and config.extenders:
        # The pod group cycle does not call extenders; a group's pods must not skip them silently.
        raise StartupError("--feature-gates=GenericWorkload=true cannot be combined with extenders yet")
    try:
        app = SchedulerApp(
            config,
            registry=registry,
            kubeconfig=args.kubeconfig,
            serving=serving,
            leader_elect=args.leader_elect,
            record_decisions=args.record_decisions,
            annotate_decisions=args.annotate_decisions,
            nearest_misses_in_events=args.nearest_misses_in_events,
            features=args.feature_gates,
        )
    except KubeconfigError as err:
        raise StartupError(str(err)) from None
    except ConfigError as err:
        # Found while building from the config (a plugin at a point it lacks, an extender's TLS file).
        where = f"{args.config}: " if args.config else ""
        raise StartupError(f"invalid configuration: {where}{'; '.join(err.errors)}") from None
    try:
        app.start_serving()
    except (TLSConfigError, DelegationError) as err:
        raise StartupError(one_line(err, limit=1000)) from None
    except OSError as err:
        ports = [str(p) for p in (serving.secure_port, serving.insecure_port) if p > 0]
        where = f"{args.bind_address}:{'/'.join(ports)}"
        tls = (
            f" with TLS files {args.tls_cert_file}, {args.tls_private_key_file}" if args.tls_cert_file else ""
        )
        raise StartupError(f"cannot serve health and metrics on {where}{tls}: {one_line(err)}") from None
    return app


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments and arguments[0] in EXPLAIN_SUBCOMMANDS:
        # explain / simulate / snapshot: tools, not the scheduler (scheduler/explain/cli.py).
        from scheduler.explain.cli import main as explain_main  # noqa: PLC0415 -- keep start-up lean

        return explain_main(arguments)
    args = build_parser().parse_args(argv)
    setup_logging(args.log_format, args.verbosity)
    try:
        app = build_app(args)
    except StartupError as err:
        return _fail(one_line(err, limit=4000))
    except Exception as err:  # a bug or an environment we did not foresee: still one line, no traceback
        log.debug("start-up failed", exc_info=True)
        return _fail(f"start-up failed: {type(err).__name__}: {one_line(err)}")
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])
    code = asyncio.run(_run(app))
    _exit_without_joining(code)
    return code


async def _run(app: SchedulerApp) -> int:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, app.request_stop)
    code = await app.run()
    log.info("py-scheduler exiting with code %d", code)
    return code


def _exit_without_joining(code: int) -> None:
    """Shutdown is bounded, but a binding or event thread may still sit in a request to an API server
    that does not answer (up to its 30 s timeout). Python would join those threads at exit and
    overrun the pod's grace period, so leave without them."""
    stuck = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    deadline = time.monotonic() + EXIT_JOIN_SECONDS
    for thread in stuck:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t.name for t in stuck if t.is_alive()]
    if left:
        log.warning("abandoning %d threads still in requests: %s", len(left), ", ".join(left[:5]))
        sys.stdout.flush()
        sys.stderr.flush()
        exit_now(code)


if __name__ == "__main__":
    sys.exit(main())
