"""``python -m core memory MODEL``: a training step's peak memory, its parts and the largest tensors alive at the
peak; ``--timeline`` adds one line per step (forward, backward, optimizer update), ``--json`` gives the rows."""

from __future__ import annotations

import json

from .choices import DEFAULT_DTYPE, DEFAULT_OPTIMIZER
from .precision import OPTIMIZERS, PRECISIONS
from .report import Report
from .timeline import PART_LABELS, PARTS
from .units import format_bytes


def add_parser(sub) -> None:
    m = sub.add_parser("memory", help="a training step's memory: its peak, its parts, and (--timeline) each step")
    m.add_argument("model", help="a built-in network, an IR JSON file, an .onnx model or timm:NAME")
    m.add_argument("--input", help="per-sample input shape, e.g. 3x224x224")
    m.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    m.add_argument("--dtype", default=DEFAULT_DTYPE, help=f"one of {', '.join(PRECISIONS)}")
    m.add_argument("--optimizer", default=DEFAULT_OPTIMIZER, help=f"one of {', '.join(OPTIMIZERS)}")
    m.add_argument("--device", help="device id or name: compare the peak with its memory")
    m.add_argument("--file", help="a device JSON file instead of device_specs.json")
    m.add_argument("--timeline", action="store_true", help="one line per step of the training step")
    m.add_argument("--json", action="store_true", help="print JSON: the peak, its parts and every step")


def _mib(b: int) -> str:
    return f"{b / 2 ** 20:,.1f}"


def format_memory(report: Report, timeline: bool = False, capacity: tuple[str, int] | None = None) -> str:
    tl = report.timeline
    at = tl.parts(tl.peak_counts)
    shape = "×".join(map(str, report.input_shape))
    out = [f"{report.name}  input {report.batch_size}×{shape}  {report.dtype}  {report.optimizer}",
           f"Peak: {format_bytes(tl.peak)} in {tl.peak_where} (step {tl.peak_step + 1} of {tl.steps})"]
    if capacity is not None:
        name, cap = capacity
        verdict = "fits" if tl.peak <= cap else "does not fit"
        out.append(f"       {tl.peak / cap:.0%} of the {format_bytes(cap)} on {name}: {verdict}")
    width = max(len(label) for label in PART_LABELS.values())
    out += ["At the peak:"] + [f"  {PART_LABELS[p]:<{width}}  {format_bytes(at[p]):>12}" for p in PARTS]
    out.append("Largest tensors alive at the peak:")
    out += [f"  {what:<{width}}  {format_bytes(b):>12}" for what, b in tl.alive_at_peak()[:3]]
    if timeline:
        head = ["step", "phase", "layer", "total MiB"] + [f"{p} MiB" for p in PARTS]
        rows = [[str(r["step"] + 1), r["phase"], r["layer"], _mib(r["total"])] + [_mib(r[p]) for p in PARTS]
                for r in tl.rows()]
        widths = [max(len(x) for x in col) for col in zip(head, *rows)]
        line = "  ".join
        out += ["", line(h.ljust(w) if i < 3 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
        out += [line(x.ljust(w) if i < 3 else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths))) for r in rows]
    return "\n".join(out)


def run(args) -> int:
    from .api import analyze

    report = analyze(args.model, input_shape=args.input, batch_size=args.batch, dtype=args.dtype,
                     optimizer=args.optimizer)
    capacity = None
    if args.device is not None:
        from .devices import load_devices, resolve_device
        dev = resolve_device(args.device, load_devices(args.file))
        if dev.memory_capacity:
            capacity = (dev.name, int(dev.memory_capacity))
    tl = report.timeline
    if args.json:
        print(json.dumps({"model": report.name, "batch_size": report.batch_size, "dtype": report.dtype,
                          "optimizer": report.optimizer, "peak_bytes": tl.peak, "peak_step": tl.peak_step,
                          "peak_at": tl.peak_where, "parts": list(PARTS),
                          "alive_at_peak": [{"tensor": w, "bytes": b} for w, b in tl.alive_at_peak()],
                          "capacity_bytes": capacity[1] if capacity else None, "steps": tl.rows()}, indent=1))
    else:
        print(format_memory(report, args.timeline, capacity))
    return 0
