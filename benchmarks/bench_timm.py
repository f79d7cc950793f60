"""timm's convolutional models through the fx bridge (issue 16): which import exactly, which with opaque nodes, which
fail, and why.

Which models are convolutional is the rule of ``core.bridge.timm_models`` (by the timm module that defines them,
with its named hybrids left out). For each one, ``core.analyze("timm:NAME")`` at the model's default input size
(``pretrained_cfg["input_size"]``), batch 1, against PyTorch on the same architecture built on the meta device:

  * params  ``sum(p.numel() for p in model.parameters())``
  * MACs    ``torch.utils.flop_counter.FlopCounterMode`` total ÷ 2 of one forward of a meta input, batch 1, eval mode
  * shape   the model's output shape

**exact**: params, MACs and output shape equal and no opaque node. **opaque**: imports, but some calls have no cost
rule (listed; their FLOPs are not counted). **differs**: no opaque node, yet a number differs. **fails**: no network
(the reason, one line).

A full run writes ``core/timm_models.json`` (each model's family, default input size and status), which the app's
network picker reads without importing timm. Run: ``python benchmarks/bench_timm.py [--quick] [--models a,b]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.bridge import timm_models  # noqa: E402

QUICK_MODELS = ("resnet18", "mobilenetv3_small_050", "regnetx_002")


def reference(model, shape) -> tuple[int, int, tuple[int, ...]]:
    """PyTorch's own figures for ``model`` (on the meta device): params, FlopCounterMode MACs, per-sample output."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model.eval()
    params = sum(p.numel() for p in model.parameters())
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(torch.empty((1,) + tuple(shape), device="meta"))
    flops = counter.get_total_flops()
    assert flops % 2 == 0, flops            # FlopCounterMode counts 2 per multiply-add
    return params, flops // 2, tuple(out.shape[1:])


def check(name: str, family: str) -> dict:
    """One model: its status and figures, core's beside PyTorch's."""
    import core
    from core.errors import CalcError

    row = {"name": name, "family": family}
    t = time.perf_counter()
    try:
        model, shape = timm_models.build(name)
        row["input_size"] = list(shape)
        row["allocated"] = sum(not x.is_meta for x in (*model.parameters(), *model.buffers()))
        try:
            ref = reference(model, shape)
        except Exception as e:  # noqa: BLE001 — PyTorch itself fails on this model: say so, it is not core's
            raise CalcError(f"PyTorch reference failed: {timm_models._short(e)}") from None
        r = core.analyze(timm_models.PREFIX + name)
        net = r.compiled.network
        opaque = sorted({_call(model, str(n.get("target", n.name))) for n in net.nodes if n.op == "opaque"})
        del model
        out = r.compiled.by_name[net.outputs[0]].out_shape
        row.update(params=r.totals["params"], macs=r.totals["macs"], flops=r.totals["flops"], ref_params=ref[0],
                   ref_macs=ref[1], output=list(out), ref_output=list(ref[2]), opaque=opaque)
        equal = row["params"] == ref[0] and row["macs"] == ref[1] and tuple(out) == ref[2]
        row["status"] = "opaque" if opaque else "exact" if equal else "differs"
    except CalcError as e:
        row.update(status="fails", reason=e.reason if isinstance(e.reason, str) else str(e))
    except Exception as e:  # noqa: BLE001 — anything else is a gap to report, not a crash of the run
        row.update(status="fails", reason=f"unexpected {timm_models._short(e)}")
    row["seconds"] = time.perf_counter() - t
    return row


def _call(model, target: str) -> str:
    """What an opaque node called: a module's class (``nn.LeakyReLU``; the path is per layer) or a function."""
    try:
        module = model.get_submodule(target)
    except AttributeError:
        return target
    cls = type(module)
    return f"{cls.__module__.replace('torch.nn.modules.', 'nn.').split('.')[0]}.{cls.__qualname__}"


def progress(row: dict, done: int, total: int, elapsed: float) -> None:
    extra = {"opaque": lambda: ", ".join(row["opaque"][:4]), "fails": lambda: row["reason"][:160],
             "differs": lambda: _deltas(row)}.get(row["status"], lambda: "")()
    print(f"[{elapsed:6.0f} s {done}/{total}] {row['name']}: {row['status']} {extra}", file=sys.stderr, flush=True)


def measure(quick: bool = False, progress=progress, models=None) -> dict:
    """Every convolutional timm model (``QUICK_MODELS`` with ``quick``, or the ``models`` named); a full run
    writes ``core/timm_models.json``."""
    import timm

    warnings.filterwarnings("ignore")
    every = timm_models.convolutional_models()
    names = list(QUICK_MODELS if quick else models or every)
    t0 = time.perf_counter()
    rows = []
    for i, name in enumerate(names, 1):
        rows.append(check(name, every.get(name, "?")))
        timm_models._load.cache_clear()      # a full run would otherwise hold 32 large networks
        if progress:
            progress(rows[-1], i, len(names), time.perf_counter() - t0)
    out = {"timm": timm.__version__, "rows": rows, "seconds": time.perf_counter() - t0, "all": not (quick or models),
           "excluded_families": sorted(set(timm.list_modules()) - timm_models.CNN_FAMILIES),
           "hybrids": timm_models.HYBRIDS_IN_CNN_FAMILIES}
    if out["all"]:
        write_data(out)
    return out


def write_data(results: dict, path: Path = timm_models.DATA) -> None:
    """``core/timm_models.json``: what ``timm_models.names()`` lists, read without importing timm."""
    models = {}
    for r in results["rows"]:
        entry = {"family": r["family"], "input_size": r.get("input_size"), "status": r["status"]}
        if r["status"] == "opaque":
            entry["opaque"] = r["opaque"]
        if r["status"] == "fails":
            entry["reason"] = r["reason"]
        models[r["name"]] = entry
    doc = {"about": "timm's convolutional models (core.bridge.timm_models' rule) and how each imports; written by "
                    "benchmarks/bench_timm.py", "timm": results["timm"], "models": models}
    path.write_text(dump(doc), encoding="utf-8")


def dump(doc: dict) -> str:
    """The data file's text: one line per model (a diff of a re-run shows which models changed)."""
    head = {k: v for k, v in doc.items() if k != "models"}
    lines = [json.dumps(head)[:-1] + ', "models": {']
    models = list(doc["models"].items())
    lines += [f"  {json.dumps(n)}: {json.dumps(m)}" + ("," if i < len(models) - 1 else "")
              for i, (n, m) in enumerate(models)]
    return "\n".join(lines) + "\n}}\n"


def _deltas(r: dict) -> str:
    parts = []
    if r["params"] != r["ref_params"]:
        parts.append(f"params {r['params']:,} vs {r['ref_params']:,}")
    if r["macs"] != r["ref_macs"]:
        parts.append(f"MACs {r['macs']:,} vs {r['ref_macs']:,} ({(r['macs'] - r['ref_macs']) / r['ref_macs']:+.2%})"
                     if r["ref_macs"] else f"MACs {r['macs']:,} vs 0")
    if r["output"] != r["ref_output"]:
        parts.append(f"output {r['output']} vs {r['ref_output']}")
    return "; ".join(parts)


def _why(r: dict) -> str:
    """A row's reason for not being exact, for the table."""
    if r["status"] == "opaque":
        ops = ", ".join(f"`{o}`" for o in r["opaque"][:6]) + (f" (+{len(r['opaque']) - 6} more)"
                                                              if len(r["opaque"]) > 6 else "")
        return f"no cost rule for {ops}; " + (_deltas(r) or "params and MACs equal")
    if r["status"] == "differs":
        return _deltas(r)
    return r.get("reason", "").replace("|", "\\|")


def _allocated(rows: list[dict]) -> str:
    built = [r for r in rows if "allocated" in r]
    real = [r["name"] for r in built if r["allocated"]]
    if real:
        return f"Models that allocated real tensors while built on the meta device: {', '.join(real)}."
    return f"All {len(built)} models built held no real tensor (every parameter and buffer on the meta device)."


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "–"


def markdown(results: dict) -> str:
    rows = results["rows"]
    by_family = collections.defaultdict(list)
    for r in rows:
        by_family[r["family"]].append(r)
    counts = collections.Counter(r["status"] for r in rows)
    n = len(rows)
    scope = ("every convolutional model" if results.get("all") else
             f"{n} model{'s' * (n != 1)} ({', '.join(r['name'] for r in rows[:6])}{' …' if n > 6 else ''})")
    lines = [
        "## timm models through the fx bridge",
        "",
        f"timm {results['timm']}, {scope}: `core.analyze(\"timm:NAME\")` at the model's default input size, batch 1, "
        "against PyTorch on the same architecture built on the meta device (`pretrained=False`, nothing downloaded, "
        "no weights allocated): params `sum(p.numel())`, MACs `FlopCounterMode` ÷ 2, the output shape. **exact**: "
        "all three equal and no opaque node; **opaque**: imports, but some calls have no cost rule (their FLOPs are "
        "not counted); **differs**: no opaque node, a number differs; **fails**: no network.",
        "",
        f"**{counts['exact']} of {n} exact ({_pct(counts['exact'], n)})**, {counts['opaque']} with opaque nodes, "
        f"{counts['differs']} differ, {counts['fails']} fail; {results['seconds']:.0f} s in all "
        f"({results['seconds'] / max(n, 1):.2f} s a model: build, trace, convert, analyse, reference). "
        + _allocated(rows),
        "",
        "| family (timm module) | models | exact | opaque | differs | fails | exact % |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for fam in sorted(by_family):
        c = collections.Counter(r["status"] for r in by_family[fam])
        k = len(by_family[fam])
        lines.append(f"| {fam} | {k} | {c['exact']} | {c['opaque']} | {c['differs']} | {c['fails']} | "
                     f"{_pct(c['exact'], k)} |")
    lines.append(f"| **all** | **{n}** | **{counts['exact']}** | **{counts['opaque']}** | **{counts['differs']}** | "
                 f"**{counts['fails']}** | **{_pct(counts['exact'], n)}** |")
    rest = [r for r in rows if r["status"] != "exact"]
    if rest:
        lines += ["", "Not exact, each with its reason:", "", "| model | status | why |", "|---|---|---|"]
        for r in sorted(rest, key=lambda r: (r["status"], r["family"], r["name"])):
            lines.append(f"| {r['name']} | {r['status']} | {_why(r)} |")
    if results.get("all"):
        lines += ["", "Convolutional means: defined in one of timm's CNN modules "
                  f"({len(timm_models.CNN_FAMILIES)} families, the table above), minus the hybrids among them "
                  f"({', '.join(f'`{p}`' for p in results['hybrids'])}). Not convolutional, so not listed: "
                  + ", ".join(results["excluded_families"]) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_MODELS)}")
    ap.add_argument("--models", help="comma-separated model names (does not write core/timm_models.json)")
    args = ap.parse_args(argv)
    results = measure(quick=args.quick, models=args.models.split(",") if args.models else None)
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
