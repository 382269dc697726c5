"""Top functions by own and inclusive samples from py-spy's raw (collapsed-stack) output.

python -m bench.profile_summary bench/results/profiles/basic-py-scheduler.py-spy.txt [--top 30]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

_THREAD = re.compile(r"^(?:process \d+:)?\"?thread \(?0x[0-9a-f]+\)?\"?$|^thread \(\d+\)")


def summarise(path: Path, top: int = 30) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        if frames and frames[0].startswith(("thread", "process", '"')):
            threads[frames[0]] += count
        names = [f for f in frames if "(" in f and not f.startswith(("thread", "process"))]
        if names:
            own[names[-1]] += count
        for name in set(names):
            inclusive[name] += count
    lines = [f"{total} samples", "", "threads:"]
    lines += [f"  {100 * n / total:5.1f}%  {t}" for t, n in threads.most_common(10)]
    lines += ["", "own time:"]
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines += ["", "inclusive time:"]
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("path", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    print(summarise(args.path, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
