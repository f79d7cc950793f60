"""``python -m core graph MODEL [--color MEASURE] [--device D] [--batch N] [--dtype T] [--expand BLOCK]
[--collapse | --no-collapse] [--highlight LAYER …] [--svg]``: the network's graph as Graphviz DOT on stdout
(``core.netviz``), or as SVG where Graphviz's ``dot`` is installed. ``--color time`` and ``--color bound`` need
``--device``. Errors are ``CalcError``s: ``core.cli`` prints them as one line and exits 2.
"""

from __future__ import annotations

import argparse

from .choices import DEFAULT_DTYPE
from .errors import CalcError
from .netviz import MEASURES, NEEDS_ESTIMATE, draw, svg
from .precision import PRECISIONS


def add_parser(sub) -> None:
    g = sub.add_parser("graph", help="the network's graph as Graphviz DOT (or SVG), coloured by a cost")
    g.add_argument("model", help="a built-in network, an IR JSON file, an .onnx model or timm:NAME")
    g.add_argument("--color", default="flops", choices=MEASURES,
                   help="what colours the nodes: share of predicted forward time, FLOPs, parameters, activation "
                        "(output) bytes, or the term that limits each layer's time (bound); time and bound need "
                        "--device (default flops)")
    g.add_argument("--device", help="device id or name, for --color time or bound")
    g.add_argument("--input", help="per-sample input shape, e.g. 3x224x224")
    g.add_argument("--batch", type=int, default=1)
    g.add_argument("--dtype", default=DEFAULT_DTYPE, help=f"one of {', '.join(PRECISIONS)}")
    g.add_argument("--expand", action="append", metavar="BLOCK",
                   help="draw this collapsed block in full, by path (e.g. layer3); may be repeated")
    g.add_argument("--collapse", action=argparse.BooleanOptionalAction, default=None,
                   help="collapse runs of alike blocks into one node (default: when the network has more than "
                        "200 nodes)")
    g.add_argument("--highlight", action="append", metavar="LAYER", help="outline this layer; may be repeated")
    g.add_argument("--svg", action="store_true", help="print SVG (needs Graphviz's dot program)")


def run(args) -> int:
    from .api import analyze, estimate

    if args.color in NEEDS_ESTIMATE and not args.device:
        raise CalcError(f"--color {args.color} needs --device (a device id, see 'python -m core devices')",
                        field="device")
    report = analyze(args.model, input_shape=args.input, batch_size=args.batch, dtype=args.dtype)
    est = estimate(report, args.device, batch_size=args.batch, dtype=args.dtype) if args.device else None
    unknown = [h for h in args.highlight or () if h not in report.compiled.by_name]
    if unknown:
        raise CalcError("no such layer", field="highlight", value=unknown[0])
    text = draw(report, args.color, estimate=est, collapse=args.collapse, expand=args.expand or (),
                highlight=args.highlight or ()).dot
    print(svg(text) if args.svg else text, end="")
    return 0
