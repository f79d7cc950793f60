"""``python -m core analyze NAME_OR_FILE [--input 3x224x224] [--batch N] [--dtype fp32] [--json]``.

Bad input (a value, a file, an argparse error) prints one line naming what is wrong and exits 2; never a traceback.
An internal error is one line too (exit 1; ``CNN_CALC_DEBUG=1`` shows the traceback). Files named on the command
line are read only if they are regular files under a size cap (``core.files``). A network that does no work (a
single flatten) has no throughput: ``estimate`` prints "— samples/s" and ``--json`` gives ``null``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .choices import (
    ALLREDUCE,
    COMM_MODELS,
    CONV_ALGORITHMS,
    DEFAULT_DTYPE,
    DEFAULT_OPTIMIZER,
    INPUT_PIPELINES,
    LAUNCHES,
    PROCESSES,
    REDUCE_DTYPES,
    VARIANTS,
)
from .cli_text import format_devices, format_estimate, format_table
from .errors import CalcError, one_line
from .precision import OPTIMIZERS, PRECISIONS


class UsageError(Exception):
    """A command line argparse refuses: printed as one line (``error: <what is wrong>``), exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line naming what is wrong instead of usage + error (``--help``
    still prints the usage)."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m core", description="CNN performance calculator")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="per-layer parameters, MACs, FLOPs and memory")
    a.add_argument("model", help="a built-in network (see 'list'), a path to an IR JSON file or an .onnx model, "
                                 "or timm:NAME (a timm model, built without weights)")
    a.add_argument("--input", help="per-sample input shape, e.g. 3x224x224 (default: the network's)")
    a.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    a.add_argument("--dtype", default=DEFAULT_DTYPE, help=f"one of {', '.join(PRECISIONS)} (default {DEFAULT_DTYPE})")
    a.add_argument("--optimizer", default=DEFAULT_OPTIMIZER, help=f"one of {', '.join(OPTIMIZERS)}")
    a.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a.add_argument("--explain", metavar="LAYER", help="print one layer's pen-and-paper arithmetic")
    sub.add_parser("list", help="list the built-in networks")

    d = sub.add_parser("devices", help="the hardware database with figures and sources")
    d.add_argument("--json", action="store_true")
    d.add_argument("--file", help="a device JSON file instead of device_specs.json")

    e = sub.add_parser("estimate", help="PALEO time estimate and roofline on a device")
    e.add_argument("model", help="a built-in network, an IR JSON file, an .onnx model or timm:NAME")
    e.add_argument("--device", required=True, help="device id or name (case-insensitive)")
    e.add_argument("--input", help="per-sample input shape, e.g. 3x224x224")
    e.add_argument("--batch", type=int, default=1)
    e.add_argument("--dtype", default=DEFAULT_DTYPE, help=f"one of {', '.join(PRECISIONS)}")
    e.add_argument("--optimizer", default=DEFAULT_OPTIMIZER, help=f"one of {', '.join(OPTIMIZERS)}")
    e.add_argument("--ppp", type=float, default=1.0,
                   help="platform percent of peak for compute, from 0.001 to 1; 1.0 = datasheet peak (default); "
                        "a PPP other than 1 gives classic PALEO")
    e.add_argument("--ppp-memory", type=float, default=None, help="PPP for memory bandwidth (default: --ppp)")
    e.add_argument("--variant", default=VARIANTS[0], choices=VARIANTS,
                   help="auto (default): predicted on a GPU the time model was fitted for, else paleo; predicted: "
                        "the fitted GPU model; paleo: read + compute + write per layer at a PPP; roofline: "
                        "max(compute, memory)")
    e.add_argument("--conv-algo", default=CONV_ALGORITHMS[0], choices=CONV_ALGORITHMS)
    e.add_argument("--launch", default=LAUNCHES[0], choices=LAUNCHES,
                   help="predicted model: eager PyTorch (a fitted host cost per kernel, the default) or cuda_graphs "
                        "(a captured pass replayed: no per-kernel host cost)")
    e.add_argument("--process", default=PROCESSES[0], choices=PROCESSES,
                   help="a calibrated Linux CPU: fresh (default), a script's first network; warm, a process that "
                        "has run other networks (a notebook, a loop over networks): fewer fresh pages")
    e.add_argument("--fused", action="store_true", help="elementwise and norm layers do not round-trip memory")
    e.add_argument("--workers", type=int, default=1, help="data-parallel workers")
    e.add_argument("--link", help="interconnect id or name for --workers > 1")
    e.add_argument("--ppp-comm", type=float, default=1.0, help="PPP of the interconnect")
    e.add_argument("--allreduce", default=ALLREDUCE[0], choices=ALLREDUCE)
    e.add_argument("--comm-model", default=COMM_MODELS[0], choices=COMM_MODELS,
                   help="ddp (default): PyTorch DDP's buckets all-reduced during the backward at NCCL's achieved "
                        "bandwidth, plus synchronisation; paleo: the whole all-reduce after the backward at the "
                        "datasheet rate")
    e.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket size in MiB (default 25)")
    e.add_argument("--reduce-dtype", default=REDUCE_DTYPES[0], choices=REDUCE_DTYPES,
                   help="what the all-reduce moves (auto: DDP's choice, fp32 gradients under mixed precision)")
    e.add_argument("--input-pipeline", default=INPUT_PIPELINES[0], choices=INPUT_PIPELINES,
                   help="where a step's images come from: synthetic (default, no wait), cpu or dali decoding")
    e.add_argument("--cpu-cores", type=int, default=None, help="host CPU cores per node decoding images")
    e.add_argument("--nodes", type=int, default=1, help="nodes the --workers are spread over (default 1)")
    e.add_argument("--node-link", help="interconnect id or name between nodes, for --nodes > 1 (e.g. ib-hdr)")
    e.add_argument("--nics", type=int, default=1, help="network cards per node on --node-link (default 1)")
    e.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads the estimate is for: a calibrated CPU predicts only the count it was "
                        "calibrated at (the default); another count is refused")
    e.add_argument("--file", help="a device JSON file instead of device_specs.json")
    e.add_argument("--json", action="store_true")
    e.add_argument("--explain", action="store_true",
                   help="say how the times are made: the model's terms, the basis of its typical error, what it was "
                        "fitted on, and the forward inside a training step")
    from . import cli_graph, cli_memory
    cli_graph.add_parser(sub)
    cli_memory.add_parser(sub)

    from .bridge import cli_ext  # time and calibrate: torch is imported only when they run
    cli_ext.add_subcommands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status: 0, 2 for bad input (one line on stderr, ``error: ...``), 1 for an
    internal error (one line too; ``CNN_CALC_DEBUG=1`` shows its traceback), 130 when interrupted."""
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as e:         # --help printed the usage
            return e.code if isinstance(e.code, int) else 0
        return _run(args)
    except (CalcError, UsageError) as e:
        _fail(f"error: {e}")
        return 2
    except KeyboardInterrupt:
        _fail("cancelled")
        return 130
    except BrokenPipeError:             # `python -m core analyze resnet152 | head`: the reader left
        _silence_stdout()
        return 0
    except ModuleNotFoundError as e:    # an install without a requirement (a bare CUDA image lacked jsonschema)
        if os.environ.get("CNN_CALC_DEBUG"):
            raise
        _fail(f"error: the Python package '{e.name}' is not installed; this command needs it: pip install -r "
              "requirements.txt (the README's set-up)")
        return 1
    except Exception as e:              # a bug, not bad input: still one line, no traceback
        if os.environ.get("CNN_CALC_DEBUG"):
            raise
        _fail(f"internal error: {type(e).__name__}: {one_line(str(e))[:500]} (set CNN_CALC_DEBUG=1 to see where)")
        return 1


def _fail(line: str) -> None:
    print(line, file=sys.stderr)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _run(args) -> int:
    if args.cmd in ("time", "calibrate"):
        from .bridge import cli_ext
        return cli_ext.dispatch(args)
    if args.cmd == "graph":
        from . import cli_graph
        return cli_graph.run(args)
    if args.cmd == "memory":
        from . import cli_memory
        return cli_memory.run(args)
    if args.cmd == "list":
        from .zoo import names
        print("\n".join(names()))
        return 0
    if args.cmd in ("devices", "estimate"):
        from .devices import load_devices
        db = load_devices(args.file)
        if args.cmd == "devices":
            print(json.dumps({"devices": [d.to_dict() for d in db.devices.values()],
                              "interconnects": [i.to_dict() for i in db.interconnects.values()],
                              "problems": list(db.problems)}, indent=1) if args.json else format_devices(db))
            return 0
        from .api import estimate
        est = estimate(args.model, args.device, batch_size=args.batch, dtype=args.dtype, ppp=args.ppp,
                       ppp_memory=args.ppp_memory, optimizer=args.optimizer, variant=args.variant,
                       conv_algorithm=args.conv_algo, fused=args.fused, workers=args.workers, link=args.link,
                       ppp_comm=args.ppp_comm, allreduce=args.allreduce, launch=args.launch, input_shape=args.input,
                       threads=args.threads, db=db, comm_model=args.comm_model, bucket_mb=args.bucket_mb,
                       reduce_dtype=args.reduce_dtype, input_pipeline=args.input_pipeline, cpu_cores=args.cpu_cores,
                       nodes=args.nodes, node_link=args.node_link, nics=args.nics, process=args.process)
        text = (json.dumps(est.to_dict(), indent=1, allow_nan=False) if args.json
                else format_estimate(est, explain=args.explain))
        print(text)
        return 0
    from .api import analyze
    report = analyze(args.model, input_shape=args.input, batch_size=args.batch, dtype=args.dtype,
                     optimizer=args.optimizer)
    if args.explain is not None:
        text = "\n".join(str(line) for line in report.explain(args.explain))
    elif args.json:
        text = json.dumps(report.to_dict(), indent=1)
    else:
        text = format_table(report)
    print(text)
    return 0
