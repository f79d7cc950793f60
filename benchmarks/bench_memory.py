"""Memory accuracy (issues 7, 41): core's predicted peak memory of a training step against the peak measured by
running that step, for ResNet-18, ResNet-50, VGG-16, MobileNetV2, DenseNet-121 and EfficientNet-B0 at batch 1, 8 and
32 (fp32, SGD with momentum 0.9), and the modelled step's curve against PyTorch's, layer by layer, at batch 8.

One training step = ``zero_grad(set_to_none=True)`` + forward + ``loss.backward()`` + ``optimizer.step()``, the
loss the mean of the output (``core.bridge.timing``'s train step).

* predicted — ``core.analyze(name, batch_size=b, dtype="fp32", optimizer="sgd_momentum").totals["training_bytes"]``
  = the peak of ``core.timeline``'s modelled step, split into its parts at the peak (``sgd_momentum``:
  ``time_module``'s default optimizer, ``torch.optim.SGD(momentum=0.9)``).
* measured — ``core.bridge.timing.time_module(..., passes=("train_step",), warmup=2, repeats=1)``'s peak for the
  train step, taken during its second warm-up step (the first created the momentum buffers and left gradients,
  which the measured step frees first, as every later step does). On CPU: the bytes resident when the step starts
  (weights, buffers, momentum buffers, the input batch) + the largest running sum of torch.profiler's allocation
  and free records during the step. On CUDA: ``torch.cuda.max_memory_allocated`` (every tensor on the device).
* second method — ``MemTracker`` around one more step from the same state (``track_step``; the comment above it);
  at batch ``CURVE_BATCH``, its live bytes layer by layer (``core.bridge.memory_trace``) against the model's.

Each network × batch runs in its own process (allocator state and the profiler's bookkeeping do not carry over
from one measurement to the next), with ``threads`` intra-op threads (``time_module``'s ``threads``; default: every
core). CUDA is measured too when ``torch.cuda.is_available()``. Error = (predicted − measured) / measured; target:
within ±15 %.

Run: ``python benchmarks/bench_memory.py [--quick] [--threads N] [--device cpu] [--json FILE]``: Markdown, about
15 minutes on 2 shared cores. ``--quick``: mnist_cnn at batch 1 and 4 (a smoke test, under a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core  # noqa: E402
from common import emit, run_worker  # noqa: E402

NETWORKS = ("resnet18", "resnet50", "vgg16", "mobilenet_v2", "densenet121", "efficientnet_b0")
BATCHES = (1, 8, 32)
QUICK_NETWORKS = ("mnist_cnn",)
QUICK_BATCHES = (1, 4)
DTYPE = "fp32"
OPTIMIZER = "sgd_momentum"    # time_module's default train-step optimizer: SGD(lr=1e-3, momentum=0.9)
TARGET = 0.15                 # |predicted − measured| / measured
CURVE_BATCH = 8               # the batch whose layer-by-layer curve is traced
MIB = 2**20


# == prediction (pure core, no torch) =============================================================================

def predict(name: str, batch: int) -> dict:
    """core's training-step peak and its parts at the peak, in bytes; "saved_total": every saved activation."""
    r = core.analyze(name, batch_size=batch, dtype=DTYPE, optimizer=OPTIMIZER)
    t, at = r.totals, r.memory_timeline()[r.timeline.peak_step]
    return {"weights": at["parameters"], "gradients": at["gradients"], "optimizer": at["optimizer"],
            "saved": at["saved"] + at["input"], "outputs": at["outputs"], "saved_total": t["saved_activation_bytes"],
            "all_gradients": t["gradient_bytes"], "input": t["input_bytes"], "total": t["training_bytes"],
            "peak_at": t["training_peak_at"]}


def model_curve(name: str, batch: int) -> dict:
    """The model's bytes after each layer's forward and just before each layer's backward (its backward row less
    the weight and input gradients the layer makes), as ``trace_step`` samples them."""
    r = core.analyze(name, batch_size=batch, dtype=DTYPE, optimizer=OPTIMIZER)
    c, act, grad = r.compiled, r.precision.activation, r.precision.grad
    rows = r.memory_timeline()
    forward = {x["layer"]: x["total"] for x in rows if x["phase"] == "forward"}
    backward = {}
    for x in rows:
        n = c.by_name.get(x["layer"]) if x["phase"] == "backward" else None
        if n is None:
            continue
        view = n.rule.alias and not n.rule.copies_in_training
        made = 0 if view else sum(c.by_name[s].out_elems for s, g in zip(n.inputs, n.grad_in)
                                  if g and s in c.by_name and not c.by_name[s].rule.stored)
        backward[n.name] = x["total"] - n.params.trainable * grad - made * batch * act
    return {"forward": forward, "backward": backward, "peak": r.totals["training_bytes"]}


def curve_error(name: str, batch: int, traced: dict) -> dict:
    """Largest and median |traced − model| over the samples, as a share of the model's peak."""
    model = model_curve(name, batch)
    diffs = {phase: [abs(b - model[phase][layer]) / model["peak"] for layer, b in traced[phase]
                     if layer in model[phase]] for phase in ("forward", "backward")}
    fw, bw = [b for _, b in traced["forward"]], [b for _, b in traced["backward"]]
    return {phase: {"n": len(d), "max": max(d), "median": statistics.median(d)} for phase, d in diffs.items() if d} | {
        "rises_then_falls": bool(fw and bw and fw[-1] > fw[0] and bw[-1] < max(bw))}


# == measurement (in a worker process) ============================================================================

def _proc_status(key: str) -> int | None:
    """A ``VmRSS``/``VmHWM``-style line of /proc/self/status in bytes (None off Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _reset_rss_peak() -> bool:
    """Reset the process's peak RSS (VmHWM) to its current RSS (Linux ≥ 4.0: ``echo 5 > /proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _snapshot(snap: dict, dev) -> dict:
    """MemTracker's {device: {category: bytes}} → {category name: bytes} for ``dev``."""
    for d, parts in snap.items():
        if d.type == dev.type and (dev.index is None or d.index in (None, dev.index)):
            return {getattr(k, "value", str(k)): int(v) for k, v in parts.items()}
    return {}


# The second method: ``torch.distributed._tools.mem_tracker.MemTracker`` (a TorchDispatchMode that follows every
# tensor storage and sorts it into parameter, buffer, gradient, activation, temporary, optimizer state) around one
# more step from the same state (momentum buffers and the previous step's gradients made beforehand): its peak
# total, what made up that peak, and what was alive right after the forward (the activations kept for backward).
# It does not use the profiler, so it checks the first measurement, and its split says where a difference comes
# from. It sees each op's outputs only: scratch an op allocates inside itself (the CPU convolution backward's,
# the size of its gradients) is in the profiler's records but not in MemTracker's.
def track_step(module, input_shape, batch: int, device: str, threads: int | None) -> dict:
    """The second method: MemTracker around one training step in the state ``time_module``'s measured step starts
    from: momentum buffers and the previous step's gradients exist. Rather than run an untracked step to make them
    (a minute for VGG-16 at batch 32 here), they are made as that step would: SGD's first step sets each momentum
    buffer to a copy of the gradient (zeros here; only the sizes matter). {"peak": split at the peak,
    "after_forward": split right after the forward}, bytes per MemTracker category plus "Total"."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    from core.bridge.timing import cpu_threads

    dev = torch.device(device)
    with cpu_threads(threads if dev.type == "cpu" else None):
        m = module.to(dev).train()
        x = torch.randn((batch, *input_shape), device=dev)
        params = [p for p in m.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)     # as time_module's "sgd_momentum"
        for p in params:
            p.grad = torch.zeros_like(p)
            opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
        after_forward: dict = {}
        mt = MemTracker()
        mt.track_external(m, opt, x)
        with mt:
            opt.zero_grad(set_to_none=True)
            loss = m(x).float().mean()
            after_forward.update(_snapshot(mt.get_tracker_snapshot("current"), dev))
            loss.backward()
            opt.step()
        return {"peak": _snapshot(mt.get_tracker_snapshot("peak"), dev), "after_forward": after_forward}


def worker(spec: dict) -> None:
    """Measure one network × batch × device and print its records as ``RESULT {json}`` lines."""
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    from core.bridge.timing import time_module
    from core.bridge.to_torch import to_module
    from core.errors import CalcError

    name, batch, device, threads = spec["network"], spec["batch"], spec["device"], spec["threads"]
    report = core.analyze(name, batch_size=batch, dtype=DTYPE, optimizer=OPTIMIZER)
    torch.manual_seed(0)
    module = to_module(core.load_network(name))
    label = device
    if device.startswith("cuda"):
        label = f"cuda ({torch.cuda.get_device_name(torch.device(device))})"
    rss_ok = _reset_rss_peak()
    rss0 = _proc_status("VmRSS")
    try:
        r = time_module(module, report.input_shape, batch, device=device, dtype=DTYPE, passes=("train_step",),
                        warmup=2, repeats=1, report=report, optimizer=OPTIMIZER, threads=threads,
                        max_seconds=86400.0, measure_memory=True)
    except CalcError as e:               # refused by the memory guard, or the module failed on this device
        emit({"failure": str(e), "device_label": label})
        return
    hwm = _proc_status("VmHWM")
    emit({"measured": r.peak_memory_bytes.get("train_step"), "method": r.memory_method,
          "step_s": r.passes["train_step"].median_s, "threads": r.threads, "notes": list(r.notes),
          "device_label": label,
          "rss_growth": hwm - rss0 if rss_ok and hwm is not None and rss0 is not None and device == "cpu" else None})
    try:
        emit({"tracked": track_step(module, report.input_shape, batch, device, threads)})
        if batch == CURVE_BATCH:
            from core.bridge.memory_trace import trace_step
            traced = trace_step(core.load_network(name), batch, device, threads)
            emit({"curve": curve_error(name, batch, traced)})
    except Exception as e:  # noqa: BLE001 — MemTracker is a private torch tool: a failure is reported, not fatal
        emit({"tracked_failure": f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"})


# == the driver ===================================================================================================

def run_one(name: str, batch: int, device: str, threads: int | None, timeout_s: float) -> dict:
    """One worker process; its records merged into one dict ("failure" if it produced no measurement)."""
    spec = {"network": name, "batch": batch, "device": device, "threads": threads}
    out: dict = {}
    records, err = run_worker(__file__, spec, timeout_s)
    for r in records:
        out.update(r)
    if out.get("measured") is None and "failure" not in out:
        out["failure"] = f"failed: {err}" if "measured" not in out else "no peak measured (see the method)"
    return out


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _error(predicted: int, measured: int | None) -> float | None:
    return (predicted - measured) / measured if measured else None


def measure(quick: bool = False, networks=None, batches=None, devices=None, threads: int | None = None,
            timeout_s: float = 1800.0, progress=None) -> dict:
    """Predicted and measured training-step memory for every network × batch × device; ``quick``: mnist_cnn at
    batch 1 and 4. ``devices`` defaults to the CPU, and CUDA when torch sees a GPU."""
    networks = networks or (QUICK_NETWORKS if quick else NETWORKS)
    batches = batches or (QUICK_BATCHES if quick else BATCHES)
    devices = devices or (("cpu", "cuda") if cuda_available() else ("cpu",))
    threads = threads or os.cpu_count() or 1
    rows = []
    t0 = time.perf_counter()
    for device in devices:
        for name in networks:
            for batch in batches:
                pred = predict(name, batch)
                got = run_one(name, batch, device, threads if device == "cpu" else None, timeout_s)
                row = {"network": name, "batch": batch, "device": device, "predicted": pred, **got}
                if got.get("measured") is not None:
                    row["error"] = _error(pred["total"], got["measured"])
                    peak = got.get("tracked", {}).get("peak", {})
                    if peak.get("Total"):
                        row["tracked_error"] = _error(pred["total"], peak["Total"])
                rows.append(row)
                if progress:
                    progress(row, time.perf_counter() - t0)
    return {"rows": rows, "summary": summarize(rows), "threads": threads, "dtype": DTYPE, "optimizer": OPTIMIZER,
            "target": TARGET, "seconds": time.perf_counter() - t0}


def summarize(rows: list[dict]) -> dict:
    """Per device: how many rows were measured, median and largest |error| (and where), how many within target;
    the same against the second method's peak, and the two methods' largest disagreement."""
    out = {}
    for device in dict.fromkeys(r["device"] for r in rows):
        mine = [r for r in rows if r["device"] == device]
        ok = [r for r in mine if r.get("error") is not None]
        s: dict = {"rows": len(mine), "measured": len(ok)}
        for key, prefix in (("error", ""), ("tracked_error", "tracked_")):
            have = [r for r in ok if r.get(key) is not None]
            if not have:
                continue
            worst = max(have, key=lambda r: abs(r[key]))
            s[prefix + "median_abs_error"] = statistics.median(abs(r[key]) for r in have)
            s[prefix + "max_abs_error"] = abs(worst[key])
            s[prefix + "max_at"] = f"{worst['network']} batch {worst['batch']}"
            s[prefix + "within_target"] = sum(abs(r[key]) <= TARGET for r in have)
            s[prefix + "n"] = len(have)
        agree = [abs(r["tracked"]["peak"]["Total"] - r["measured"]) / r["measured"]
                 for r in ok if r.get("tracked", {}).get("peak", {}).get("Total")]
        if agree:
            s["methods_max_disagreement"] = max(agree)
        out[device] = s
    return out


# == Markdown =====================================================================================================

def _mib(b) -> str:
    return "—" if b is None else f"{b / MIB:,.1f}"


def _pct(x) -> str:
    return "—" if x is None else f"{x:+.1%}"


def markdown(results: dict) -> str:
    rows, target = results["rows"], results["target"]
    lines = [
        "## Memory accuracy: predicted vs measured peak of a training step", "",
        f"One training step (`zero_grad(set_to_none=True)`, forward, backward of the output's mean, "
        f"`optimizer.step()`), {results['dtype']}, SGD with momentum 0.9 (core's `{results['optimizer']}`), "
        f"torchvision-layout networks built from core's IR (`to_module`, random weights), "
        f"{results['threads']} CPU thread(s), each network × batch in a fresh process. MiB = 2²⁰ bytes.", "",
        "- **predicted**: `core.analyze(...).totals[\"training_bytes\"]`, the peak of `core.timeline`'s modelled "
        "step (`python -m core memory MODEL --timeline`): saved activations live from their forward to the "
        "backward of their earliest reader, gradients are made layer by layer, outputs and gradients in flight "
        "are freed after their last reader.",
        "- **measured**: `time_module(passes=(\"train_step\",), warmup=2, repeats=1)`, peak of the second "
        "warm-up step (steady state: momentum buffers exist, the previous step's gradients are freed by its "
        "`zero_grad`). CPU: bytes resident at the start (weights, buffers, momentum buffers, the input batch) + the "
        "largest running sum of torch.profiler's allocation/free records during the step (gradients, activations, "
        "temporaries). CUDA: `torch.cuda.max_memory_allocated` (every tensor on the device, cuDNN workspaces "
        "included).",
        "- **tracked**: a second method, `MemTracker` (torch.distributed._tools; follows every tensor storage "
        "through a TorchDispatchMode, no profiler) around one more step, started from the same state (momentum "
        "buffers and the previous gradients made beforehand): the peak total. It sees each op's outputs only, "
        "not scratch an op allocates and frees inside itself (the CPU convolution backward takes scratch the "
        "size of its input and weight gradients), which the profiler's records include: most of the gap "
        "between the two.",
        "- Neither side counts Python objects, the CUDA context, or scratch memory a library takes outside "
        "PyTorch's allocator; neither counts memory the allocator holds beyond the tensors. **RSS growth** is "
        "the operating system's view (CPU): the process's peak resident set during `time_module`'s steps less "
        "its size before. It adds what the tensor counts leave out: torch's code and kernels paged in on first "
        "use, the profiler's records, and freed blocks that glibc's malloc keeps for reuse instead of returning "
        "them (its mmap threshold rises as large blocks are freed, so later ones come from the heap). It is "
        "not what core models; it is what the process costs.",
        "- Error = (predicted − measured) / measured: positive when core predicts more. *step s*: the one timed "
        "step, on a machine that may have been shared.", "",
        "| network | batch | device | predicted MiB | measured MiB | error | tracked MiB | error vs tracked "
        "| RSS growth MiB | step s |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    notes: list[str] = []
    for r in rows:
        dev = r.get("device_label", r["device"])
        if r.get("error") is None:
            notes.append(f"{r['network']} batch {r['batch']} on {dev}: {r.get('failure')}")
            lines.append(f"| {r['network']} | {r['batch']} | {dev} | {_mib(r['predicted']['total'])} "
                         f"| — [{len(notes)}] | — | — | — | — | — |")
            continue
        peak = r.get("tracked", {}).get("peak", {})
        tracked = _mib(peak.get("Total"))
        if r.get("tracked_failure"):
            notes.append(f"{r['network']} batch {r['batch']} on {dev}, MemTracker: {r['tracked_failure']}")
            tracked = f"— [{len(notes)}]"
        lines.append(f"| {r['network']} | {r['batch']} | {dev} | {_mib(r['predicted']['total'])} | "
                     f"{_mib(r['measured'])} | {_pct(r['error'])} | {tracked} | "
                     f"{_pct(r.get('tracked_error'))} | {_mib(r.get('rss_growth'))} | {r['step_s']:.2f} |")
    if notes:
        lines += [""] + [f"[{i}] {text}" for i, text in enumerate(notes, 1)]

    lines += ["", f"Summary (target: within ±{target:.0%} of the measured peak):", ""]
    for device, s in results["summary"].items():
        if "n" not in s:
            lines.append(f"- {device}: nothing measured ({s['rows']} run(s) failed)")
            continue
        lines.append(f"- {device}, measured (profiler): median |error| {s['median_abs_error']:.1%}, largest "
                     f"{s['max_abs_error']:.1%} ({s['max_at']}); {s['within_target']} of {s['n']} within "
                     f"±{target:.0%}" + (f"; {s['rows'] - s['measured']} run(s) failed" if s['rows'] > s['measured']
                                         else ""))
        if "tracked_n" in s:
            lines.append(f"- {device}, tracked (MemTracker): median |error| {s['tracked_median_abs_error']:.1%}, "
                         f"largest {s['tracked_max_abs_error']:.1%} ({s['tracked_max_at']}); "
                         f"{s['tracked_within_target']} of {s['tracked_n']} within ±{target:.0%}; the two "
                         f"measurements differ by at most {s['methods_max_disagreement']:.1%}")
    if "seconds" in results:
        lines.append(f"- the whole run took {results['seconds'] / 60:.1f} min")

    lines += ["", "Where the bytes are at the peak. Predicted: the modelled step's parts at its peak (where: the "
              "layer whose backward it falls in). Tracked: what MemTracker found alive at its peak (activations: "
              "forward outputs still alive, the input batch included; in flight: gradients of activations and op "
              "outputs, MemTracker's temporaries). After forward: the activations alive when the forward ends, "
              "against core's saved activations (last column: (predicted − tracked) / tracked). MiB.", "",
              "| network | batch | device | peak in | weights + buffers | optimizer | gradients | activations | "
              "in flight | tracked: gradients | tracked: activations | tracked: in flight | saved act. "
              "| after forward | error |",
              "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p = r["predicted"]
        tr = r.get("tracked", {})
        peak, fwd = tr.get("peak", {}), tr.get("after_forward", {})
        cells = ["—"] * 5
        if peak:
            act_fwd = fwd.get("Activation", 0) + fwd.get("Other", 0)
            cells = [_mib(peak.get("Gradient", 0)), _mib(peak.get("Activation", 0) + peak.get("Other", 0)),
                     _mib(peak.get("Temp", 0)), _mib(act_fwd) if fwd else "—",
                     _pct(_error(p["saved_total"], act_fwd)) if fwd else "—"]
        lines.append(f"| {r['network']} | {r['batch']} | {r.get('device_label', r['device'])} | "
                     f"{p['peak_at'].removeprefix('the ')} | {_mib(p['weights'])} | {_mib(p['optimizer'])} | "
                     f"{_mib(p['gradients'])} | {_mib(p['saved'])} | {_mib(p['outputs'])} | "
                     + " | ".join(cells[:3]) + f" | {_mib(p['saved_total'])} | " + " | ".join(cells[3:]) + " |")
    curves = [r for r in rows if r.get("curve")]
    if curves:
        lines += ["", f"The curve, layer by layer (batch {CURVE_BATCH}): MemTracker's live bytes after each layer's "
                  "forward and just before each layer's backward (`core.bridge.memory_trace`), against the modelled "
                  "step at the same points; |difference| as a share of the modelled peak.", "",
                  "| network | device | forward samples | forward median | forward max | backward samples "
                  "| backward median | backward max | rises, then falls |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for r in curves:
            cv = r["curve"]
            fw, bw = cv.get("forward", {}), cv.get("backward", {})
            lines.append(f"| {r['network']} | {r.get('device_label', r['device'])} | {fw.get('n', 0)} | "
                         f"{fw.get('median', 0):.2%} | {fw.get('max', 0):.2%} | {bw.get('n', 0)} | "
                         f"{bw.get('median', 0):.2%} | {bw.get('max', 0):.2%} | "
                         f"{'yes' if cv.get('rises_then_falls') else 'no'} |")
    lines += ["", "Why predicted and measured differ. The model follows the tensors (MemTracker's view): weights, "
              "optimizer state, the gradients made so far, the activations still to be read by a backward, and "
              "the gradients in flight. The profiler's measured peak adds scratch an op allocates and frees inside "
              "itself (the CPU convolution backward's, the size of its input and weight gradients), which neither "
              "the model nor MemTracker sees. The saved activations after the forward differ from PyTorch's by two "
              "small things: on CPU, dropout keeps its mask as a float tensor (4 bytes per element in fp32, where "
              "core counts the 1-byte bool mask CUDA's fused dropout keeps), and `adaptive_avg_pool2d` to an output "
              "other than 1×1 (VGG's 7×7) saves its input for backward, which core does not count."]
    return "\n".join(lines) + "\n"


def progress(row: dict, elapsed: float) -> None:
    what = f"{row['network']} b{row['batch']} {row['device']}"
    if row.get("error") is None:
        print(f"[{elapsed:6.0f} s] {what}: {row.get('failure')}", file=sys.stderr,
              flush=True)
    else:
        print(f"[{elapsed:6.0f} s] {what}: predicted {_mib(row['predicted']['total'])} MiB, measured "
              f"{_mib(row['measured'])} MiB ({_pct(row['error'])}), step {row['step_s']:.1f} s",
              file=sys.stderr, flush=True)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="mnist_cnn at batch 1 and 4 (smoke test)")
    ap.add_argument("--networks", help=f"comma-separated built-in names (default: {','.join(NETWORKS)})")
    ap.add_argument("--batches", help=f"comma-separated batch sizes (default: {','.join(map(str, BATCHES))})")
    ap.add_argument("--device", action="append", help="cpu, cuda or cuda:N (repeatable; default: cpu, and cuda when "
                    "available)")
    ap.add_argument("--threads", type=int, help="torch intra-op CPU threads (default: every core)")
    ap.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return {}
    results = measure(args.quick, networks=tuple(args.networks.split(",")) if args.networks else None,
                      batches=tuple(int(b) for b in args.batches.split(",")) if args.batches else None,
                      devices=tuple(args.device) if args.device else None, threads=args.threads, progress=progress)
    print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
