"""Analysis speed (issue 7): ``core.analyze`` against torchinfo, fvcore, ptflops and PyTorch's FlopCounterMode, in
one run, on ResNet-50, VGG-16, ResNet-152, MobileNetV3-Large and EfficientNet-B7 (600 px) at batch 1 and 64.

core (pure Python, in this process), median of many calls:
  * warm        ``core.analyze(name, batch_size=b).totals`` — the network's compiled form cached, as users get it;
  * + rows      the same, also building every per-layer row (``.layers``, what a table shows);
  * cold        compiled from scratch (``graph._compile_cached`` cleared before each call; the IR already loaded);
  * cold + load also loading the shipped IR (``zoo.get``'s cache cleared too): a session's first call.

The torch tools, each in its own process (a tool that runs out of memory or patches torch cannot disturb the others),
the model built once outside the timing (weights=None, eval mode) and the input tensor made outside it too, one
untimed warm-up call at batch 1, then the median of up to ``--repeats`` calls per batch size (fewer when one call
already takes longer than ``--budget`` seconds; the table gives n). torch's default thread count, and every call
under ``torch.no_grad()``:
  * torchinfo        ``summary(model, input_data=x, verbose=0)`` — a real forward pass;
  * fvcore           ``FlopCountAnalysis(model, x).total()`` — a real forward pass, traced by torch.jit;
  * ptflops          ``get_model_complexity_info(model, …)``, default ("pytorch") backend — a real forward pass;
  * FlopCounterMode  ``torch.utils.flop_counter`` on meta tensors (model and input built on the meta device): no
                     arithmetic is done, which FlopCounterMode supports; the others are given real tensors.

A batch that would not fit in memory (core's own inference-memory estimate against MemAvailable), or whose one call
is predicted (batch-1 time × batch) to exceed ``--max-call`` seconds, is not run, and the table says why.

Target: core ≤ 5 ms everywhere and ≥ 100× faster than torchinfo.
Run: ``python benchmarks/bench_tools.py [--quick]``. Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core  # noqa: E402
from common import emit, median_ms, run_worker  # noqa: E402
from core import graph, zoo  # noqa: E402

MODELS = ("resnet50", "vgg16", "resnet152", "mobilenet_v3_large", "efficientnet_b7")
BATCHES = (1, 64)
TOOLS = ("torchinfo", "fvcore", "ptflops", "flop_counter")
TOOL_TITLES = {"torchinfo": "torchinfo", "fvcore": "fvcore", "ptflops": "ptflops",
               "flop_counter": "FlopCounterMode (meta)"}
TARGET_MS = 5.0          # core, every model and batch
TARGET_RATIO = 100.0     # torchinfo time / core time


# ---------------------------------------------------------------------------------------------------------------
# core, in this process


def time_core(name: str, batch: int, repeat: int) -> dict:
    net = zoo.get(name)
    _ = core.analyze(name, batch_size=batch).layers      # compile once and touch every code path

    def cold():
        graph._compile_cached.cache_clear()
        _ = core.analyze(net, batch_size=batch).totals       # a property: reading it does the work

    def cold_load():
        zoo.get.cache_clear()
        graph._compile_cached.cache_clear()
        _ = core.analyze(name, batch_size=batch).totals

    out = {
        "warm_ms": median_ms(lambda: core.analyze(name, batch_size=batch).totals, repeat),
        "rows_ms": median_ms(lambda: core.analyze(name, batch_size=batch).layers, max(3, repeat // 2)),
        "cold_ms": median_ms(cold, max(3, repeat // 5)),
        "cold_load_ms": median_ms(cold_load, max(3, repeat // 10)),
    }
    core.analyze(name, batch_size=batch)                 # leave the cache warm for whoever comes next
    return out


# ---------------------------------------------------------------------------------------------------------------
# a torch tool, in a worker process: ``python bench_tools.py --worker '<json spec>'``


def _limit_memory(limit_bytes: int) -> None:
    """Make running out of memory a Python error (allocation fails) rather than a kill, and, if the kernel must kill
    something anyway, this worker first."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, limit_bytes))
    except (ValueError, OSError):
        pass
    try:
        Path("/proc/self/oom_score_adj").write_text("1000")
    except OSError:
        pass


def _tool_call(tool: str):
    """The timed call for ``tool``: f(model, x) → MACs (as the tool reports them) for that batch."""
    if tool == "torchinfo":
        import torchinfo

        return lambda m, x: torchinfo.summary(m, input_data=x, verbose=0).total_mult_adds
    if tool == "fvcore":
        from fvcore.nn import FlopCountAnalysis

        def fvcore_call(m, x):
            a = FlopCountAnalysis(m, x).unsupported_ops_warnings(False).uncalled_modules_warnings(False)
            return a.total()
        return fvcore_call
    if tool == "ptflops":
        import contextlib
        import io

        from ptflops import get_model_complexity_info

        def ptflops_call(m, x):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                macs, _ = get_model_complexity_info(m, tuple(x.shape[1:]), input_constructor=lambda _: x,
                                                    as_strings=False, print_per_layer_stat=False)
            if macs is None:
                raise RuntimeError(out.getvalue().strip().splitlines()[1] if out.getvalue().strip() else "failed")
            return macs * x.shape[0]             # ptflops reports per sample
        return ptflops_call
    if tool == "flop_counter":
        from torch.utils.flop_counter import FlopCounterMode

        def flop_counter_call(m, x):
            with FlopCounterMode(display=False) as counter:
                m(x)
            return counter.get_total_flops() // 2
        return flop_counter_call
    raise ValueError(f"unknown tool {tool!r}; one of {', '.join(TOOLS)}")


def worker(spec: dict) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    _limit_memory(spec["memory_limit"])
    import torch

    from core.bridge.torchvision_zoo import build

    device = "meta" if spec["tool"] == "flop_counter" else "cpu"
    shape = tuple(core.analyze(spec["model"]).input_shape)
    model = build(spec["model"], device)
    call = _tool_call(spec["tool"])

    def x_of(batch):
        return torch.empty((batch, *shape), device="meta") if device == "meta" else torch.randn(batch, *shape)

    with torch.no_grad():
        t = time.perf_counter()
        call(model, x_of(1))                               # warm-up: imports, tracing caches, kernels
        emit({"warmup_s": time.perf_counter() - t, "threads": torch.get_num_threads()})
        per_sample_s = None
        for batch in spec["batches"]:                      # ascending
            if per_sample_s is not None and per_sample_s * batch > spec["max_call_s"]:
                s = per_sample_s * batch
                predicted = f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"
                first = spec["batches"][0]
                emit({"batch": batch, "error": f"not run: one call predicted ≈{predicted} "
                                               f"(batch-{first} time × {batch / first:g})"})
                continue
            x, times, macs = x_of(batch), [], None
            try:
                while len(times) < spec["repeats"] and (not times or sum(times) < spec["budget_s"] * 1e3):
                    t = time.perf_counter()
                    macs = call(model, x)
                    times.append((time.perf_counter() - t) * 1e3)
                emit({"batch": batch, "times_ms": times, "macs": int(macs)})
                if per_sample_s is None:
                    per_sample_s = statistics.median(times) / 1e3 / batch
            except Exception as e:  # noqa: BLE001 — out of memory, an unsupported op: a result to report
                emit({"batch": batch, "error": f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"})
            del x


def _mem_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def time_tool(tool: str, name: str, batches, repeats: int, budget_s: float, max_call_s: float,
              timeout_s: float) -> tuple[dict, int | None]:
    """({batch: {"times_ms", "median_ms", "n", "macs"} or {"skipped": reason}}, torch's thread count) for one tool
    on one model."""
    out, run, threads = {}, [], None
    avail = _mem_available()
    for b in batches:
        need = core.analyze(name, batch_size=b).totals["inference_bytes"]
        if tool != "flop_counter" and 1.5 * need > avail:
            out[b] = {"skipped": f"not run: needs ≈{need / 2**30:.1f} GiB (core's estimate), "
                                 f"{avail / 2**30:.1f} GiB available"}
        else:
            run.append(b)
    if not run:
        return out, threads
    spec = {"tool": tool, "model": name, "batches": sorted(run), "repeats": repeats, "budget_s": budget_s,
            "max_call_s": max_call_s, "memory_limit": int(avail * 0.85)}
    records, err = run_worker(__file__, spec, timeout_s)
    for r in records:
        if "warmup_s" in r:
            threads = r["threads"]
        elif "error" in r:
            out[r["batch"]] = {"skipped": r["error"]}
        else:
            out[r["batch"]] = {"times_ms": r["times_ms"], "median_ms": statistics.median(r["times_ms"]),
                               "n": len(r["times_ms"]), "macs": r["macs"]}
    for b in run:
        out.setdefault(b, {"skipped": f"failed: {err}"})
    return out, threads


# ---------------------------------------------------------------------------------------------------------------


def measure(quick: bool = False, models=MODELS, batches=BATCHES, core_repeat: int = 50, repeats: int = 3,
            budget_s: float = 60.0, max_call_s: float = 1800.0, timeout_s: float = 3600.0, tools=TOOLS,
            progress=None) -> dict:
    """Time core and every tool on ``models`` at ``batches``; ``quick``: mobilenet_v3_small at batch 1 and 2, one
    call per tool (a smoke test)."""
    if quick:
        models, batches, core_repeat, repeats, budget_s = ("mobilenet_v3_small",), (1, 2), 5, 1, 10.0
    rows, threads = [], None
    for name in models:
        per_tool = {}
        for tool in tools:
            per_tool[tool], tool_threads = time_tool(tool, name, batches, repeats, budget_s, max_call_s, timeout_s)
            threads = threads or tool_threads
            if progress:
                progress(f"{name} {tool}: " + ", ".join(
                    f"b{b} {r['median_ms']:.0f} ms" if "median_ms" in r else f"b{b} {r['skipped']}"
                    for b, r in per_tool[tool].items()))
        for b in batches:
            c = time_core(name, b, core_repeat)
            row = {"model": name, "input": list(core.analyze(name).input_shape), "batch": b, **c, "tools": {}}
            for tool in tools:
                res = dict(per_tool[tool].get(b, {"skipped": "not run"}))
                if "median_ms" in res:
                    res["ratio_warm"] = res["median_ms"] / c["warm_ms"]
                    res["ratio_rows"] = res["median_ms"] / c["rows_ms"]
                    res["ratio_cold"] = res["median_ms"] / c["cold_ms"]
                row["tools"][tool] = res
            rows.append(row)
        if progress:
            progress(f"{name} core: " + ", ".join(f"b{r['batch']} {r['warm_ms']:.3f}/{r['rows_ms']:.2f}/"
                                                   f"{r['cold_ms']:.1f} ms" for r in rows if r["model"] == name))
    return {"rows": rows, "torch_threads": threads, "repeats": repeats, "budget_s": budget_s,
            "core_repeat": core_repeat, "summary": summarize(rows)}


def summarize(rows: list[dict]) -> dict:
    """The slowest core time of each kind and the smallest torchinfo / core ratios, with where they occur."""
    def at(r):
        return f"{r['model']} batch {r['batch']}"

    out = {}
    for key in ("warm_ms", "rows_ms", "cold_ms", "cold_load_ms"):
        r = max(rows, key=lambda r: r[key])
        out[f"max_{key[:-3]}"] = {"ms": r[key], "at": at(r)}
    for key in ("ratio_warm", "ratio_rows", "ratio_cold"):
        pairs = [(r["tools"]["torchinfo"][key], r) for r in rows if key in r["tools"].get("torchinfo", {})]
        if pairs:
            v, r = min(pairs, key=lambda p: p[0])
            out[f"min_torchinfo_{key}"] = {"ratio": v, "at": at(r)}
    return out


def _ms(v: float) -> str:
    return f"{v:,.3f}" if v < 1 else f"{v:,.2f}" if v < 100 else f"{v:,.0f}"


def markdown(results: dict) -> str:
    rows, s = results["rows"], results["summary"]
    tools = list(rows[0]["tools"]) if rows else []
    footnotes: list[str] = []

    def tool_cell(res: dict) -> str:
        if "median_ms" in res:
            return f"{_ms(res['median_ms'])} (n={res['n']})"
        if res["skipped"] not in footnotes:
            footnotes.append(res["skipped"])
        return f"— [{footnotes.index(res['skipped']) + 1}]"

    def label(r):
        return f"{r['model']} ({r['input'][1]} px)"

    lines = ["## Analysis speed: core vs torchinfo, fvcore, ptflops and FlopCounterMode", "",
             f"Median milliseconds. core: warm = `core.analyze(name, batch_size=b).totals` with the compiled network "
             f"cached (what the app and notebooks get), + rows = also building every per-layer row, cold = compiled "
             f"from scratch, cold + load = also reading the shipped IR; {results['core_repeat']} calls for warm "
             f"(fewer for the others). Torch tools: model and input built outside the timing, one untimed warm-up "
             f"at batch 1, then up to {results['repeats']} call(s) (n; fewer once a call takes over "
             f"{results['budget_s']:.0f} s), each tool in its own process, under `torch.no_grad()`, torch's default "
             f"thread count ({results['torch_threads'] or 'unknown'}). torchinfo, fvcore and ptflops run a real "
             f"forward pass on the CPU; FlopCounterMode runs on meta tensors (no arithmetic).", "",
             "| model | batch | core warm | core + rows | core cold | core cold + load | "
             + " | ".join(TOOL_TITLES[t] for t in tools) + " |",
             "|---|---:|---:|---:|---:|---:|" + "---:|" * len(tools)]
    for r in rows:
        lines.append(f"| {label(r)} | {r['batch']} | {_ms(r['warm_ms'])} | {_ms(r['rows_ms'])} | "
                     f"{_ms(r['cold_ms'])} | {_ms(r['cold_load_ms'])} | "
                     + " | ".join(tool_cell(r["tools"][t]) for t in tools) + " |")
    lines += ["", "How many times longer each tool takes than core: against core warm / core + rows / core cold.", "",
              "| model | batch | " + " | ".join(TOOL_TITLES[t] for t in tools) + " |",
              "|---|---:|" + "---:|" * len(tools)]
    for r in rows:
        cells = []
        for t in tools:
            res = r["tools"][t]
            cells.append(f"{res['ratio_warm']:,.0f}× / {res['ratio_rows']:,.0f}× / {res['ratio_cold']:,.0f}×"
                         if "ratio_warm" in res else "—")
        lines.append(f"| {label(r)} | {r['batch']} | " + " | ".join(cells) + " |")
    if footnotes:
        lines += [""] + [f"[{i}] {text}" for i, text in enumerate(footnotes, 1)]

    def verdict(ok):
        return "met" if ok else "**not met**"

    lines += ["", f"Targets: core ≤ {TARGET_MS:g} ms everywhere, ≥ {TARGET_RATIO:g}× faster than torchinfo.", ""]
    for key, what in (("max_warm", "warm"), ("max_rows", "+ rows"), ("max_cold", "cold"),
                      ("max_cold_load", "cold + load")):
        w = s[key]
        lines.append(f"- core {what}: slowest {_ms(w['ms'])} ms ({w['at']}) — {verdict(w['ms'] <= TARGET_MS)}")
    for key, what in (("min_torchinfo_ratio_warm", "warm"), ("min_torchinfo_ratio_rows", "+ rows"),
                      ("min_torchinfo_ratio_cold", "cold")):
        w = s.get(key)
        if w:
            lines.append(f"- torchinfo / core {what}: smallest {w['ratio']:,.0f}× ({w['at']}) — "
                         f"{verdict(w['ratio'] >= TARGET_RATIO)}")
    return "\n".join(lines) + "\n"


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="mobilenet_v3_small at batch 1 and 2, one call per tool "
                    "(smoke test)")
    ap.add_argument("--models", help=f"comma-separated zoo names (default: {','.join(MODELS)})")
    ap.add_argument("--repeats", type=int, default=3, help="calls per torch tool and batch (default 3)")
    ap.add_argument("--budget", type=float, default=60.0,
                    help="stop repeating a torch tool once its calls took this many seconds (default 60)")
    ap.add_argument("--max-call", type=float, default=1800.0,
                    help="do not run a batch whose one call is predicted to take longer (s, default 1800)")
    args = ap.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return {}
    results = measure(args.quick, models=tuple(args.models.split(",")) if args.models else MODELS,
                      repeats=args.repeats, budget_s=args.budget, max_call_s=args.max_call, progress=progress)
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
