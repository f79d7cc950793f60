"""App responsiveness: script time of every page for ResNet-152 after a widget change (batch size), measured with
streamlit.testing.v1.AppTest, and the cold start of the first page in a fresh process (imports included).

Target (issue: the calculator app): the heaviest page re-renders in ≤ 150 ms. Run: python benchmarks/bench_app.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import quick_main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted(str(p.relative_to(ROOT)) for p in (ROOT / "views").glob("*.py"))]
SKIP = {"views/benchmark.py"}      # live timing is not a page to re-render on every change
# pages whose parts run only when open (lazy tabs, a lab selector): the session-state settings of each view, timed open
LAB2_TABS = ["Eleven devices", "Ten networks on two rooflines", "Latency vs FLOPs and params",
             "Throughput, forward : backward", "Measured here"]
VIEWS = {"views/estimates.py": [{"estimates_tab": t} for t in ["Breakdown", "Batch size", "Memory", "Other devices",
                                                                 "Convolution algorithm", "Data parallel"]],
         "views/course_labs.py": [{"lab": 1}, *({"lab": 2, "lab2_tab": t} for t in LAB2_TABS),
                                    {"lab": 3}, {"lab": 4}, {"lab": 5}],
         "views/graph.py": [{"graph_measure": "time"}, {"graph_measure": "flops", "graph_expand": "layer3"}]}


def page_times(page: str, model: str, repeats: int, view: dict | None = None) -> float:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / page), default_timeout=120).run()
    at.selectbox(key="model").set_value(model).run()
    for key, value in (view or {}).items():      # one run per setting: a lab's own tabs exist once it is open
        at.session_state[key] = value
        at.run()
    times = []
    for i in range(repeats):
        at.number_input(key="batch_size").set_value(2 + i % 2).run()
        t = time.perf_counter()
        at.number_input(key="batch_size").set_value(8 + i % 2).run()
        times.append((time.perf_counter() - t) * 1e3)
        assert not at.exception, at.exception
    return statistics.median(times)


def cold_start() -> float:
    code = ("import time; t = time.perf_counter(); from streamlit.testing.v1 import AppTest; "
            f"AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=120).run(); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return float(out.stdout.strip().splitlines()[-1])


def measure(quick: bool = False) -> dict:
    sys.path.insert(0, str(ROOT))
    model, repeats = ("mnist_cnn", 2) if quick else ("resnet152", 7)
    results = {}
    for p in PAGES:
        if p in SKIP:
            continue
        if p in VIEWS:
            for view in VIEWS[p][:1] if quick else VIEWS[p]:
                label = ", ".join(f"{k} = {v}" for k, v in view.items())
                results[f"{p} [{label}]"] = page_times(p, model, repeats, view)
        else:
            results[p] = page_times(p, model, repeats)
    return {"pages": results, "cold_s": cold_start(), "model": model}


def markdown(out: dict) -> str:
    lines = ["## App responsiveness", "", f"| page ({out['model']}, batch change) | median script time (ms) |",
             "|---|---:|"]
    lines += [f"| {p} | {ms:.0f} |" for p, ms in out["pages"].items()]
    lines.append(f"\ncold start of the first page in a fresh process (imports + first run): {out['cold_s']:.2f} s")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    return quick_main(measure, markdown, argv, "mnist_cnn, 2 repeats (smoke test)")


if __name__ == "__main__":
    main()
