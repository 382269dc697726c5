"""A child process in its own process group, logging to a file, that cannot outlive us.

Three layers make sure no component is left running: ``stop()`` (SIGTERM to the group, then SIGKILL),
an atexit hook that stops whatever is still registered, and PR_SET_PDEATHSIG so the kernel kills the
child even when the Python process itself is SIGKILLed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1
_TAIL_BYTES = 64 * 1024


def _load_prctl() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return prctl


# Resolved once in the parent: the child between fork and exec must not do anything that can block.
_PRCTL = _load_prctl()


def _death_signal_preexec(parent_pid: int) -> Callable[[], None] | None:
    # PDEATHSIG fires when the *thread* that forked the child exits, so only use it from the main thread,
    # whose exit is the process's exit.
    if _PRCTL is None or threading.current_thread() is not threading.main_thread():
        return None
    prctl = _PRCTL

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


_LIVE: set[ManagedProcess] = set()
_LIVE_LOCK = threading.Lock()


def _stop_all_at_exit() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        proc.stop(grace=2.0)


atexit.register(_stop_all_at_exit)


def tail_file(path: Path, lines: int = 40) -> str:
    """The last lines of a log file ('' if it does not exist yet)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - _TAIL_BYTES))
            data = fh.read()
    except FileNotFoundError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


class ManagedProcess:
    """One component (etcd, kube-apiserver, kube-scheduler) with stdout+stderr in ``log_path``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        # The port it serves on, when its starter records one (kube-scheduler's secure port).
        self.port = 0
        self.argv = list(argv)
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self._popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._popen is not None:
            raise RuntimeError(f"{self.name} was already started")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._log.write(f"### {' '.join(self.argv)}\n".encode())
        self._log.flush()
        try:
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,  # own process group: signals reach the whole component
                preexec_fn=_death_signal_preexec(os.getpid()),  # noqa: PLW1509 - only prctl, pre-resolved
            )
        except BaseException:
            self._log.close()
            raise
        with _LIVE_LOCK:
            _LIVE.add(self)

    @property
    def pid(self) -> int:
        if self._popen is None:
            raise RuntimeError(f"{self.name} is not started")
        return self._popen.pid

    @property
    def started(self) -> bool:
        return self._popen is not None

    def poll(self) -> int | None:
        """The exit code, or None while running (also None when never started)."""
        return None if self._popen is None else self._popen.poll()

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def wait(self, timeout: float | None = None) -> int:
        if self._popen is None:
            raise RuntimeError(f"{self.name} is not started")
        return self._popen.wait(timeout)

    def tail(self, lines: int = 40) -> str:
        return tail_file(self.log_path, lines)

    def describe_failure(self, what: str, lines: int = 40) -> str:
        """A message that says what went wrong, where the log is, and what it ended with."""
        code = self.poll()
        state = "running" if code is None else f"exited with code {code}"
        return (
            f"{what} ({self.name} {state}; log: {self.log_path})\n"
            f"--- last lines of {self.log_path} ---\n{self.tail(lines)}"
        )

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds. Idempotent."""
        with self._lock:
            popen = self._popen
            if popen is None:
                return None
            if popen.poll() is None:
                # The group leader is not reaped yet, so its pgid cannot have been reused.
                self._signal_group(popen.pid, signal.SIGTERM)
                try:
                    popen.wait(grace)
                except subprocess.TimeoutExpired:
                    self._signal_group(popen.pid, signal.SIGKILL)
                    popen.wait()
            if self._log is not None:
                self._log.close()
                self._log = None
            with _LIVE_LOCK:
                _LIVE.discard(self)
            return popen.returncode

    # Popen-like aliases so callers can treat the handle as a process.
    def terminate(self) -> None:
        self.stop()

    def kill(self) -> None:
        self.stop(grace=0.0)

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)

    def __repr__(self) -> str:
        pid = self._popen.pid if self._popen is not None else None
        return f"ManagedProcess({self.name!r}, pid={pid}, returncode={self.poll()})"
