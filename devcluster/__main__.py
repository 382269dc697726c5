"""`make cluster`: run the local control plane in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from kubernetes.client import CoreV1Api

from devcluster.cluster import ControlPlane
from devcluster.nodes import create_nodes, make_node
from devcluster.process import ManagedProcess

DEFAULT_RUN_DIR = Path(__file__).resolve().parent / "run"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m devcluster", description="Run etcd + kube-apiserver locally until interrupted."
    )
    parser.add_argument("--run-dir", type=Path, default=DEFAULT_RUN_DIR, help="kubeconfig, certs, data, logs")
    parser.add_argument("--nodes", type=int, default=0, help="create this many fake Ready nodes")
    parser.add_argument("--kube-scheduler", action="store_true", help="also run the real kube-scheduler")
    parser.add_argument("--keep-logs", action="store_true", help="keep the logs directory after stopping")
    return parser.parse_args(argv)


def _install_stop_handlers(stop: threading.Event) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _first_dead(processes: list[ManagedProcess]) -> ManagedProcess | None:
    return next((p for p in processes if not p.running()), None)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = threading.Event()
    _install_stop_handlers(stop)
    plane = ControlPlane(run_dir=args.run_dir, keep_logs=args.keep_logs)
    started = time.monotonic()
    try:
        plane.start()
        watched = list(plane.processes().values())
        if args.kube_scheduler:
            watched.append(plane.start_kube_scheduler())
        if args.nodes:
            with plane.api_client() as client:
                create_nodes(CoreV1Api(client), [make_node(f"node-{i}") for i in range(args.nodes)])
        print(f"devcluster: Kubernetes {plane.version} ready in {time.monotonic() - started:.1f}s")
        print(f"  server:     {plane.server}")
        print(f"  kubeconfig: {plane.kubeconfig}")
        print(f"  kubectl:    {plane.binaries_dir / 'kubectl'}")
        print(f"  logs:       {plane.log_dir}")
        print(f"export KUBECONFIG={plane.kubeconfig}")
        print("Press Ctrl-C to stop.", flush=True)
        while not stop.wait(1.0):
            dead = _first_dead(watched)
            if dead is not None:
                print(dead.describe_failure("devcluster: a component stopped"), file=sys.stderr)
                plane.stop(keep_logs=True)
                return 1
    except Exception as err:
        print(f"devcluster: {err}", file=sys.stderr)
        return 1
    finally:
        plane.stop()
    print("devcluster: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
