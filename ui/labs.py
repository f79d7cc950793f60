"""The numbers of the Course labs page: one small pure function per table or figure, built on ``core``.

Each lab answers a question the course reports work out by hand (/work/shared/coursework): the functions return
plain values or DataFrames, so tests check them against hand arithmetic without a browser. Nothing here imports
torch or streamlit; the page lays the results out.

Convention (``core.CONVENTION``): 1 multiply-add (MAC) = 2 FLOPs; tables show both.
"""

from __future__ import annotations

from math import ceil

import altair as alt
import pandas as pd

import core
from core.paleo import CONV_ALGORITHMS, estimate, sweep
from core.roofline import ridge
from ui.benchmark import spearman

MIB = 2 ** 20
LABS = {
    1: "1 · PALEO, PPP and VGG FLOPs",
    2: "2 · Devices across 25 years",
    3: "3 · VGG by pen and paper",
    4: "4 · ResNet memory",
    5: "5 · MNIST conv2",
}


# the built-in devices each lab names (lab 2 lets the user choose among all)
NEEDS = {1: ("k80", "k80-board", "k80-base", "k80-board-base"), 2: (), 3: ("v100-sxm2", "a100-40gb-sxm"),
         4: ("v100-sxm2",), 5: ()}


def _shape(dims) -> str:
    return "×".join(map(str, dims))


# == lab 1: PALEO, PPP and the FLOPs of VGG =========================================================================

PAPER_NETWORKS = ("vgg16", "googlenet", "resnet50")     # the networks of Lu et al.'s tables 3, 5 and 6
K80 = {"boost": ("k80", "k80-board"), "base": ("k80-base", "k80-board-base")}   # (one GK210 GPU, the whole board)


def conv_share(report: core.Report) -> dict:
    """The conv layers' part of the forward pass: their MACs and FLOPs, and their share of the network's."""
    conv = [layer for layer in report.layers if layer.op == "conv2d"]
    t = report.totals
    macs, flops = sum(x.macs for x in conv), sum(x.flops for x in conv)
    return {"conv_macs": macs, "macs": t["macs"], "macs_share": macs / t["macs"],
            "conv_flops": flops, "flops": t["flops"], "flops_share": flops / t["flops"]}


def flop_table(report: core.Report) -> pd.DataFrame:
    """One row per layer that does arithmetic: output shape, MACs, FLOPs and its share of the forward FLOPs."""
    total = report.totals["flops"]
    return pd.DataFrame([{"layer": x.name, "op": x.op, "output": _shape(x.output_shape[1:]), "MACs": x.macs,
                          "FLOPs": x.flops, "% of FLOPs": 100 * x.flops / total}
                         for x in report.layers if x.flops])


def k80_table(db, clock: str = "boost", ppp: float = 1.0, networks=PAPER_NETWORKS) -> pd.DataFrame:
    """Batch-1 inference of each network on one K80 GPU and on the whole board, single and double precision.

    "ms" is the course's formula, FLOPs ÷ (PPP × peak) (PALEO's compute time); "ms, MACs as FLOPs" is the same with
    the multiply-adds in place of FLOPs (the half-size answer); "PALEO ms" adds the memory time of every layer."""
    rows = []
    for name in networks:
        report = core.analyze(name)
        for dev_id, where in zip(K80[clock], ("one GPU", "board (2 GPUs)")):
            dev = db.devices[dev_id]
            for dtype in ("fp32", "fp64"):
                e = estimate(report, dev, dtype=dtype, ppp=ppp)
                t, peak = e.totals, dev.peak(dtype) * ppp
                rows.append({"network": name, "K80": where, "precision": dtype, "peak TFLOP/s": dev.peak(dtype) / 1e12,
                             "GMACs": report.totals["macs"] / 1e9, "GFLOPs": t["forward_flops"] / 1e9,
                             "ms": t["forward_compute_s"] * 1e3, "images/s": 1 / t["forward_compute_s"],
                             "ms, MACs as FLOPs": report.totals["macs"] / peak * 1e3,
                             "PALEO ms": t["forward_s"] * 1e3})
    return pd.DataFrame(rows)


def layer_timing_sum(est, overhead_us: float) -> dict:
    """Whole forward pass vs the sum of per-layer timings when each timed layer also pays ``overhead_us`` (an
    assumed kernel launch + synchronisation + profiler cost) that a whole-pass timing pays once or overlaps."""
    layers = sum(1 for r in est.layers if r["forward_flops"] or r["forward_bytes"])
    whole = est.totals["forward_s"]
    return {"layers": layers, "whole_ms": whole * 1e3, "sum_ms": (whole + layers * overhead_us * 1e-6) * 1e3}


# == lab 2: devices across 25 years, ten torchvision networks =======================================================

SURVEY_NETWORKS = ("resnet50", "alexnet", "mobilenet_v3_large", "vgg19", "squeezenet1_0", "efficientnet_b7",
                   "googlenet", "shufflenet_v2_x1_0", "wide_resnet101_2", "inception_v3")
THROUGHPUT_BATCHES = (1, 64, 256)


def devices_of_kind(db, kind: str, precision: str = "fp32") -> list[str]:
    return [i for i, d in db.devices.items() if d.kind == kind and precision in d.peak_flops]


def network_table(names, cpu, gpu, batch: int = 1, input_shape=None) -> pd.DataFrame:
    """Per network at ``batch``, fp32: size, per-image work, memory, operational intensity (forward FLOPs per byte
    moved), which side of each device's ridge it falls on, PALEO-predicted time, and backward ÷ forward FLOPs.
    ``input_shape`` None: each network's own input."""
    rows = []
    for name in names:
        r = core.analyze(name, input_shape=input_shape, batch_size=batch)
        t = r.totals
        on_cpu, on_gpu = estimate(r, cpu, batch_size=batch), estimate(r, gpu, batch_size=batch)
        rows.append({"network": name, "input": _shape(r.input_shape), "M params": t["params"] / 1e6,
                     "GMACs/image": t["macs"] / batch / 1e9, "GFLOPs/image": t["flops"] / batch / 1e9,
                     "inference MiB": t["inference_bytes"] / MIB, "FLOP/byte": on_gpu.roofline["arithmetic_intensity"],
                     "CPU bound": on_cpu.roofline["bound"], "GPU bound": on_gpu.roofline["bound"],
                     "CPU ms": on_cpu.totals["forward_s"] * 1e3, "GPU ms": on_gpu.totals["forward_s"] * 1e3,
                     "backward ÷ forward FLOPs": t["backward_flops"] / t["flops"]})
    return pd.DataFrame(rows)


def network_points(names, devices, batch: int = 1, dtype: str = "fp32", input_shape=None) -> pd.DataFrame:
    """Each network on each device's roofline: its intensity and its PALEO FLOP/s (forward FLOPs ÷ predicted time),
    in the columns ``ui.charts.roofline_chart`` draws (``layer`` holds the network, ``op`` the device)."""
    rows = []
    for name in names:
        r = core.analyze(name, input_shape=input_shape, batch_size=batch, dtype=dtype)
        for dev in devices:
            e = estimate(r, dev, batch_size=batch, dtype=dtype)
            t = e.totals
            rows.append({"layer": name, "op": dev.name, "intensity": e.roofline["arithmetic_intensity"],
                         "flops": t["forward_flops"] / t["forward_s"], "bound": e.roofline["bound"],
                         "time_ms": t["forward_s"] * 1e3})
    return pd.DataFrame(rows)


def latency_frame(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """A ``network_table`` column of predicted ms in the shape ``ui.benchmark`` scatters and correlates."""
    return pd.DataFrame({"network": table["network"], "input": table["input"], "latency ms": table[column],
                         "GFLOPs": table["GFLOPs/image"], "M params": table["M params"]})


def rank_correlations(df: pd.DataFrame) -> dict:
    """Spearman ρ of latency with FLOPs and with parameters (``ui.benchmark.spearman``)."""
    return {"flops": spearman(df["GFLOPs"], df["latency ms"]), "params": spearman(df["M params"], df["latency ms"])}


def throughput_table(names, devices, batches=THROUGHPUT_BATCHES, input_shape=None) -> pd.DataFrame:
    """PALEO-predicted inference samples/s per network, device and batch size (fp32, PPP 1)."""
    return pd.DataFrame([{"network": e.report.name, "device": e.device.name, "batch": e.report.batch_size,
                          "samples/s": e.totals["inference_samples_per_s"]}
                         for name in names for e in sweep(name, devices, batches, input_shape=input_shape)])


def throughput_chart(df: pd.DataFrame) -> alt.Chart:
    """Samples/s vs batch, log-log: one line per network, solid or dashed by device."""
    return alt.Chart(df).mark_line(point=True).encode(
        x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("samples/s:Q", scale=alt.Scale(type="log"), title="predicted samples/s"),
        color=alt.Color("network:N"), strokeDash=alt.StrokeDash("device:N"),
        tooltip=[alt.Tooltip("network:N"), alt.Tooltip("device:N"), alt.Tooltip("batch:Q"),
                 alt.Tooltip("samples/s:Q", format=",.1f")]).properties(height=340)


def measured_points(rows: list[dict]) -> pd.DataFrame:
    """Live-timed networks (``ui.benchmark.time_networks`` rows) at their intensity for the input they were timed
    at and their measured FLOP/s, in roofline_chart's columns; ``bound`` says "measured (this CPU)"."""
    out = []
    for r in rows:
        if not r.get("latency_s"):
            continue
        rep = core.analyze(r["network"], input_shape=r["input"])
        out.append({"layer": f"{r['network']} at {r['input']}", "op": "this CPU",
                    "intensity": rep.totals["arithmetic_intensity"], "flops": r["flops"] / r["latency_s"],
                    "bound": "measured (this CPU)", "time_ms": r["latency_s"] * 1e3})
    return pd.DataFrame(out)


# == lab 3: VGG 11/13/19 by pen and paper, V100 vs A100 ==============================================================

VGGS = ("vgg11", "vgg13", "vgg19")
RIDGE_DEVICES = (("v100-sxm2", "fp32"), ("a100-40gb-sxm", "fp32"), ("a100-40gb-sxm", "tf32"))


def pen_and_paper(report: core.Report) -> pd.DataFrame:
    """The conv and linear layers as a hand table: channels, kernel, output size, MACs and FLOPs per image and for
    the whole batch (MACs = C_out·H_out·W_out·C_in·k·k per image; FLOPs = 2 × MACs)."""
    n, by_name = report.batch_size, report.compiled.by_name
    rows = []
    for x in report.layers:
        if x.op not in ("conv2d", "linear"):
            continue
        attrs = by_name[x.name].attrs
        k = attrs.get("kernel_size")
        rows.append({"layer": x.name, "in": x.input_shapes[0][0] if x.op == "conv2d" else x.input_shapes[0][-1],
                     "out": x.output_shape[1], "kernel": _shape(k) if k else "—",
                     "output": _shape(x.output_shape[2:]) if x.op == "conv2d" else "—",
                     "MACs/image": x.macs // n, "FLOPs/image": x.flops // n,
                     f"MACs × {n}": x.macs, f"FLOPs × {n}": x.flops})
    return pd.DataFrame(rows)


def batch_totals(report: core.Report) -> dict:
    t, n = report.totals, report.batch_size
    return {"macs_image": t["macs"] // n, "flops_image": t["flops"] // n, "macs_batch": t["macs"],
            "flops_batch": t["flops"]}


def ridge_table(db, pairs=RIDGE_DEVICES) -> pd.DataFrame:
    """Peak, bandwidth and ridge point (peak ÷ bandwidth) per (device, precision)."""
    rows = []
    for dev_id, prec in pairs:
        d = db.devices[dev_id]
        rows.append({"device": d.name, "precision": prec, "peak TFLOP/s": d.peak(prec) / 1e12,
                     "bandwidth GB/s": d.memory_bandwidth / 1e9, "ridge FLOP/byte": ridge(d.peak(prec),
                                                                                           d.memory_bandwidth),
                     "how": d.compute_notes.get(prec, "")})
    return pd.DataFrame(rows)


def algorithm_table(report: core.Report, device) -> pd.DataFrame:
    """Forward FLOPs (whole batch) when convolutions run direct/GEMM, Winograd, FFT or the cheapest of them, and
    the FLOPs outside conv and linear layers: what CUDA-core counters still see when tensor cores do the rest."""
    rows = [{"how": f"conv algorithm: {a}", "GFLOPs": estimate(report, device, batch_size=report.batch_size,
                                                               dtype=report.dtype, conv_algorithm=a)
             .totals["forward_flops"] / 1e9} for a in CONV_ALGORITHMS]
    outside = sum(x.flops for x in report.layers if x.op not in ("conv2d", "linear"))
    rows.append({"how": "outside conv/linear (elementwise, pooling)", "GFLOPs": outside / 1e9})
    return pd.DataFrame(rows)


# == lab 4: ResNet memory, training on 1 or 2 GPUs ====================================================================

RESNETS = ("resnet18", "resnet50")
MEMORY_BATCHES = tuple(2 ** i for i in range(10))      # 1 … 512
PARTS = ("weights", "gradients", "optimizer state", "saved activations", "overhead (assumed)")


def per_gpu_batch(batch: int, gpus: int) -> int:
    """Data parallel: the global batch is split, each GPU takes ⌈B / K⌉."""
    return ceil(batch / gpus)


def memory_parts(report: core.Report, overhead_mib: float) -> dict:
    """Training memory on one GPU, in bytes, by part: weights (with buffers and any fp32 master copy), gradients,
    optimizer state, activations saved for backward, and the framework/CUDA-context overhead assumed by the user."""
    t = report.totals
    return {"weights": t["param_bytes"] + t["buffer_bytes"] + t["master_weight_bytes"],
            "gradients": t["gradient_bytes"], "optimizer state": t["optimizer_bytes"],
            "saved activations": t["saved_activation_bytes"], "overhead (assumed)": overhead_mib * MIB}


def training_memory(name: str, batch: int, gpus: int = 1, dtype: str = "fp32", optimizer: str = "sgd_momentum",
                    overhead_mib: float = 0.0) -> dict:
    """Per-GPU parts (bytes) for a global ``batch`` over ``gpus`` data-parallel GPUs (each a full replica)."""
    report = core.analyze(name, batch_size=per_gpu_batch(batch, gpus), dtype=dtype, optimizer=optimizer)
    parts = memory_parts(report, overhead_mib)
    return {"parts": parts, "per_gpu": sum(parts.values()), "all_gpus": gpus * sum(parts.values()),
            "per_gpu_batch": report.batch_size, "param_bytes": report.totals["param_bytes"],
            "params": report.totals["params"]}


def memory_vs_batch(name: str, gpus: int = 1, dtype: str = "fp32", optimizer: str = "sgd_momentum",
                    overhead_mib: float = 0.0, batches=MEMORY_BATCHES) -> pd.DataFrame:
    """Per-GPU memory by part (GiB) for each global batch size, in the wide form ``ui.charts.memory_chart`` draws."""
    rows = []
    for b in batches:
        m = training_memory(name, b, gpus, dtype, optimizer, overhead_mib)
        rows.append({"batch": b, **{k: v / 2 ** 30 for k, v in m["parts"].items() if v},
                     "total per GPU": m["per_gpu"] / 2 ** 30})
    return pd.DataFrame(rows)


# == lab 5: MNIST conv2 ================================================================================================

MNIST = "mnist_cnn"
BATCH_SWEEP = tuple(range(1, 502, 50))                 # 1, 51, …, 501: the report's profiled batch sizes


def widened(width: int) -> core.Network:
    """The MNIST CNN with conv2 at ``width`` output channels; fc1's inputs follow by shape propagation."""
    net = core.edit(core.load_network(MNIST), "conv2", "out_channels", width).network
    return core.Network(f"{MNIST}_conv2_{width}", net.inputs, net.nodes, net.outputs, net.description)


def side_by_side(networks, batch: int = 1) -> pd.DataFrame:
    """conv2, fc1 and whole-network figures of each network, one column per network."""
    cols = {}
    for net in networks:
        r = core.analyze(net, batch_size=batch)
        conv2, fc1, t = r.layer("conv2"), r.layer("fc1"), r.totals
        cols[r.name] = {"conv2 output (per image)": _shape(conv2.output_shape[1:]),
                        "conv2 params": f"{conv2.params:,}", "conv2 MACs": f"{conv2.macs:,}",
                        "conv2 FLOPs": f"{conv2.flops:,}",
                        "fc1 in → out": f"{fc1.input_shapes[0][-1]:,} → {fc1.output_shape[-1]:,}",
                        "fc1 params": f"{fc1.params:,}", "params": f"{t['params']:,}", "MACs": f"{t['macs']:,}",
                        "FLOPs": f"{t['flops']:,}", "training memory": f"{t['training_bytes'] / MIB:,.2f} MiB"}
    return pd.DataFrame(cols).rename_axis("quantity").reset_index()


def vs_batch(networks, batches=BATCH_SWEEP) -> pd.DataFrame:
    """Long form: per batch and network, conv2 and whole-network GFLOPs and MiB (all linear in the batch)."""
    rows = []
    for net in networks:
        base = core.analyze(net)
        for b in batches:
            r = base.with_batch(b)
            conv2, t = r.layer("conv2"), r.totals
            rows.append({"batch": b, "network": r.name, "conv2 GFLOPs": conv2.flops / 1e9,
                         "network GFLOPs": t["flops"] / 1e9, "conv2 output MiB": conv2.activation_bytes / MIB,
                         "training MiB": t["training_bytes"] / MIB, "inference MiB": t["inference_bytes"] / MIB})
    return pd.DataFrame(rows)


def by_network(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """One ``vs_batch`` column in wide form (batch, then one column per network) for ``ui.charts.lines_chart``."""
    return df.pivot(index="batch", columns="network", values=column).reset_index().rename_axis(columns=None)


def units_table(report: core.Report, layer: str = "conv2") -> pd.DataFrame:
    """Counts are not bytes: a layer's weights and outputs as element counts and as bytes at the report's precision."""
    x, p = report.layer(layer), report.precision
    outputs = x.activation_bytes // p.activation
    return pd.DataFrame([
        {"what": f"{layer} weights + bias", "count": x.params, "bytes": x.params * p.weight,
         "bytes per element": p.weight},
        {"what": f"{layer} outputs (batch {report.batch_size})", "count": outputs, "bytes": x.activation_bytes,
         "bytes per element": p.activation}])
