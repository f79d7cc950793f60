"""Speed of ``core.analyze`` against torchinfo.summary, in one run (issue: core engine, §5).

Reports medians over repeated calls for ResNet-152 at batch 1 and 1024:
  * warm   — analyze() as the app and notebooks call it: the network's compiled form is cached;
  * +rows  — the same, also building every per-layer row (what a table shows);
  * cold   — compile from scratch (shape propagation of all nodes), cache cleared before each call;
  * torchinfo.summary on torchvision's resnet152 (weights allocated once, outside the timing);
and the wall time of ``python -m core analyze vgg16`` as a fresh process.

Run: ``python benchmarks/bench_analyze.py [--quick]``. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core  # noqa: E402
from common import median_ms  # noqa: E402
from core import graph  # noqa: E402


def measure(quick: bool = False) -> dict:
    """{"rows": one dict per batch size, "cli_s": wall time of ``python -m core analyze vgg16``}."""
    name = "resnet18" if quick else "resnet152"
    repeat = 3 if quick else 50
    rows = []
    net = core.load_network(name)
    for batch in (1, 1024):
        core.analyze(net, batch_size=batch)       # warm the cache
        warm = median_ms(lambda batch=batch: core.analyze(name, batch_size=batch).totals, repeat)
        rows_ms = median_ms(lambda batch=batch: core.analyze(name, batch_size=batch).layers, repeat)

        def cold(batch=batch):
            graph._compile_cached.cache_clear()
            _ = core.analyze(net, batch_size=batch).totals       # a property: reading it does the work
        cold_ms = median_ms(cold, max(3, repeat // 5))
        rows.append({"what": f"core.analyze({name}) batch {batch}", "warm_ms": warm, "rows_ms": rows_ms,
                     "cold_ms": cold_ms})

    ti = None
    try:
        import torch
        import torchinfo
        import torchvision
        model = torchvision.models.get_model(name, weights=None).eval()
        for r, batch in zip(rows, (1, 1024)):
            if quick:
                batch = 1
            elif batch > 64:
                # torchinfo runs a real forward pass: at batch 1024 that is minutes on 2 cores; time batch 64 and
                # say so rather than guess.
                batch = 64
            x_shape = (batch, 3, 224, 224)
            with torch.no_grad():
                ti = median_ms(lambda x_shape=x_shape: torchinfo.summary(model, input_size=x_shape, verbose=0),
                               1 if quick else 3)
            r["torchinfo_ms"] = ti
            r["torchinfo_batch"] = batch
    except ImportError as e:          # the benchmark still reports core's numbers without torch
        print(f"(torchinfo comparison skipped: {e})", file=sys.stderr)

    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "core", "analyze", "vgg16"], cwd=ROOT, check=True, capture_output=True)
    cli_s = time.perf_counter() - t

    return {"rows": rows, "cli_s": cli_s}


def markdown(results: dict) -> str:
    lines = ["## core.analyze at batch 1 and 1024 against torchinfo.summary", "",
             "| analysis | warm median (ms) | warm + all rows (ms) | cold compile (ms) | torchinfo.summary (ms) "
             "| ratio |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        ti = r.get("torchinfo_ms")
        ratio = f"{ti / r['rows_ms']:,.0f}×" if ti else "—"
        tis = f"{ti:,.0f} (batch {r['torchinfo_batch']})" if ti else "—"
        lines.append(f"| {r['what']} | {r['warm_ms']:.3f} | {r['rows_ms']:.3f} | {r['cold_ms']:.2f} | {tis} "
                     f"| {ratio} |")
    lines.append(f"\n`python -m core analyze vgg16`: {results['cli_s']:.2f} s wall (fresh process)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="few repeats and a small network (smoke test)")
    args = ap.parse_args(argv)
    results = measure(args.quick)
    print(markdown(results))
    return results["rows"]


if __name__ == "__main__":
    main()
