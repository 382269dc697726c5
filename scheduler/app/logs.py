"""Logging set-up: text or JSON lines, verbosity like klog's -v."""

from __future__ import annotations

import logging
import sys
import time

import orjson


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with klog's structured keys (ts, v-independent level, msg)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["err"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


def setup_logging(fmt: str = "text", verbosity: int = 0) -> None:
    """-v 0 shows info and up for py-scheduler; -v 4 and more adds debug; libraries stay at warning."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        formatter = logging.Formatter(
            "%(asctime)s.%(msecs)03dZ %(levelname).1s %(name)s] %(message)s", "%Y-%m-%dT%H:%M:%S"
        )
        formatter.converter = time.gmtime
        handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    level = logging.DEBUG if verbosity >= 4 else logging.INFO
    for name in ("scheduler", "scheduling_queue", "informers"):
        logging.getLogger(name).setLevel(level)
