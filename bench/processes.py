"""Stopping the bench's child processes: SIGTERM, then SIGKILL to the whole session if it lingers."""

from __future__ import annotations

import os
import signal
import subprocess


def stop(proc: subprocess.Popen[bytes] | None, grace: float = 10.0, after_kill: float = 5.0) -> None:
    """Ask ``proc`` (started with ``start_new_session=True``) to exit; kill its process group after
    ``grace`` seconds. Nothing to do when it never started or has already exited."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(after_kill)
