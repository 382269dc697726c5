"""``py-scheduler``: the command line, flags named like kube-scheduler's where they overlap."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Sequence

from scheduler.app import SchedulerApp, ServingOptions
from scheduler.config import ConfigError, load_config
from scheduler.logs import setup_logging
from scheduler.plugins.registry import IN_TREE_REGISTRY

log = logging.getLogger("scheduler.cli")

EXPLAIN_SUBCOMMANDS = ("explain", "simulate", "snapshot")

# Young-generation threshold of the cyclic GC (CPython's default: 700 allocations). Watch events
# arrive as fresh acyclic JSON dicts, refcounting frees them, and yet at the default the collector
# ran ~700 times in a 5,000-pod run, ~8% of the scheduler's CPU. At 50,000 it runs a dozen times.
GC_GEN0_THRESHOLD = 50_000


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="py-scheduler",
        description="A secondary Kubernetes scheduler. Pods opt in with spec.schedulerName.",
    )
    parser.add_argument("--config", help="KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1)")
    parser.add_argument("--kubeconfig", help="kubeconfig path; default: in-cluster, then ~/.kube/config")
    parser.add_argument("--bind-address", default="0.0.0.0", help="address for /metrics and health")
    parser.add_argument("--port", type=int, default=10259, help="port for /metrics and health; -1 disables")
    parser.add_argument("--tls-cert-file", help="serve HTTPS with this certificate")
    parser.add_argument("--tls-private-key-file", help="the key of --tls-cert-file")
    parser.add_argument(
        "--leader-elect", type=_bool, default=None, help="override leaderElection.leaderElect"
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, help="log verbosity (klog style)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments and arguments[0] in EXPLAIN_SUBCOMMANDS:
        # explain / simulate / snapshot: tools, not the scheduler (scheduler/explain/cli.py).
        from scheduler.explain.cli import main as explain_main  # noqa: PLC0415 -- keep start-up lean

        return explain_main(arguments)
    args = build_parser().parse_args(argv)
    setup_logging(args.log_format, args.verbosity)
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        log.error("--tls-cert-file and --tls-private-key-file go together")
        return 1

    try:
        config = load_config(args.config, registry=IN_TREE_REGISTRY)
        app = SchedulerApp(
            config,
            registry=config.registry or IN_TREE_REGISTRY,
            kubeconfig=args.kubeconfig,
            serving=ServingOptions(
                args.bind_address, args.port, args.tls_cert_file, args.tls_private_key_file
            ),
            leader_elect=args.leader_elect,
        )
    except ConfigError as err:
        print(f"py-scheduler: invalid configuration: {err}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as err:
        print(f"py-scheduler: {err}", file=sys.stderr)
        return 1
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])
    return asyncio.run(_run(app))


async def _run(app: SchedulerApp) -> int:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, app.request_stop)
    code = await app.run()
    log.info("py-scheduler exiting with code %d", code)
    return code


if __name__ == "__main__":
    sys.exit(main())
