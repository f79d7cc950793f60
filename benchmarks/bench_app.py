"""App responsiveness: script time of every page and view after a widget change (batch size), for ResNet-152 and a
large timm model (EfficientNet-B7, 600×600), measured with streamlit.testing.v1.AppTest, and the cold start of the
first page in a fresh process (imports included). Each timed change goes to a batch no session has asked for (a
miss in every cache: what one student alone waits); the "seen" column goes back to one asked for before (a hit in
the shared cache: a class where another student was there first).

Target (issue 45, item 1): every view re-renders in ≤ 100 ms median script time; the first page appears in ≤ 1.0 s
cold. Run: python benchmarks/bench_app.py [--quick] [--model NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted(str(p.relative_to(ROOT)) for p in (ROOT / "views").glob("*.py"))]
SKIP = {"views/benchmark.py"}      # live timing is not a page to re-render on every change
MODELS = ("resnet152", "timm:efficientnet_b7")
TARGET_MS, COLD_TARGET_S = 100, 1.0
# pages whose parts run only when open (lazy tabs, a lab selector): the session-state settings of each view, timed open
LAB2_TABS = ["Eleven devices", "Ten networks on two rooflines", "Latency vs FLOPs and params",
             "Throughput, forward : backward", "Measured here"]
VIEWS = {"views/estimates.py": [{"estimates_tab": t} for t in ["Breakdown", "Batch size", "Memory", "Other devices",
                                                                 "Convolution algorithm", "Data parallel"]],
         "views/course_labs.py": [{"lab": 1}, *({"lab": 2, "lab2_tab": t} for t in LAB2_TABS),
                                    {"lab": 3}, {"lab": 4}, {"lab": 5}],
         "views/graph.py": [{"graph_measure": "time"}, {"graph_measure": "flops", "graph_expand": "longest run"}]}


def longest_run(model: str) -> str:
    """The id of the network's run of alike blocks with the most layers (ResNet-152: layer3, 36 blocks), expanded."""
    import core
    from core.netgroups import find_groups

    return max(find_groups(core.analyze(model).compiled), key=lambda g: len(g.nodes)).gid


def server_script_cache() -> None:
    """Compile each page once, as a server does (its ScriptCache lives as long as the process); AppTest gives every
    run a new cache, so it would time Streamlit's compiling of the page (2–11 ms a page) on every run."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import local_script_runner

    shared = ScriptCache()
    local_script_runner.ScriptCache = lambda: shared


_UNSEEN = iter(range(100, 10 ** 6))     # batch sizes no run of this process has asked for


def page_times(page: str, model: str, repeats: int, view: dict | None = None) -> tuple[float, float]:
    """Median ms of a change to an unseen batch, and of a change back to a seen one."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / page), default_timeout=300).run()
    at.selectbox(key="model").set_value(model).run()
    for key, value in (view or {}).items():      # one run per setting: a lab's own tabs exist once it is open
        at.session_state[key] = longest_run(model) if value == "longest run" else value
        at.run()
    new, seen = [], []
    for _ in range(repeats):
        batch = next(_UNSEEN)
        for times, value in ((new, batch), (seen, batch)):
            at.number_input(key="batch_size").set_value(2).run()
            t = time.perf_counter()
            at.number_input(key="batch_size").set_value(value).run()
            times.append((time.perf_counter() - t) * 1e3)
            assert not at.exception, at.exception
    return statistics.median(new), statistics.median(seen)


def cold_start() -> float:
    code = ("import time; t = time.perf_counter(); from streamlit.testing.v1 import AppTest; "
            f"AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=120).run(); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return float(out.stdout.strip().splitlines()[-1])


def views(quick: bool = False) -> list[tuple[str, str, dict | None]]:
    """(row label, page, its view settings) for every view timed; ``quick``: the first view of each page."""
    out = []
    for p in PAGES:
        if p in SKIP:
            continue
        for view in (VIEWS[p][:1] if quick else VIEWS[p]) if p in VIEWS else [None]:
            label = p if view is None else f"{p} [{', '.join(f'{k} = {v}' for k, v in view.items())}]"
            out.append((label, p, view))
    return out


def measure(quick: bool = False, models=None) -> dict:
    """{"pages": {row label: {model: (median ms at an unseen batch, at a seen one)}}, "models": [...], "cold_s": s}."""
    sys.path.insert(0, str(ROOT))
    server_script_cache()
    models, repeats = (["mnist_cnn"], 2) if quick else (list(models or MODELS), 7)
    results: dict[str, dict[str, float]] = {}
    for label, page, view in views(quick):
        results[label] = {m: page_times(page, m, repeats, view) for m in models}
    return {"pages": results, "cold_s": cold_start(), "models": models}


def markdown(out: dict) -> str:
    models = out["models"]
    lines = ["## App responsiveness", "",
             f"Median script time (ms) of each view after a batch change; target ≤ {TARGET_MS} ms. *new*: to a batch "
             "no session has asked for (every cache misses); *seen*: to one asked for before (the shared cache hits, "
             "as when another student was there first).", "",
             "| page [view] | " + " | ".join(f"{m} new | {m} seen" for m in models) + " |",
             "|---|" + "---:|" * (2 * len(models))]
    lines += [f"| {p} | " + " | ".join(f"{ms[m][0]:.0f} | {ms[m][1]:.0f}" for m in models) + " |"
              for p, ms in out["pages"].items()]
    worst = {m: max(ms[m][0] for ms in out["pages"].values()) for m in models}
    lines.append("\nslowest view at a new batch: " + "; ".join(f"{m} {w:.0f} ms" for m, w in worst.items()))
    lines.append(f"\ncold start of the first page in a fresh process (imports + first run): {out['cold_s']:.2f} s "
                 f"(target ≤ {COLD_TARGET_S:g} s)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="mnist_cnn, first view of each page, 2 repeats (smoke test)")
    ap.add_argument("--model", action="append", help=f"a network to time (repeatable; default {', '.join(MODELS)})")
    args = ap.parse_args(argv)
    out = measure(args.quick, args.model)
    print(markdown(out))
    return out


if __name__ == "__main__":
    main()
