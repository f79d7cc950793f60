"""ONNX import (issue 16): every torchvision classifier in the zoo exported to ONNX by PyTorch and read back with
``core.onnx_import``, checked against the same network analysed from PyTorch.

Per network, in a worker process (a few networks per process; the largest alone):

* export — ``torch.onnx.export(model, (x,), f, dynamo=False, export_params=False, do_constant_folding=False)`` of
  torchvision's model as the zoo builds it (``core.bridge.torchvision_zoo.build``: the DEFAULT weights'
  architecture and crop size, weights=None, eval mode): no weights in the file (they are not needed to count), and
  BatchNorm kept (the default constant folding folds it into the convolutions, which changes the parameter count);
* import — ``core.onnx_import.import_onnx(path)``, timed (median of 3 reads of the file);
* against PyTorch — parameters vs ``sum(p.numel() for p in model.parameters())``, MACs vs
  ``FlopCounterMode`` total ÷ 2 (on the meta device);
* against the zoo (``core.analyze(name)``, which tests/test_zoo_data.py holds equal to PyTorch) — parameters, MACs,
  FLOPs, and the weighted layers in order: every conv and BatchNorm (op, output shape, parameters), and every
  linear layer (the zoo counts attention blocks as one op, ``multihead_attention`` / ``window_attention``, where
  the ONNX graph has their linears and matrix products);
* opaque nodes (ops without a cost rule) and warnings.

A second, short table reads files *with* their weights as ``torch.onnx.export``'s defaults write them (BatchNorm
folded): file size and import time, what an upload in the app costs.

Run: ``python benchmarks/bench_onnx.py [--quick] [--models resnet18,vit_b_16]``. Prints Markdown (about 15 minutes
on 2 shared cores: the largest networks take most of it to build and export).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core  # noqa: E402
from common import emit, median_ms, run_worker  # noqa: E402
from core import zoo  # noqa: E402

QUICK_MODELS = ("squeezenet1_1", "mobilenet_v3_small")
WITH_WEIGHTS = ("resnet18", "resnet50", "efficientnet_b0")
QUICK_WITH_WEIGHTS = ("squeezenet1_1",)
CHUNK = 6                     # networks per worker process (torch's import is paid once per process)
ALONE_PARAMS = 250_000_000    # a network larger than this gets a process of its own (ViT-H/14, RegNet-Y 128GF)
TIMEOUT_S = 1800
ATTENTION_OPS = ("multihead_attention", "window_attention")


def names() -> list[str]:
    """Every torchvision classifier the zoo ships (core.zoo.names() minus the MNIST pair)."""
    return [n for n in zoo.names() if n in zoo.index()]


# == the worker: export, import, compare ==========================================================================

def _layers(report, ops) -> list:
    return [(l.op, list(l.output_shape), l.params) for l in report.layers if l.op in ops]


def _first_difference(a: list, b: list) -> str | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"#{i}: {x[0]} {x[1]} {x[2]:,} vs {y[0]} {y[1]} {y[2]:,}"
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} layers"
    return None


def measure_one(name: str, folder: Path, with_weights: bool = False) -> dict:
    """Export ``name``, import it, and compare; a failure at any step is the record's ``error``."""
    import contextlib
    import io
    import warnings

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from core.bridge.torchvision_zoo import build
    from core.onnx_import import import_onnx

    row = {"model": name, "family": zoo.family(name), "input": list(zoo.index()[name]["input_shape"]),
           "with_weights": with_weights}
    step = "build"
    try:
        model = build(name, "cpu")
        shape = tuple(row["input"])
        row["params_torch"] = sum(p.numel() for p in model.parameters())
        step = "export"
        path = folder / f"{name}{'_w' if with_weights else ''}.onnx"
        t = time.perf_counter()
        kw = {} if with_weights else {"export_params": False, "do_constant_folding": False}
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (torch.zeros((1,) + shape),), str(path), dynamo=False, **kw)
        row["export_s"] = time.perf_counter() - t
        row["file_bytes"] = path.stat().st_size
        del model
        step = "import"
        result = import_onnx(path)
        row["import_ms"] = median_ms(lambda: import_onnx(path), 3 if row["file_bytes"] < 50e6 else 1)
        mine = core.analyze(result.network)
        row.update(ir_nodes=len(result.network.nodes), opaque=list(result.unsupported),
                   warnings=list(result.warnings), params=mine.totals["params"], macs=mine.totals["macs"],
                   flops=mine.totals["flops"])
        if with_weights:
            return row
        import onnx

        row["onnx_nodes"] = len(onnx.load(str(path), load_external_data=False).graph.node)
        step = "FlopCounterMode"
        meta = build(name, "meta")
        if any(not p.is_meta for p in meta.parameters()):      # RegNet is built on the CPU: moved afterwards
            meta = meta.to("meta")
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            meta(torch.empty((1,) + shape, device="meta"))
        row["macs_torch"] = counter.get_total_flops() // 2
        del meta
        step = "zoo"
        ref = core.analyze(name)
        row.update(params_zoo=ref.totals["params"], macs_zoo=ref.totals["macs"], flops_zoo=ref.totals["flops"],
                   unused_zoo=sum(l.params for l in ref.layers if l.op == "parameter" and "AuxLogits" in l.name),
                   attention_zoo=sum(1 for l in ref.layers if l.op in ATTENTION_OPS))
        row["conv_bn"] = _first_difference(_layers(mine, ("conv2d", "batch_norm")), _layers(ref, ("conv2d",
                                                                                                   "batch_norm")))
        row["linear"] = _first_difference(_layers(mine, ("linear",)), _layers(ref, ("linear",)))
        row["conv_bn_count"] = len(_layers(mine, ("conv2d", "batch_norm")))
        row["linear_count"] = len(_layers(mine, ("linear",)))
    except Exception as e:  # noqa: BLE001 — a network that fails is a result, with its reason
        text = " ".join(str(e).split())
        row["error"] = f"{step}: {type(e).__name__}: {text[:240]}"
    return row


def worker(spec: dict) -> None:
    with tempfile.TemporaryDirectory(prefix="bench_onnx_") as tmp:
        for name in spec["names"]:
            emit(measure_one(name, Path(tmp), spec.get("with_weights", False)))
            for f in Path(tmp).iterdir():       # the files are large with weights: one at a time
                f.unlink()


def _chunks(models: list[str]) -> list[list[str]]:
    out, current = [], []
    for name in models:
        if zoo.index()[name]["num_params"] > ALONE_PARAMS:
            out.append([name])
            continue
        current.append(name)
        if len(current) == CHUNK:
            out.append(current)
            current = []
    return out + ([current] if current else [])


def _run(models: list[str], with_weights: bool, progress) -> list[dict]:
    rows = []
    for chunk in _chunks(models):
        t = time.perf_counter()
        records, why = run_worker(__file__, {"names": chunk, "with_weights": with_weights}, TIMEOUT_S)
        got = {r["model"]: r for r in records}
        for name in chunk:
            row = got.get(name) or {"model": name, "family": zoo.family(name), "with_weights": with_weights,
                                    "input": list(zoo.index()[name]["input_shape"]),
                                    "error": f"the worker stopped: {why}"}
            rows.append(row)
            if progress:
                progress(row, time.perf_counter() - t)
    return rows


# == results ======================================================================================================

def verdict(row: dict) -> dict:
    """Which checks hold for one exported network. Parameters are PyTorch's less those the forward never uses
    (inception_v3's auxiliary classifier: the zoo lists them apart, the export leaves them out). Linear layers are
    compared where the zoo has no attention block (it counts one as a single op, the ONNX graph has its linears):
    ``linear`` is None there."""
    if "error" in row:
        return {}
    return {
        "params_torch": row["params"] == row["params_torch"] - row["unused_zoo"],
        "macs_torch": row["macs"] == row["macs_torch"],
        "params_zoo": row["params"] == row["params_zoo"] - row["unused_zoo"],
        "macs_zoo": row["macs"] == row["macs_zoo"],
        "flops_zoo": row["flops"] == row["flops_zoo"],
        "conv_bn": row["conv_bn"] is None,
        "linear": None if row["attention_zoo"] else row["linear"] is None,
        "no_opaque": not row["opaque"],
    }


def exact(v: dict) -> bool:
    """Parameters and MACs as PyTorch counts them, every conv/BatchNorm (and linear, where comparable) layer as the
    zoo has it, and no op left uncounted."""
    return bool(v) and v["params_torch"] and v["macs_torch"] and v["conv_bn"] and v["linear"] is not False \
        and v["no_opaque"]


def summarize(rows: list[dict]) -> dict:
    ok = [r for r in rows if "error" not in r]
    checks = [verdict(r) for r in ok]
    out = {"networks": len(rows), "failed": len(rows) - len(ok)}
    for key in ("params_torch", "macs_torch", "params_zoo", "macs_zoo", "flops_zoo", "conv_bn", "linear",
                "no_opaque"):
        out[key] = sum(c[key] is True for c in checks)
    out["linear_compared"] = sum(c["linear"] is not None for c in checks)
    out["exact"] = sum(exact(c) for c in checks)
    out["median_import_ms"] = statistics.median(r["import_ms"] for r in ok) if ok else None
    out["max_import"] = max(((r["import_ms"], r["model"]) for r in ok), default=None)
    return out


def measure(quick: bool = False, models=None, progress=None) -> dict:
    models = list(models) if models else list(QUICK_MODELS if quick else names())
    unknown = [m for m in models if m not in zoo.index()]
    if unknown:
        raise SystemExit(f"not a torchvision classifier in the zoo: {', '.join(unknown)}")
    t0 = time.perf_counter()
    rows = _run(models, False, progress)
    weighted = _run(list(QUICK_WITH_WEIGHTS if quick else WITH_WEIGHTS), True, progress)
    return {"rows": rows, "with_weights": weighted, "summary": summarize(rows), "versions": versions(),
            "seconds": time.perf_counter() - t0}


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for pkg in ("torch", "torchvision", "onnx"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} not installed")
    return ", ".join(parts)


def _mark(ok: bool) -> str:
    return "exact" if ok else "**differs**"


def _diff(a: int, b: int) -> str:
    return "exact" if a == b else f"{a - b:+,}"


def notes(row: dict) -> list[str]:
    """Why a check does not hold, where the reason is known."""
    out = []
    if "error" in row:
        return out
    if row["unused_zoo"]:
        out.append(f"the auxiliary classifier (AuxLogits, {row['unused_zoo']:,} parameters) does not run in eval "
                   "mode: the export leaves it out, PyTorch's count has it")
    if row["params"] != row["params_torch"] - row["unused_zoo"]:
        out.append(f"{row['params'] - row['params_torch'] + row['unused_zoo']:+,} parameters: tensors the model "
                   "keeps as float buffers (Swin v2's relative_coords_table) are graph inputs like its weights, "
                   "and ONNX does not say which are trained")
    if row["macs"] != row["macs_torch"] and row["macs"] == row["macs_zoo"]:
        out.append(f"MACs {row['macs'] - row['macs_torch']:+,} against FlopCounterMode, as the zoo: the "
                   "relative-position MLP runs on a constant table, once per forward whatever the batch; its "
                   "parameters are counted, its arithmetic is not")
    if row["attention_zoo"]:
        out.append(f"the zoo counts its {row['attention_zoo']} attention blocks as one op each, the ONNX graph has "
                   "their linear layers and matrix products: linear layers not compared")
    elif row["linear"] is not None:
        out.append(f"linear layers differ: {row['linear']}")
    if row["conv_bn"] is not None:
        out.append(f"conv/BatchNorm layers differ: {row['conv_bn']}")
    if row["opaque"]:
        kinds = sorted(set(row["opaque"]))
        out.append(f"{len(row['opaque'])} opaque nodes ({', '.join(kinds)}: F.normalize), their FLOPs not counted"
                   if set(kinds) <= {"ReduceL2", "Clip", "Expand"} else
                   f"{len(row['opaque'])} opaque nodes ({', '.join(kinds)}): no cost rule, their FLOPs not counted")
    if row["flops"] != row["flops_zoo"] and row["attention_zoo"]:
        out.append(f"FLOPs {row['flops'] - row['flops_zoo']:+,} against the zoo: attention counted op by op "
                   "(scaling, softmax, masks) where the zoo's block counts 6 FLOPs a score")
    return out


def markdown(results: dict) -> str:
    rows, s = results["rows"], results["summary"]
    ok = s["networks"] - s["failed"]
    lines = ["## ONNX import: torchvision networks exported by PyTorch and read back", "",
             "Every torchvision classifier in the zoo exported with `torch.onnx.export(model, (x,), f, dynamo=False, "
             "export_params=False, do_constant_folding=False)` at its published input size (no weights in the file; "
             "BatchNorm kept, not folded into the convolutions), then read by `core.onnx_import.import_onnx` "
             "(nothing is executed). Checked against PyTorch — parameters against `sum(p.numel())`, MACs against "
             "`FlopCounterMode` ÷ 2 — and against the zoo's analysis of the same network: FLOPs, and the weighted "
             "layers in order (every conv and BatchNorm: op, output shape, parameters; every linear layer). "
             "Import time is the median of 3 reads of the file. "
             f"Versions: {results['versions']}.", "",
             "### Summary", "",
             "| check | networks |", "|---|---:|",
             f"| exported and imported | {ok}/{s['networks']} |",
             "| parameters = PyTorch's `sum(p.numel())`, less those the forward never uses | "
             f"{s['params_torch']}/{ok} |",
             f"| MACs = `FlopCounterMode` ÷ 2 | {s['macs_torch']}/{ok} |",
             f"| MACs = the zoo's | {s['macs_zoo']}/{ok} |",
             f"| FLOPs = the zoo's | {s['flops_zoo']}/{ok} |",
             f"| conv and BatchNorm layers = the zoo's (op, shape, parameters, in order) | {s['conv_bn']}/{ok} |",
             "| linear layers = the zoo's (networks without attention blocks) | "
             f"{s['linear']}/{s['linear_compared']} |",
             f"| no opaque node | {s['no_opaque']}/{ok} |",
             f"| **exact: all of the above but FLOPs and the zoo's MACs** | **{s['exact']}/{ok}** |"]
    if s["median_import_ms"] is not None:
        ms, worst = s["max_import"]
        lines += ["", f"Import time: median {s['median_import_ms']:,.0f} ms, longest {ms:,.0f} ms ({worst})."]
    lines += ["", "### Per network", "",
              "| network | input | ONNX nodes → IR layers | params vs PyTorch (used) | MACs vs FlopCounterMode | "
              "conv/BN layers | linear layers | opaque | import ms | notes |",
              "|---|---|---:|---|---|---|---|---:|---:|---|"]
    failures = []
    for r in rows:
        label = r["model"]
        if "error" in r:
            failures.append(f"{label}: {r['error']}")
            lines.append(f"| {label} | {'×'.join(map(str, r['input']))} | — | fails [{len(failures)}] | | | | | | |")
            continue
        v = verdict(r)
        linear = "not compared" if v["linear"] is None else _mark(v["linear"])
        lines.append(
            f"| {label} | {'×'.join(map(str, r['input']))} | {r['onnx_nodes']:,} → {r['ir_nodes']:,} | "
            f"{_diff(r['params'], r['params_torch'] - r['unused_zoo'])} | {_diff(r['macs'], r['macs_torch'])} | "
            f"{_mark(v['conv_bn'])} ({r['conv_bn_count']}) | {linear} ({r['linear_count']}) | "
            f"{len(r['opaque'])} | {r['import_ms']:,.0f} | {'; '.join(notes(r))} |")
    weighted = results.get("with_weights") or []
    if weighted:
        lines += ["", "### Files with their weights (the export's defaults: BatchNorm folded into the convolutions)",
                  "", "`torch.onnx.export(model, (x,), f, dynamo=False)`: what an upload on the Network page reads. "
                  "Folding a BatchNorm into the conv before it drops its 2·C parameters and gives the conv a bias "
                  "of C: fewer parameters than PyTorch's model, the same MACs.", "",
                  "| network | file MB | import ms | params (PyTorch's) | MACs | opaque |",
                  "|---|---:|---:|---|---:|---:|"]
        for r in weighted:
            if "error" in r:
                failures.append(f"{r['model']} with weights: {r['error']}")
                lines.append(f"| {r['model']} | — | — | fails [{len(failures)}] | | |")
                continue
            lines.append(f"| {r['model']} | {r['file_bytes'] / 1e6:,.1f} | {r['import_ms']:,.0f} | "
                         f"{r['params']:,} ({r['params_torch']:,}) | {r['macs']:,} | {len(r['opaque'])} |")
    if failures:
        lines += ["", "Failures:", ""] + [f"{i}. {text}" for i, text in enumerate(failures, 1)]
    lines += ["", f"{len(rows)} networks, {results['seconds']:.0f} s (building and exporting them is most of it)."]
    return "\n".join(lines) + "\n"


def progress(row: dict, elapsed: float) -> None:
    if "error" in row:
        print(f"  {row['model']}: {row['error']}", file=sys.stderr, flush=True)
        return
    if row.get("with_weights"):
        print(f"  {row['model']} (with weights, {row['file_bytes'] / 1e6:.0f} MB): import {row['import_ms']:.0f} ms",
              file=sys.stderr, flush=True)
        return
    v = verdict(row)
    bad = [k for k, ok in v.items() if ok is False]
    print(f"  {row['model']}: {'exact' if not bad else 'differs: ' + ', '.join(bad)}, import {row['import_ms']:.0f} "
          f"ms (chunk {elapsed:.0f} s)", file=sys.stderr, flush=True)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_MODELS)} only (smoke test)")
    ap.add_argument("--models", help="comma-separated zoo names (default: every torchvision classifier)")
    args = ap.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return {}
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    results = measure(args.quick, models, progress=progress)
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
