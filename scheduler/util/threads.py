"""Starting a thread pool's workers ahead of the work.

``ThreadPoolExecutor`` starts a worker inside ``submit`` when none is idle, and ``Thread.start`` waits
until the new thread runs. Called on the event loop (binding a released gang, a burst of status writes),
that wait stalls the loop for as long as the new thread takes to get the GIL: on a busy machine,
milliseconds per thread. A pool's workers never exit before shutdown, so a long-running scheduler ends
up with them all after its first bursts anyway; starting them while the informers sync moves that cost
to start-up.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)


def prestart_workers(executor: ThreadPoolExecutor, count: int, timeout: float = 5.0) -> bool:
    """Start ``count`` workers of ``executor`` now (blocking the caller, so not on the event loop).

    Each of ``count`` tasks waits at a barrier until all of them and the caller are there: a worker
    busy at the barrier is never idle, so the executor must start a new worker for every task. Returns
    False when they did not all arrive within ``timeout`` (fewer workers allowed, or shut down): the
    barrier is then broken, the tasks end at once, and the pool starts the rest on demand as before.
    """
    if count <= 0:
        return True
    barrier = threading.Barrier(count + 1, timeout=timeout)

    def wait_for_the_others() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()

    try:
        for _ in range(count):
            executor.submit(wait_for_the_others)
    except RuntimeError:
        # Shut down meanwhile: nothing left to warm up.
        barrier.abort()
        return False
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        log.info("only some of %d pool workers started within %gs", count, timeout)
        return False
    return True
