"""What the benchmark scripts share: a median timer, the ``--quick`` command line, and fresh-process workers (the
worker prints one JSON record per line after ``RESULT``; the driver runs it with a time limit and reads the records
back, with a one-line reason when the worker produced none: crash, out of memory, time limit)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULT = "RESULT "           # a worker's output line carrying one JSON record
ROOT = Path(__file__).resolve().parent.parent


def emit(record: dict) -> None:
    """In a worker: hand one record to the driver."""
    print(RESULT + json.dumps(record), flush=True)


def run_worker(script: str, spec: dict, timeout_s: float) -> tuple[list[dict], str]:
    """Run ``script --worker SPEC`` in a fresh process; (its records, why it stopped: the last stderr line, a signal
    or the time limit — meaningful when the records are missing)."""
    try:
        p = subprocess.run([sys.executable, script, "--worker", json.dumps(spec)], capture_output=True, text=True,
                           timeout=timeout_s, cwd=ROOT)
        stdout = p.stdout
        err = (p.stderr.strip().splitlines() or [f"exit code {p.returncode}"])[-1]
        if p.returncode < 0:
            err = f"killed by signal {-p.returncode} (out of memory?)"
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = f"not finished within {timeout_s:.0f} s"
    return [json.loads(line[len(RESULT):]) for line in stdout.splitlines() if line.startswith(RESULT)], err


def median_ms(fn, repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn``, in ms."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def quick_main(measure, markdown, argv, quick_help: str) -> dict:
    """``python bench_x.py [--quick]``: measure, print the Markdown section, return the results."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help=quick_help)
    out = measure(ap.parse_args(argv).quick)
    print(markdown(out))
    return out
