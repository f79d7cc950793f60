"""Speed of the network's graph as DOT (``core.netviz``, issue 41): for every built-in network, the nodes drawn with
the automatic collapse and the median time to build the DOT text, cold (the repeated blocks found afresh, the layer
rows built) and warm (a new batch size: the blocks cached per compiled network). Target: ≤ 50 ms for any built-in.

Run: ``python benchmarks/bench_graph.py [--quick]``. Prints a Markdown table.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core  # noqa: E402
from common import median_ms, quick_main  # noqa: E402
from core import netgroups, netviz  # noqa: E402

QUICK = ["mnist_cnn", "resnet18"]


def measure(quick: bool = False) -> dict:
    names = QUICK if quick else core.builtin_names()
    repeat = 3 if quick else 7
    rows = []
    for name in names:
        report = core.analyze(name)

        def cold(report=report):
            netgroups.find_groups.cache_clear()
            netviz.draw(report.with_batch(1), "flops")

        batches = iter(range(2, 10 ** 6))
        rows.append({"network": name, "nodes": len(report.compiled.nodes),
                     "drawn": netviz.draw(report, "flops").nodes,
                     "cold_ms": median_ms(cold, repeat),
                     "warm_ms": median_ms(lambda report=report, batches=batches:
                                                netviz.draw(report.with_batch(next(batches)), "flops"), repeat)})
    return {"rows": rows}


def markdown(out: dict) -> str:
    rows = out["rows"]
    lines = ["## The network's graph as DOT", "",
             "| network | nodes | drawn nodes (auto collapse) | DOT build cold (ms) | DOT build warm (ms) |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['network']} | {r['nodes']} | {r['drawn']} | {r['cold_ms']:.1f} | {r['warm_ms']:.1f} |"
              for r in rows]
    worst = max(rows, key=lambda r: r["cold_ms"])
    lines.append(f"\nslowest cold build: {worst['network']}, {worst['cold_ms']:.1f} ms (target ≤ 50 ms)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    return quick_main(measure, markdown, argv, "mnist_cnn and resnet18, 3 repeats (smoke test)")


if __name__ == "__main__":
    main()
