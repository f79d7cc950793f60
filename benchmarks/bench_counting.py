"""Counting accuracy (issue 7): params and multiply-adds of every torchvision classifier in the zoo, from core and
from the usual counters, against the figures torchvision publishes with its weights.

Published figures: ``torchvision.models.get_model_weights(name)`` → each entry's ``meta["num_params"]`` and
``meta["_ops"]`` (what torchvision's docs call GFLOPS are G multiply-adds, rounded to 3 decimals) at that entry's
crop size (``weights.transforms.keywords["crop_size"]``). All metadata, no download.

One row per model at the DEFAULT weights' crop size (the size core's zoo ships); a model whose other weights use
another crop size (RegNet-Y SWAG, ViT SWAG) gets a row per extra size, where core re-propagates its network at that
size (or, for a ViT whose position embedding is sized for one image, imports the torchvision model built for it).
Every tool gets the same input size, batch 1, real tensors on the CPU in eval mode under ``torch.no_grad()``:

  * core               ``core.analyze(name).totals`` (params, macs)
  * torchinfo          ``summary(model, input_data=x)`` → total_params, total_mult_adds
  * fvcore             ``parameter_count(model)[""]``, ``FlopCountAnalysis(model, x).total()`` (one "flop" = 1 MAC)
  * ptflops            ``get_model_complexity_info(model, …)`` with its default backend ("pytorch": module hooks,
                       which also count ReLU, BatchNorm and pooling as MACs), and the "aten" backend (mm and conv
                       only) as a second column
  * FlopCounterMode    ``torch.utils.flop_counter`` on meta tensors, total / 2 (PyTorch's own count; MACs only)

A tool that fails on a model gets its reason in the table; nothing is skipped silently.

Run: ``python benchmarks/bench_counting.py [--quick] [--models resnet18,vgg16]``. Prints Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import re
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core  # noqa: E402
from core import zoo  # noqa: E402

QUICK_MODELS = ("squeezenet1_1", "mobilenet_v3_small")
TOOLS = ("core", "torchinfo", "fvcore", "ptflops", "ptflops_aten", "flop_counter")
TOOL_TITLES = {"core": "core", "torchinfo": "torchinfo", "fvcore": "fvcore", "ptflops": "ptflops",
               "ptflops_aten": "ptflops (aten)", "flop_counter": "FlopCounterMode"}
MAC_ONLY_TOOLS = ("ptflops_aten", "flop_counter")      # count MACs, not parameters
WITHIN = 0.01                                           # "within 1 %"
# fvcore names the ops it could not count; those carrying multiply-adds explain a MAC shortfall (notes only)
_MAC_OP = re.compile(r"mm|matmul|conv|attention|linear|einsum", re.I)


# ---------------------------------------------------------------------------------------------------------------
# What torchvision publishes


def published(name: str) -> list[dict]:
    """One record per distinct crop size among ``name``'s weights, the DEFAULT weights' first."""
    import torchvision

    enum = torchvision.models.get_model_weights(name)
    entries = [enum.DEFAULT] + [w for w in enum if w is not enum.DEFAULT]
    out, seen = [], set()
    for w in entries:
        crop = w.transforms.keywords["crop_size"]
        crop = crop[0] if isinstance(crop, (list, tuple)) else crop
        if crop in seen:
            continue
        seen.add(crop)
        out.append({"weights": str(w), "crop": int(crop), "num_params": int(w.meta["num_params"]),
                    "gmacs": float(w.meta["_ops"]), "default": w is enum.DEFAULT})
    return out


# ---------------------------------------------------------------------------------------------------------------
# The tools: each takes the model and an input, returns (params or None, macs); raising means "failed"


def build(name: str, crop: int, device: str = "cpu"):
    """torchvision's model as its weights build it (aux heads; a ViT's image size), weights=None, eval mode."""
    import torch
    import torchvision

    kwargs = {"googlenet": {"aux_logits": False, "init_weights": False},
              "inception_v3": {"aux_logits": True, "init_weights": False}}.get(name, {})
    if name.startswith("vit_"):
        kwargs["image_size"] = crop
    try:
        with torch.device(device):
            return torchvision.models.get_model(name, weights=None, **kwargs).eval()
    except (NotImplementedError, RuntimeError):       # RegNet's init cannot run on meta tensors
        return torchvision.models.get_model(name, weights=None, **kwargs).eval().to(device)


def count_core(name: str, crop: int, default_crop: int):
    """The zoo network at its own size; at another size re-propagated, or imported afresh when it cannot be."""
    shape = (3, crop, crop)
    if crop == default_crop:
        r = core.analyze(name)
        note = "" if r.input_shape == shape else f"zoo input {r.input_shape} ≠ published {shape}"
        return r.totals["params"], r.totals["macs"], note
    try:
        r = core.analyze(name, input_shape=shape)
        return r.totals["params"], r.totals["macs"], "zoo network re-propagated at this size"
    except core.NetworkError as e:
        r = core.analyze(build(name, crop, "meta"), input_shape=shape)
        return (r.totals["params"], r.totals["macs"], "imported from torchvision built at this size (the zoo "
                f"network does not re-propagate: at {e.node}, {e.reason})")


def count_torchinfo(model, x):
    import torchinfo

    s = torchinfo.summary(model, input_data=x, verbose=0)
    return s.total_params, s.total_mult_adds, ""


def count_fvcore(model, x):
    from fvcore.nn import FlopCountAnalysis, parameter_count

    a = FlopCountAnalysis(model, x).unsupported_ops_warnings(False).uncalled_modules_warnings(False)
    macs = a.total()
    skipped = sorted(op for op in a.unsupported_ops() if _MAC_OP.search(op))
    note = f"skipped {', '.join(skipped)}" if skipped else ""
    return parameter_count(model)[""], macs, note


def _ptflops(model, x, backend: str):
    from ptflops import get_model_complexity_info

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        macs, params = get_model_complexity_info(model, tuple(x.shape[1:]), input_constructor=lambda _: x,
                                                 as_strings=False, print_per_layer_stat=False, backend=backend)
    if macs is None:      # ptflops prints the exception and returns None: pass its one-line reason on
        lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
        reason = next((ln for ln in lines if ln.startswith("<class")), lines[-1] if lines else "no result")
        raise RuntimeError(reason.replace("<class '", "").replace("'>", ""))
    return params, macs, ""


def count_ptflops(model, x):
    return _ptflops(model, x, "pytorch")


def count_ptflops_aten(model, x):
    params, macs, note = _ptflops(model, x, "aten")
    return None, macs, note


def count_flop_counter(meta_model, meta_x):
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        meta_model(meta_x)
    return None, counter.get_total_flops() // 2, ""


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:140]}"


# ---------------------------------------------------------------------------------------------------------------
# One model


def rel(value, ref) -> float | None:
    return None if value is None else (value - ref) / ref


def count_model(name: str, pub: dict, default_crop: int) -> dict:
    """Every tool's params and MACs for ``name`` at ``pub``'s crop size, and the relative errors."""
    import torch

    crop = pub["crop"]
    row = {"model": name, "crop": crop, "weights": pub["weights"], "default": pub["default"],
           "published_params": pub["num_params"], "published_gmacs": pub["gmacs"], "tools": {}}

    def record(tool, fn, *args):
        t = time.perf_counter()
        try:
            params, macs, note = fn(*args)
            res = {"params": params, "macs": int(macs), "note": note,
                   "params_err": rel(params, pub["num_params"]), "macs_err": rel(macs, pub["gmacs"] * 1e9),
                   # torchvision rounds _ops to 3 decimals: within half a unit of the last digit is a match
                   "macs_rounding_match": abs(macs / 1e9 - pub["gmacs"]) <= 0.0005 + 1e-12}
        except Exception as e:  # noqa: BLE001 — a tool failing on a model is a result, not a crash
            res = {"error": _short(e)}
        res["seconds"] = time.perf_counter() - t
        row["tools"][tool] = res

    record("core", count_core, name, crop, default_crop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build(name, crop, "cpu")
        x = torch.randn(1, 3, crop, crop)
        with torch.no_grad():
            for tool, fn in (("torchinfo", count_torchinfo), ("fvcore", count_fvcore),
                             ("ptflops", count_ptflops), ("ptflops_aten", count_ptflops_aten)):
                record(tool, fn, model, x)
        del model, x
        gc.collect()
        meta_model = build(name, crop, "meta")
        with torch.no_grad():
            record("flop_counter", count_flop_counter, meta_model, torch.empty(1, 3, crop, crop, device="meta"))
    return row


# ---------------------------------------------------------------------------------------------------------------
# Summary and Markdown


def summarize(rows: list[dict]) -> dict:
    """Per tool and quantity: how many compared, failed, median and max |relative error|, count within 1 %."""
    out = {}
    for tool in TOOLS:
        for qty in ("params", "macs"):
            if qty == "params" and tool in MAC_ONLY_TOOLS:
                continue
            errs, failed, worst = [], 0, None
            rounding = 0
            for r in rows:
                res = r["tools"].get(tool)
                if res is None:
                    continue
                if "error" in res:
                    failed += 1
                    continue
                signed = res[f"{qty}_err"]
                errs.append(abs(signed))
                rounding += qty == "macs" and res["macs_rounding_match"]
                if worst is None or abs(signed) > abs(worst[0]):
                    worst = (signed, r["model"] if r["default"] else f"{r['model']}@{r['crop']}")
            out[(tool, qty)] = {
                "compared": len(errs), "failed": failed,
                "median_abs_err": statistics.median(errs) if errs else None,
                "max_abs_err": abs(worst[0]) if worst else None, "worst_err": worst[0] if worst else None,
                "worst_model": worst[1] if worst and worst[0] else None,
                "within_1pct": sum(e <= WITHIN for e in errs),
                "exact": sum(e == 0 for e in errs) if qty == "params" else rounding,
            }
    return out


def _pct(e: float | None) -> str:
    if e is None:
        return "—"
    if e == 0:
        return "0"
    s = f"{e * 100:+.2f}%"
    return s.replace("-", "−") if s not in ("+0.00%", "-0.00%") else ("+<0.01%" if e > 0 else "−<0.01%")


def _cell(res: dict | None, qty: str, footnotes: list[str]) -> str:
    if res is None:
        return "—"
    if "error" in res:
        footnotes.append(res["error"])
        return f"fails [{len(footnotes)}]"
    return _pct(res[f"{qty}_err"])


def markdown(results: dict) -> str:
    rows, summary = results["rows"], results["summary"]
    lines = ["## Counting accuracy: params and multiply-adds against torchvision's published figures", "",
             "Relative error (tool − published) / published, per model, at the published input size (the weights' "
             "crop size), batch 1. Published: `weights.meta[\"num_params\"]` and `weights.meta[\"_ops\"]` "
             "(G multiply-adds, rounded by torchvision to 3 decimals: for a small network that rounding alone is up "
             "to ±0.9 %, so MAC errors are also judged against it). A row `name@size` is another published weights "
             "entry of the same model at another crop size. torchinfo, fvcore and ptflops run a real forward pass "
             "on the CPU; FlopCounterMode runs on meta tensors. ptflops' default backend counts ReLU, BatchNorm and "
             "pooling as MACs too; its aten backend counts only matmul and convolution. "
             f"Versions: {results['versions']}.", ""]

    def label(r):
        return r["model"] if r["default"] else f"{r['model']}@{r['crop']}"

    lines += ["### Summary", "",
              "| tool | quantity | compared | failed | median abs error | max abs error (model) | within 1 % | "
              "exact (params) / within published rounding (MACs) |",
              "|---|---|---:|---:|---:|---|---:|---:|"]
    for (tool, qty), s in summary.items():
        if not s["compared"] and not s["failed"]:
            continue
        worst = f"{_pct(s['worst_err'])} ({s['worst_model']})" if s["worst_model"] else _pct(s["worst_err"])
        med = _pct(s["median_abs_err"]).lstrip("+")
        lines.append(f"| {TOOL_TITLES[tool]} | {qty} | {s['compared']} | {s['failed']} | {med} | {worst} | "
                     f"{s['within_1pct']}/{s['compared']} | {s['exact']}/{s['compared']} |")

    footnotes: list[str] = []
    param_tools = [t for t in TOOLS if t not in MAC_ONLY_TOOLS]
    lines += ["", "### Parameters", "",
              "| model | input | published | " + " | ".join(TOOL_TITLES[t] for t in param_tools) + " |",
              "|---|---:|---:|" + "---:|" * len(param_tools)]
    for r in rows:
        cells = [_cell(r["tools"].get(t), "params", footnotes) for t in param_tools]
        lines.append(f"| {label(r)} | {r['crop']} | {r['published_params']:,} | " + " | ".join(cells) + " |")
    lines += ["", "### Multiply-adds", "",
              "| model | input | published (G) | core (G) | " + " | ".join(TOOL_TITLES[t] for t in TOOLS) + " |",
              "|---|---:|---:|---:|" + "---:|" * len(TOOLS)]
    for r in rows:
        c = r["tools"]["core"]
        core_g = f"{c['macs'] / 1e9:,.3f}" if "macs" in c else "—"
        cells = [_cell(r["tools"].get(t), "macs", footnotes) for t in TOOLS]
        lines.append(f"| {label(r)} | {r['crop']} | {r['published_gmacs']:,.3f} | {core_g} | " + " | ".join(cells)
                     + " |")
    notes = [(label(r), TOOL_TITLES[t], res["note"]) for r in rows for t, res in r["tools"].items()
             if res.get("note")]
    if footnotes:
        lines += ["", "Failures:", ""] + [f"{i}. {text}" for i, text in enumerate(footnotes, 1)]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {m}, {t}: {n}" for m, t, n in notes]
    lines += ["", f"{len(rows)} rows, {results['seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for pkg in ("torch", "torchvision", "torchinfo", "fvcore", "ptflops"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} not installed")
    return ", ".join(parts)


def measure(quick: bool = False, models=None, progress=None) -> dict:
    """Count every model (``models``: names; default all of the zoo's torchvision classifiers)."""
    names = list(models) if models else list(QUICK_MODELS if quick else sorted(zoo.index()))
    unknown = [n for n in names if n not in zoo.index()]
    if unknown:
        raise SystemExit(f"not a torchvision classifier in the zoo: {', '.join(unknown)}")
    t0 = time.perf_counter()
    rows = []
    for name in names:
        pubs = published(name)
        default_crop = pubs[0]["crop"]
        for pub in pubs if not quick else pubs[:1]:
            row = count_model(name, pub, default_crop)
            rows.append(row)
            if progress:
                progress(row)
    return {"rows": rows, "summary": summarize(rows), "versions": versions(),
            "seconds": time.perf_counter() - t0}


def progress(row: dict) -> None:
    """One line per counted row on stderr, while a long run goes on."""
    errs = "  ".join(f"{t}: " + ("fail" if "error" in r else f"{r['macs_err'] * 100:+.2f}%")
                     for t, r in row["tools"].items())
    print(f"  {row['model']}@{row['crop']}  MACs {errs}", file=sys.stderr, flush=True)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"two small models ({', '.join(QUICK_MODELS)}), "
                    "default crop size only (smoke test)")
    ap.add_argument("--models", help="comma-separated zoo names, e.g. resnet18,vgg16 (default: all 80)")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    results = measure(args.quick, models, progress=progress)
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
