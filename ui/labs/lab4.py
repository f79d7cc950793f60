"""Lab 4 · ResNet memory: how much memory training ResNet18/50 takes compared with its parameters, by part (weights,
gradients, optimizer state, saved activations, an assumed overhead), when its peak happens over a training step
(``core.timeline``), on one GPU and on data-parallel GPUs; and how much faster two V100s train than one (report
003's 1-versus-2-GPU case, ``core.scaling`` with the DDP model over NVLink 2).

The numbers are pure functions over ``core`` (tests/test_labs.py checks them by hand); ``show`` lays them out."""

from __future__ import annotations

from math import ceil

import pandas as pd
import streamlit as st

import core
from core.api import scaling
from core.choices import DEFAULT_DTYPE, DEFAULT_OPTIMIZER
from core.precision import OPTIMIZERS, PRECISIONS
from core.units import format_bytes
from ui.charts import memory_chart
from ui.charts import show as show_chart
from ui.data_parallel_view import error_words
from ui.labs.common import MIB, in_words, open_button, preferred, question, reading
from ui.memory_view import show_timeline
from ui.tables import dataframe

TITLE = "4 · ResNet memory"
RESNETS = ("resnet18", "resnet50")
GPUS = (1, 2)                                          # data-parallel GPU counts to choose from
CAPACITY_DEVICE = "v100-sxm2"                          # the GPU whose memory the chart draws as a line
LINK = "nvlink2-v100"                                  # what joins two V100-SXM2s: NVLink 2
NEEDS = (CAPACITY_DEVICE,)
TRAINING_PRECISIONS = ("fp32", "mixed", "fp16", "bf16")   # formats one trains in on a GPU
MEMORY_BATCHES = tuple(2 ** i for i in range(10))      # 1 … 512
PARTS = ("weights", "gradients", "optimizer state", "saved activations", "overhead (assumed)")


def per_gpu_batch(batch: int, gpus: int) -> int:
    """Data parallel: the global batch is split, each GPU takes ⌈B / K⌉."""
    return ceil(batch / gpus)


def memory_parts(report: core.Report, overhead_mib: float) -> dict:
    """Each part of training memory on one GPU in full, in bytes: weights (with buffers and any fp32 master copy),
    gradients, optimizer state, activations saved for backward, and the framework/CUDA-context overhead assumed by
    the user. They are never all alive at once: the step's peak (``training_memory``'s "per_gpu") is less."""
    t = report.totals
    return {"weights": t["param_bytes"] + t["buffer_bytes"] + t["master_weight_bytes"],
            "gradients": t["gradient_bytes"], "optimizer state": t["optimizer_bytes"],
            "saved activations": t["saved_activation_bytes"], "overhead (assumed)": overhead_mib * MIB}


def training_memory(name: str, batch: int, gpus: int = 1, dtype: str = DEFAULT_DTYPE,
                    optimizer: str = DEFAULT_OPTIMIZER, overhead_mib: float = 0.0) -> dict:
    """Per-GPU parts in full and the step's peak plus the overhead ("per_gpu"), in bytes, for a global ``batch``
    over ``gpus`` data-parallel GPUs (each a full replica)."""
    report = core.analyze(name, batch_size=per_gpu_batch(batch, gpus), dtype=dtype, optimizer=optimizer)
    parts = memory_parts(report, overhead_mib)
    peak = report.totals["training_bytes"] + parts["overhead (assumed)"]
    return {"parts": parts, "sum_of_parts": sum(parts.values()), "per_gpu": peak, "all_gpus": gpus * peak,
            "per_gpu_batch": report.batch_size, "param_bytes": report.totals["param_bytes"],
            "params": report.totals["params"], "report": report}


def memory_vs_batch(name: str, gpus: int = 1, dtype: str = DEFAULT_DTYPE, optimizer: str = DEFAULT_OPTIMIZER,
                    overhead_mib: float = 0.0, batches=MEMORY_BATCHES) -> pd.DataFrame:
    """Per-GPU memory by part in full and the step's peak (GiB) for each global batch size, in the wide form
    ``ui.charts.memory_chart`` draws."""
    rows = []
    for b in batches:
        m = training_memory(name, b, gpus, dtype, optimizer, overhead_mib)
        rows.append({"batch": b, **{k: v / 2 ** 30 for k, v in m["parts"].items() if v},
                     "peak per GPU": m["per_gpu"] / 2 ** 30})
    return pd.DataFrame(rows)


def parameter_memory_line(dtype: str = "fp32") -> str:
    """Parameter memory of each ResNet by hand: params × bytes per weight."""
    size = PRECISIONS[dtype].weight
    each = [f"{n.replace('resnet', 'ResNet')} {p:,} × {size} = {p * size / 1e6:.1f} MB"
            for n, p in ((n, core.analyze(n).totals["params"]) for n in RESNETS)]
    return f"Parameter memory = params × {size} B at {dtype}: " + ", ".join(each) + "."


def two_gpu_training(name: str, batch: int, dtype: str = DEFAULT_DTYPE,
                     optimizer: str = DEFAULT_OPTIMIZER) -> dict:
    """Training ``name`` at global ``batch`` on one V100-SXM2 and on two as DDP workers over NVLink 2, the batch split
    between them as above (strong scaling): ``core.scaling``'s rows ("one", "two"), the speed-up and what the
    gradients' exchange adds to the two-GPU step (exposed all-reduce plus synchronisation)."""
    one, two = scaling(name, CAPACITY_DEVICE, LINK, workers=(1, 2), batch_size=batch, mode="strong", dtype=dtype,
                       optimizer=optimizer)
    return {"one": one, "two": two, "speedup": two["speedup"], "communication_s": two["communication_s"]}


def show_training(db, name: str, batch: int, dtype: str, optimizer: str) -> None:
    """Report 003's 1-versus-2-GPU case as time: one V100 against two, the speed-up and the exposed exchange."""
    st.subheader("Training time on one V100 or two")
    try:
        t = two_gpu_training(name, batch, dtype, optimizer)
    except core.CalcError as e:                    # a precision the V100 lacks (bf16)
        st.info(f"No time estimate for this case: {e}")
        return
    one, two, link = t["one"], t["two"], db.interconnects[LINK].name
    k1, k2, k3, k4 = st.columns(4)
    k1.metric(f"Training step, 1 V100 (batch {batch})", f"{one['training_step_s'] * 1e3:,.2f} ms")
    k2.metric(f"2 V100s (batch {two['per_worker_batch']} each)", f"{two['training_step_s'] * 1e3:,.2f} ms")
    k3.metric("Predicted speed-up", f"{t['speedup']:.2f}×", help=f"efficiency {two['efficiency']:.1%}; "
              f"the DDP model's {error_words('ddp')[0]}")
    k4.metric("Exposed communication", f"{t['communication_s'] * 1e3:,.3f} ms",
              help=f"the all-reduce of the gradients takes {two['allreduce_s'] * 1e3:,.3f} ms over {link}, "
                   f"{two['overlapped_s'] * 1e3:,.3f} ms of it during the backward; exposed "
                   f"{two['exposed_s'] * 1e3:,.3f} ms, synchronisation {two['sync_s'] * 1e3:,.3f} ms")
    st.caption(f"Two V100s train {name} **{t['speedup']:.2f}×** as fast as one at global batch {batch}; the "
               f"gradients' exchange adds {t['communication_s'] * 1e3:,.3f} ms to each step.")
    reading("A report was \"not sure if 2 GPU will necessarily outperform 1\": with DistributedDataParallel each "
            f"V100 runs half the batch and the two exchange gradients over {link} while the backward runs, so only "
            "the part left after the backward adds to the step.",
            "Below 2× comes mostly from each GPU's half batch running less efficiently (fixed costs per kernel "
            "weigh more on a smaller batch), not from the exchange: compare the two step times with half the "
            "one-GPU step.")


def show(db) -> None:
    question("How much GPU memory does training ResNet18/50 take compared with its parameters, on one GPU and on "
             f"{in_words(GPUS[-1])} data-parallel GPUs?")
    c1, c2, c3, c4, c5 = st.columns(5)
    name = c1.radio("Network", list(RESNETS), horizontal=True, key="lab4_model")
    batch = int(c2.number_input("Global batch", min_value=1, max_value=4096, value=32, step=1, key="lab4_batch"))
    gpus = c3.radio("GPUs (data parallel)", list(GPUS), horizontal=True, key="lab4_gpus")
    optimizers = list(OPTIMIZERS)
    optimizer = c4.selectbox("Optimizer", optimizers, index=preferred(optimizers, DEFAULT_OPTIMIZER),
                             key="lab4_optimizer")
    dtype = c5.selectbox("Precision", list(TRAINING_PRECISIONS), key="lab4_dtype")
    overhead = st.number_input("Assumption: framework + CUDA context + cuDNN workspace per GPU (MiB)", min_value=0.0,
                               max_value=100_000.0, value=400.0, step=50.0, key="lab4_overhead_mib",
                               help="Not computed: typically a few hundred MiB (context, kernels, allocator reserve).")
    m = training_memory(name, batch, gpus, dtype, optimizer, overhead)
    k1, k2, k3, k4 = st.columns(4)
    k1.metric("Parameters", f"{m['params']:,}")
    k2.metric(f"Parameter memory ({dtype})", format_bytes(m["param_bytes"], 2),
              help=f"{m['params']:,} × {m['param_bytes'] // m['params']} B = {m['param_bytes']:,} B")
    k3.metric(f"Training memory per GPU (batch {m['per_gpu_batch']} each)", format_bytes(m["per_gpu"], 2),
              help=f"the peak of a training step plus the assumed overhead; the parts in full add up to "
                   f"{format_bytes(m['sum_of_parts'], 2)}, but they are never all alive at once (the chart below)")
    k4.metric(f"All {gpus} GPU(s) ÷ parameter memory", f"{m['all_gpus'] / m['param_bytes']:,.1f}×")
    dataframe(pd.DataFrame([{"part": k, "per GPU MiB": v / MIB, "share": v / m["per_gpu"]}
                            for k, v in m["parts"].items()]), key="lab4_parts",
              column_config={"per GPU MiB": st.column_config.NumberColumn(format="%.1f"),
                             "share": st.column_config.NumberColumn(format="percent")})
    cap = db.devices[CAPACITY_DEVICE].memory_capacity
    show_chart(memory_chart(memory_vs_batch(name, gpus, dtype, optimizer, overhead), cap / 2 ** 30), "lab4_chart",
               f"{name}_memory_{gpus}gpu_{dtype}")
    st.caption(f"Per GPU vs global batch; the red line is a {cap / 2 ** 30:.0f} GiB V100 (its memory).")
    st.markdown(f"**Over one training step** (batch {m['per_gpu_batch']} per GPU, without the assumed overhead):")
    show_timeline(m["report"], cap, db.devices[CAPACITY_DEVICE].name, "lab4_timeline")
    reading(parameter_memory_line(),
            "Training adds gradients (same size), optimizer state (momentum "
            f"{OPTIMIZERS['sgd_momentum']}×, Adam {OPTIMIZERS['adam']}×) and the activations saved for backward, "
            "which grow with the batch and soon dominate; the context and workspace come on top. They are never all "
            "alive at once: the peak comes early in the backward, when most saved activations are still alive and "
            "few gradients are made yet (the step chart).",
            "A report's 130–290× gap between GPU memory and parameters is these parts, plus what PyTorch's caching "
            "allocator keeps reserved (which GPUtil counts as used) — not \"communication overhead\".",
            f"On {GPUS[-1]} data-parallel GPUs each holds a full replica (weights, gradients, state, context) and half "
            f"the batch's activations: less per GPU, more in total. A report expected {GPUS[-1]}× and read equal "
            "totals as \"avoiding duplication\".")
    show_training(db, name, batch, dtype, optimizer)
    open_button(name, "lab4_open")
