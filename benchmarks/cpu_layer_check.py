"""Where a CPU calibration's predictions miss, class of work by class of work (issue 44).

Calibrates this machine with ``calibrate()``'s defaults (or reads a saved spec), then times networks layer by layer
with forward hooks (``time_module(per_layer=True)``) at batch 1 and sums, per class of work, the measured layer
times against the calibrated device's per-layer predictions (``Estimate.layers``). The whole forward is timed too,
without hooks, beside the prediction. Prints a Markdown table and writes the rows as JSON.

    python benchmarks/cpu_layer_check.py                        # calibrate (30 s), then time
    python benchmarks/cpu_layer_check.py --spec spec.json       # a calibration saved with --out
    python benchmarks/cpu_layer_check.py --out spec.json        # keep the calibration for a second run
    python benchmarks/cpu_layer_check.py --networks resnet50:16:112 mobilenet_v2   # NAME[:BATCH[:SIZE]]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the self-check's networks, and bench_predict's at batch 1 that are small enough to time per layer quickly
NETWORKS = (("mnist_cnn", None), ("squeezenet1_0", (3, 64, 64)), ("resnet18", (3, 64, 64)), ("resnet18", None),
            ("mobilenet_v2", None), ("squeezenet1_0", None), ("efficientnet_b0", None), ("alexnet", None))


def parse_case(text: str) -> tuple:
    """``NAME[:BATCH[:SIZE]]`` → (name, shape or None, batch): ``resnet50:16:112`` is batch 16 on 3×112×112."""
    name, *rest = text.split(":")
    batch = int(rest[0]) if rest else 1
    shape = (3, int(rest[1]), int(rest[1])) if len(rest) > 1 else None
    return name, shape, batch


def check(spec: dict, networks=NETWORKS, repeats: int = 15) -> dict:
    """Per network: the whole forward measured and predicted, and per class of work Σ measured / Σ predicted layer
    seconds (hooked runs, medians per layer)."""
    import core
    from core.bridge.timing import time_module
    from core.bridge.to_torch import to_module
    from core.devices import Device

    device = Device(**{**spec, "user": True})
    out = []
    classes: dict = defaultdict(lambda: [0.0, 0.0, 0])
    for name, shape, *batch in networks:
        batch = batch[0] if batch else 1
        net = core.load_network(name)
        net = net.with_input_shape(shape) if shape else net
        report = core.analyze(net)
        est = core.estimate(report, device, batch_size=batch)
        module = to_module(net).eval()
        res = time_module(module, net.inputs[0][1], batch, passes=("forward",), warmup=3, repeats=repeats,
                          per_layer=True, report=report, threads=spec["calibration"]["threads"])
        whole = res.passes["forward"].median_s
        pred = {row["name"]: row for row in est.layers}
        per: dict = defaultdict(lambda: [0.0, 0.0, 0])
        for lname, seconds in (res.layers or {}).items():
            row = pred.get(lname)
            if row is None:
                continue
            cls = next(lw.work_class for lw in est.work.layers if lw.node.name == lname)
            for acc in (per[cls], classes[cls]):
                acc[0] += seconds
                acc[1] += row["forward_s"]
                acc[2] += 1
        out.append({"network": name, "shape": list(shape) if shape else None, "batch": batch, "measured_s": whole,
                    "predicted_s": est.totals["forward_s"], "error": est.totals["forward_s"] / whole - 1,
                    "hooked_sum_s": res.layer_sum_s,
                    "classes": {k: {"measured_s": v[0], "predicted_s": v[1], "layers": v[2]} for k, v in per.items()}})
    return {"networks": out,
            "classes": {k: {"measured_s": v[0], "predicted_s": v[1], "layers": v[2]} for k, v in classes.items()}}


def markdown(res: dict, host: dict) -> str:
    lines = [f"{host.get('cpu', '?')} ({host.get('cpu_capability', '?')}; {host.get('isa', '')}), torch "
             f"{host.get('torch', '?')}, oneDNN {host.get('onednn', '?')}", "",
             "| network | batch | input | measured ms | predicted ms | error |",
             "| --- | ---: | --- | ---: | ---: | ---: |"]
    for r in res["networks"]:
        shape = "×".join(map(str, r["shape"])) if r["shape"] else "own"
        lines.append(f"| {r['network']} | {r.get('batch', 1)} | {shape} | "
                     f"{r['measured_s'] * 1e3:.2f} | {r['predicted_s'] * 1e3:.2f} | {r['error']:+.0%} |")
    lines += ["", "| class of work | layers | Σ measured ms (hooked) | Σ predicted ms | predicted ÷ measured |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for k, v in sorted(res["classes"].items(), key=lambda kv: -kv[1]["measured_s"]):
        lines.append(f"| {k} | {v['layers']} | {v['measured_s'] * 1e3:.2f} | {v['predicted_s'] * 1e3:.2f} | "
                     f"{v['predicted_s'] / v['measured_s']:.2f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", help="a calibration spec (JSON) instead of calibrating now")
    ap.add_argument("--out", help="write the calibration spec here")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--networks", nargs="*", type=parse_case, help="NAME[:BATCH[:SIZE]] (default: batch 1, eight)")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    if args.spec:
        spec = json.loads(Path(args.spec).read_text())
    else:
        from core.bridge.calibrate import calibrate
        spec = calibrate(args.seconds, force=True)
        print(f"self-check: {spec['calibration']['held_out_error']:.0%} "
              + ", ".join(f"{k} {v:+.0%}" for k, v in spec["calibration"]["held_out"].items()))
    if args.out:
        Path(args.out).write_text(json.dumps(spec, indent=1))
    res = check(spec, args.networks or NETWORKS, args.repeats)
    print(markdown(res, spec["calibration"].get("host") or {}))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
