"""The class benchmark runs (``bench_class.py --quick``: serve_class.sh at 1 and 2 workers, a small class, a worker
killed mid-class) so it cannot rot: the report has its three parts, the kill hit sessions, and every number it
recorded is finite and positive (counts of errors may be 0). Measured values are not asserted: the machine is
shared. Skipped without HAProxy."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_class

pytestmark = pytest.mark.skipif(bench_class.HAPROXY is None,
                                reason="haproxy is not installed: run 'bash scripts/install_haproxy.sh'")
MAYBE = {"restarted_up_s"}     # the killed worker may not be UP again before a quick run ends


def numbers(tree, path=""):
    """Every number in the results, with where it is (``a.1.p50_ms``), counts apart from measurements."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from numbers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(tree, (list, tuple)):
        for i, v in enumerate(tree):
            yield from numbers(v, f"{path}[{i}]")
    elif isinstance(tree, (int, float)) and not isinstance(tree, bool) or tree is None:
        yield path, tree


def test_bench_class_quick(capsys):
    out = bench_class.main(["--quick"])
    text = capsys.readouterr().out
    for heading in ("## A class on serve_class.sh", "### (a) Busy protocol, 1 vs 2 workers", "### (b) A class",
                    "### (c) The same class, the busiest worker SIGKILLed", "| 2 ÷ 1 |"):
        assert heading in text
    a, b, c = out["a"], out["b"], out["c"]
    assert (a["1"]["workers"], a["2"]["workers"], b["workers"], c["workers"]) == (1, 2, 2, 2)
    assert a["1"]["sessions"] == 3 and b["sessions"] == c["sessions"] == 4
    for run in (a["1"], a["2"], b, c):
        assert run["steps"] > 0 and isinstance(run["errors"], list)
    kill = c["kill"]
    assert kill["worker"] in ("w1", "w2") and kill["sessions_on_it"] >= 1
    assert set(b["per_worker"]) <= {"w1", "w2"}
    for where, x in numbers({k: v for k, v in out.items() if k in ("a", "b", "c")}):
        if x is None:
            assert where.rsplit(".", 1)[-1] in MAYBE, f"{where}: not recorded"
        elif isinstance(x, int):
            assert x >= 0, where                                  # a count (errors, sessions on a worker, …)
        else:
            assert math.isfinite(x) and x > 0, f"{where} = {x}"  # a measurement
