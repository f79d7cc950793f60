"""``python -m core analyze NAME_OR_FILE [--input 3x224x224] [--batch N] [--dtype fp32] [--json]``.

Bad input prints one line naming what is wrong and exits 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import NetworkError
from .precision import OPTIMIZERS, PRECISIONS
from .report import CONVENTION, Report


def _fmt_int(v: int) -> str:
    return f"{v:,}"


def _fmt_bytes(b: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:,.0f} {unit}" if unit == "B" else f"{b:,.2f} {unit}"
        b /= 1024
    return f"{b} B"


def format_table(report: Report) -> str:
    """A torchinfo-like per-layer table with totals."""
    head = ("Layer", "Op", "Output shape", "Params", "MACs", "FLOPs fwd", "FLOPs bwd")
    rows = [(l.name, l.op, "×".join(map(str, l.output_shape)), _fmt_int(l.params), _fmt_int(l.macs),
             _fmt_int(l.flops), _fmt_int(l.backward_flops)) for l in report.layers]
    t = report.totals
    foot = ("Total", "", "", _fmt_int(t["params"]), _fmt_int(t["macs"]), _fmt_int(t["flops"]),
            _fmt_int(t["backward_flops"]))
    widths = [max(len(r[i]) for r in [head, foot, *rows]) for i in range(len(head))]

    def line(r):
        return "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    rule = "─" * len(line(head))
    shape = "×".join(map(str, report.input_shape))
    out = [f"{report.name}  input {report.batch_size}×{shape}  {report.dtype}", rule, line(head), rule,
           *map(line, rows), rule, line(foot), rule]
    gm = t["macs"] / 1e9
    out += [
        f"Parameters:        {t['params']:,} ({t['trainable_params']:,} trainable) = {_fmt_bytes(t['param_bytes'])}"
        + (f"  + {t['buffers']:,} buffer elements" if t["buffers"] else ""),
        f"Forward:           {gm:,.3f} GMACs = {t['flops'] / 1e9:,.3f} GFLOPs",
        f"Backward:          {t['backward_flops'] / 1e9:,.3f} GFLOPs   training step {t['training_flops'] / 1e9:,.3f} GFLOPs",
        f"Inference memory:  {_fmt_bytes(t['inference_bytes'])} (weights + peak live activations "
        f"{_fmt_bytes(t['activation_bytes'])} at {t['activation_peak_at']})",
        f"Training memory:   {_fmt_bytes(t['training_bytes'])} (weights, gradients, {report.optimizer} state "
        f"{_fmt_bytes(t['optimizer_bytes'])}, saved activations {_fmt_bytes(t['saved_activation_bytes'])})",
        f"Convention:        {CONVENTION}",
    ]
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m core", description="CNN performance calculator")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="per-layer parameters, MACs, FLOPs and memory")
    a.add_argument("model", help="a built-in network (see 'list') or a path to an IR JSON file")
    a.add_argument("--input", help="per-sample input shape, e.g. 3x224x224 (default: the network's)")
    a.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    a.add_argument("--dtype", default="fp32", help=f"one of {', '.join(PRECISIONS)} (default fp32)")
    a.add_argument("--optimizer", default="sgd_momentum", help=f"one of {', '.join(OPTIMIZERS)}")
    a.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a.add_argument("--explain", metavar="LAYER", help="print one layer's pen-and-paper arithmetic")
    sub.add_parser("list", help="list the built-in networks")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "list":
            from .zoo import names
            print("\n".join(names()))
            return 0
        from .api import analyze
        report = analyze(args.model, input_shape=args.input, batch_size=args.batch, dtype=args.dtype,
                         optimizer=args.optimizer)
        if args.explain:
            for line in report.explain(args.explain):
                print(line)
        elif args.json:
            print(json.dumps(report.to_dict(), indent=1))
        else:
            print(format_table(report))
    except NetworkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
