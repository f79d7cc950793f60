"""Course labs: the questions of five ML-systems course reports, each with its own controls, the engine's answer, and
a few lines on how to read it (and where a report went wrong, one line each). Only the chosen lab runs.

The numbers come from ``ui.labs`` (pure functions over ``core``); torch loads only when lab 2's timing button is
pressed.
"""

import pandas as pd
import streamlit as st

import core
from core.devices import PRECISION_KEYS
from core.paleo import estimate
from core.units import format_bytes
from ui import benchmark as bm
from ui import labs
from ui.charts import lines_chart, memory_chart, roofline_chart, roofline_frame, show
from ui.devices_form import FASTEST, SURVEY, overlay
from ui.state import choose_model, devices, page
from ui.text import formula_latex

page("Course labs")
db = devices()
st.caption(f"Each lab has its own controls; the sidebar is for the other pages. {core.CONVENTION}")
asked = st.query_params.get("lab", "")             # ?lab=3 opens lab 3: a link a teacher can hand out
if "lab" not in st.session_state and asked.isdigit() and int(asked) in labs.LABS:
    st.session_state["lab"] = int(asked)
lab = st.segmented_control("Lab", list(labs.LABS), format_func=labs.LABS.get, default=1, required=True, key="lab")
st.query_params["lab"] = str(lab or 1)


def question(text: str) -> None:
    st.markdown(f"**Question.** {text}")


def reading(*lines: str) -> None:
    """How to read the numbers: one bullet per line."""
    st.markdown("**How to read it**\n" + "\n".join(f"- {line}" for line in lines))


def open_button(name: str, key: str) -> None:
    """Make ``name`` the sidebar's network (the sidebar is already drawn: it takes effect on the rerun)."""
    if st.button(f"Open {name} in the calculator", key=key, help="Sets the sidebar's network; every page follows."):
        choose_model(name)
        st.rerun()


def preferred(options: list, value) -> int:
    """The position of ``value`` among ``options`` (the first one if it is not there)."""
    return options.index(value) if value in options else 0


def number(x: float, digits: int = 3) -> str:
    return f"{x:,.{digits}f}"


# == lab 1 ==========================================================================================================

def lab1() -> None:
    question("How much of VGG's forward pass is convolution, and how fast could a Tesla K80 run VGG16, GoogLeNet and "
             "ResNet50 from its published peak, in single and double precision? What does PPP change?")
    c1, c2, c3 = st.columns(3)
    name = c1.radio("Network", ["vgg16", "vgg19"], index=1, horizontal=True, key="lab1_model")
    ppp = c2.slider("PPP (platform percent of peak)", 0.05, 1.0, 1.0, step=0.05, key="lab1_ppp",
                    help="cuDNN-class kernels come close to 1.0; frameworks with overhead 0.5 or less.")
    clock = c3.radio("K80 clock", list(labs.K80), horizontal=True, key="lab1_clock",
                     help="boost: 875 MHz, NVIDIA's headline 8.73 / 2.91 TFLOP/s per board; base: 560 MHz")
    report = core.analyze(name)
    share = labs.conv_share(report)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Conv share of MACs", f"{share['macs_share']:.2%}")
    m2.metric("Conv share of FLOPs", f"{share['flops_share']:.2%}")
    m3.metric("Forward GMACs", number(share["macs"] / 1e9))
    m4.metric("Forward GFLOPs", number(share["flops"] / 1e9))
    st.dataframe(labs.flop_table(report), hide_index=True, width="stretch", height=260, key="lab1_flops",
                 column_config={"MACs": st.column_config.NumberColumn(format="localized"),
                                "FLOPs": st.column_config.NumberColumn(format="localized"),
                                "% of FLOPs": st.column_config.NumberColumn(format="%.2f")})
    st.subheader("A Tesla K80 from its datasheet (batch 1)")
    st.dataframe(labs.k80_table(db, clock, ppp), hide_index=True, width="stretch", key="lab1_k80",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("peak TFLOP/s", "GMACs", "GFLOPs", "ms", "ms, MACs as FLOPs", "PALEO ms")}
                 | {"images/s": st.column_config.NumberColumn(format="%.1f")})
    reading(
        "ms = FLOPs ÷ (PPP × peak): the fastest the pass could run. PALEO ms adds each layer's memory time; "
        "real runs are slower still. Halving PPP doubles every time.",
        "PPP is the fraction of the datasheet peak the software reaches: cuDNN-class libraries come close to 100%, "
        "frameworks with more overhead 50% or less.",
        "1 MAC = 2 FLOPs: VGG16 is 15.47 G multiply-adds = 30.9 GFLOP. A report divided 15.5 G \"FLOPs\" (a "
        "counter's MACs) by FLOP/s, so its times are half what they should be — the \"ms, MACs as FLOPs\" column.",
        "A K80 is two GK210 GPUs on one board: 8.73 (fp32) and 2.91 (fp64) TFLOP/s are per board, half that per GPU. "
        "A report labelled its fp64 rows \"double-GPU\": double precision is a number format, not two GPUs.",
        "One image runs on one GPU: the board's rows are a throughput (two images at once), not a shorter latency.")
    st.subheader("Why per-layer GPU timings add up to more than the whole pass")
    overhead = st.number_input("Assumed cost per timed layer (µs): kernel launch + synchronisation + profiler",
                               min_value=0.0, max_value=10_000.0, value=10.0, step=5.0, key="lab1_overhead_us")
    e = estimate(report, db.devices[labs.K80[clock][0]], ppp=ppp)
    s = labs.layer_timing_sum(e, overhead)
    t1, t2 = st.columns(2)
    t1.metric("Whole forward pass (PALEO, one K80 GPU)", f"{number(s['whole_ms'])} ms")
    t2.metric(f"Sum of {s['layers']} layers timed one by one", f"{number(s['sum_ms'])} ms")
    reading("Timed one by one, every layer pays a kernel launch, a device synchronisation (the GPU runs "
            "asynchronously) and the profiler's own cost, and nothing overlaps across layer boundaries; a whole-pass "
            "timing pays these once. The µs per layer above is an assumption to play with, not a measurement.")
    open_button(name, "lab1_open")


# == lab 2 ==========================================================================================================

@st.cache_data(max_entries=16, show_spinner=False)
def _lab2_tables(cpu, gpu, batch: int, shape):
    """Lab 2's numbers for ten networks (about 0.1 s to build): kept per device pair, batch and input, so a control
    elsewhere on the page does not rebuild them."""
    table = labs.network_table(labs.SURVEY_NETWORKS, cpu, gpu, batch, shape)
    one = table if batch == 1 else labs.network_table(labs.SURVEY_NETWORKS, cpu, gpu, 1, shape)
    return (table, labs.network_points(labs.SURVEY_NETWORKS, [cpu, gpu], batch, input_shape=shape), one,
            labs.throughput_table(labs.SURVEY_NETWORKS, [cpu, gpu], input_shape=shape))


def lab2() -> None:
    question("Where do eleven devices from 1999 to 2021 sit on one roofline, where do ten torchvision networks fall "
             "on a CPU's and a GPU's roofline, and does latency follow FLOPs or parameters?")
    cpus, gpus = labs.devices_of_kind(db, "CPU"), labs.devices_of_kind(db, "GPU")
    c1, c2, c3, c4 = st.columns(4)
    cpu_id = c1.selectbox("CPU", cpus, index=preferred(cpus, "core-i7-920"), key="lab2_cpu",
                          format_func=lambda i: db.devices[i].name)
    gpu_id = c2.selectbox("GPU", gpus, index=preferred(gpus, "k80"), key="lab2_gpu",
                          format_func=lambda i: db.devices[i].name)
    batch = c3.select_slider("Batch", list(labs.THROUGHPUT_BATCHES), value=1, key="lab2_batch")
    own = c4.radio("Input", ["3×224×224", "each network's own"], key="lab2_input",
                   help="torchvision's EfficientNet-B7 expects 600×600, Inception v3 299×299") != "3×224×224"
    shape = None if own else "3x224x224"
    cpu, gpu = db.devices[cpu_id], db.devices[gpu_id]
    table, points, one, tp = _lab2_tables(cpu, gpu, batch, shape)
    st.caption("CPU, GPU, batch and input apply to the network tabs.")
    tabs = st.tabs(["Eleven devices", "Ten networks on two rooflines", "Latency vs FLOPs and params",
                    "Throughput, forward : backward", "Measured here"], key="lab2_tab", on_change="rerun")
    t_dev, t_net, t_lat, t_tp, t_meas = tabs          # only the open tab runs: lab 2 draws a dozen charts in all
    measured = st.session_state.get(bm.ACROSS_ROWS) or []
    if t_dev.open:
        with t_dev:
            st.subheader("Eleven devices on one roofline")
            precisions = [FASTEST, *PRECISION_KEYS]
            prec = st.selectbox("Precision", precisions, key="lab2_precision",
                                format_func=lambda p: "fastest each has" if p == FASTEST else p)
            roofs, _, ridges, left_out = overlay(db, SURVEY, prec)
            if left_out:
                st.info(f"Left out (no {prec} peak): " + "; ".join(d.name for d, _ in left_out))
            if not roofs.empty:
                show(roofline_chart(roofs, pd.DataFrame()), "lab2_survey_chart", f"survey_roofline_{prec}")
                st.dataframe(ridges, hide_index=True, width="stretch", key="lab2_ridges",
                             column_config={"year": st.column_config.NumberColumn(format="%d")})
            st.caption("The GeForce 256's 50 GFLOP/s is the survey's figure, not a vendor's: its "
                       "fixed-function pipeline had no programmable FLOPs.")
        return
    if t_meas.open:
        with t_meas:
            st.subheader("Measured on this machine")
            if st.button("Time the ten networks here (batch 1, 3×64×64, CPU, ~20 s)", key="lab2_time",
                         help="Loads PyTorch the first time; shared with the Benchmark page's 'Across networks'."):
                bar = st.progress(0.0, text="loading torch…")
                try:
                    def step(f, msg):
                        bar.progress(min(max(f, 0.0), 1.0), text=msg)

                    rows = bm.time_networks(labs.SURVEY_NETWORKS, device="cpu", warmup=1, repeats=3,
                                            max_seconds=20.0, threads=1, progress=step)
                except (core.CalcError, ImportError) as e:
                    st.error(f"Timing failed: {e}")
                else:
                    st.session_state[bm.ACROSS_ROWS] = rows
                    st.rerun()
                finally:
                    bar.empty()
            if not measured:
                st.info("Nothing measured yet: press the button, or time networks on the Benchmark page.")
                return
            for r in measured:
                if "refused" in r:
                    st.caption(f"{r['network']}: not timed — {r['refused']}")
            df = bm.across_frame(measured)
            if df.empty:
                return
            rho = bm.correlations(df)
            st.metric("Spearman ρ measured (this CPU): FLOPs | params",
                      f"{rho['flops']:.2f} | {rho['params']:.2f}" if rho["flops"] is not None else "—")
            show(bm.scatter(df, "GFLOPs", "forward GFLOPs (measured latency)"), "lab2_measured_scatter",
                 "measured_latency_vs_flops")
            st.caption(f"Measured: {rho['n']} networks, forward median at batch 1 on this CPU (inputs as "
                       f"listed); they are the "
                       "\"measured (this CPU)\" points on the roofline above, at the intensity of the input "
                       "they ran at.")
        return
    if t_net.open:
        with t_net:
            st.dataframe(table, hide_index=True, width="stretch", key="lab2_networks",
                         column_config={c: st.column_config.NumberColumn(format="%.2f") for c in table.columns
                                        if c not in ("network", "input", "CPU bound", "GPU bound")})
            mpoints = labs.measured_points(measured)
            chart_points = pd.concat([points, mpoints], ignore_index=True) if not mpoints.empty else points
            show(roofline_chart(roofline_frame([cpu, gpu], "fp32"), chart_points), "lab2_roofline",
                 f"ten_networks_{cpu.id}_{gpu.id}_b{batch}")
            memory_bound = {d: ", ".join(table.loc[table[f"{d} bound"] == "memory", "network"]) or "none"
                            for d in ("CPU", "GPU")}
            reading(
                f"Operational intensity = forward FLOPs ÷ bytes moved (weights + each layer's inputs and "
                f"outputs). Left of a "
                f"device's ridge a network is memory-bound: on the {cpu.name} (ridge "
                f"{number(cpu.ridge('fp32'), 2)} FLOP/byte) {memory_bound['CPU']}; on the {gpu.name} (ridge "
                f"{number(gpu.ridge('fp32'), 2)}) {memory_bound['GPU']}.",
                "Points are PALEO predictions at PPP 1 (an upper bound); a larger batch reuses the weights and moves "
                "networks right. Memory in the table is inference memory: weights + the peak of live activations.")
    if t_lat.open:
        with t_lat:
            st.subheader("Latency vs FLOPs and parameters (predicted, batch 1)")
            for col, (dev, column) in zip(st.columns(2), ((cpu, "CPU ms"), (gpu, "GPU ms"))):
                df = labs.latency_frame(one, column)
                rho = labs.rank_correlations(df)
                col.metric(f"Spearman ρ, {dev.name}: FLOPs | params",
                           f"{rho['flops']:.2f} | {rho['params']:.2f}")
                show(bm.scatter(df, "GFLOPs", "forward GFLOPs (predicted latency)"), f"lab2_scatter_{column[:3]}",
                     f"latency_vs_flops_{dev.id}", col)
            st.caption("Predicted by PALEO, so latency follows FLOPs by construction; measured latency "
                       "(below) is the test.")
    if t_tp.open:
        with t_tp:
            st.subheader("Throughput vs batch (predicted)")
            show(labs.throughput_chart(tp), "lab2_throughput", f"throughput_{cpu.id}_{gpu.id}")

            st.subheader("Forward : backward")
            ratio = table["backward ÷ forward FLOPs"]
            st.metric("Backward ÷ forward FLOPs (ten networks)", f"{ratio.min():.2f} – {ratio.max():.2f}")
            reading("Backward ≈ 2 × forward: each layer computes the gradient w.r.t. its input and w.r.t. its "
                    "weights, each "
                    "as many multiply-adds as the forward (the first layer needs no input gradient; "
                    "activation, pooling and "
                    "concatenation layers move the ratio a little either way).",
                    "A report's forward : backward FLOP ratios of up to 3866 : 1 are the profiler's: it "
                    "estimates FLOPs of "
                    "forward convolutions and matrix multiplies, but in the backward pass only of the linear "
                    "layers' matrix "
                    "multiplies — SqueezeNet, with no linear layer, shows almost no backward FLOPs.")


# == lab 3 ==========================================================================================================

def lab3() -> None:
    question("What are VGG11/13/19's FLOPs layer by layer, for one image and for a batch, and where do they sit on a "
             "V100's and an A100's roofline?")
    c1, c2 = st.columns(2)
    name = c1.radio("Network", list(labs.VGGS), horizontal=True, key="lab3_model")
    batch = int(c2.number_input("Batch", min_value=1, max_value=4096, value=16, step=1, key="lab3_batch"))
    report = core.analyze(name, batch_size=batch)
    tot = labs.batch_totals(report)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("MACs per image", f"{tot['macs_image']:,}")
    m2.metric(f"MACs × {batch}", f"{tot['macs_batch']:,}")
    m3.metric("FLOPs per image", f"{tot['flops_image']:,}")
    m4.metric(f"FLOPs × {batch}", f"{tot['flops_batch']:,}")
    table = labs.pen_and_paper(report)
    st.dataframe(table, hide_index=True, width="stretch", key="lab3_table",
                 column_config={c: st.column_config.NumberColumn(format="localized") for c in table.columns[5:]})
    reading("MACs = C_out · H_out · W_out · C_in · k · k per image; FLOPs = 2 × MACs (plus ReLU and pooling, which "
            "only the totals include).",
            "Batch folded in silently: a report's \"VGG11 total 121.7·10⁹\" is 7.61 G multiply-adds × batch 16 — "
            "neither per image nor FLOPs. Its VGG13 table also used wrong output sizes; here they come from shape "
            "propagation.")
    st.subheader("V100 vs A100")
    ridges = labs.ridge_table(db)
    st.dataframe(ridges, hide_index=True, width="stretch", key="lab3_ridges",
                 column_config={"ridge FLOP/byte": st.column_config.NumberColumn(format="%.2f")})
    pair = [db.devices["v100-sxm2"], db.devices["a100-40gb-sxm"]]
    show(roofline_chart(roofline_frame(pair, "fp32"), labs.network_points(labs.VGGS, pair, batch)),
         "lab3_roofline", f"vgg_v100_a100_b{batch}")
    st.markdown(f"**{name} at batch {batch}: forward FLOPs by convolution algorithm (A100)**")
    st.dataframe(labs.algorithm_table(report, pair[1]), hide_index=True, key="lab3_algorithms",
                 column_config={"GFLOPs": st.column_config.NumberColumn(format="%.3f")})
    reading("Ridge = peak ÷ bandwidth: V100 15.7 TFLOP/s ÷ 900 GB/s = 17.4 FLOP/byte; A100 19.5 ÷ 1555 = 12.5 on "
            "CUDA cores, 100 with TF32 tensor cores (156 TFLOP/s).",
            "Profiler FLOPs are not model FLOPs: Nsight's fadd/fmul/ffma counters see CUDA-core instructions only. On "
            "an A100, convolutions run as TF32 on tensor cores, invisible to them, so \"measured\" FLOPs fall far "
            "below the model's; reports read this as \"the A100 does fewer FLOPs\" or \"the V100 is better "
            "balanced\".",
            "Winograd and FFT convolutions do different arithmetic from 2 × MACs (table), another reason a counter's "
            "total differs from the model's.")
    open_button(name, "lab3_open")


# == lab 4 ==========================================================================================================

def lab4() -> None:
    question("How much GPU memory does training ResNet18/50 take compared with its parameters, on one GPU and on "
             "two data-parallel GPUs?")
    c1, c2, c3, c4, c5 = st.columns(5)
    name = c1.radio("Network", list(labs.RESNETS), horizontal=True, key="lab4_model")
    batch = int(c2.number_input("Global batch", min_value=1, max_value=4096, value=32, step=1, key="lab4_batch"))
    gpus = c3.radio("GPUs (data parallel)", [1, 2], horizontal=True, key="lab4_gpus")
    optimizer = c4.selectbox("Optimizer", list(core.OPTIMIZERS), index=1, key="lab4_optimizer")
    dtype = c5.selectbox("Precision", ["fp32", "mixed", "fp16", "bf16"], key="lab4_dtype")
    overhead = st.number_input("Assumption: framework + CUDA context + cuDNN workspace per GPU (MiB)", min_value=0.0,
                               max_value=100_000.0, value=400.0, step=50.0, key="lab4_overhead_mib",
                               help="Not computed: typically a few hundred MiB (context, kernels, allocator reserve).")
    m = labs.training_memory(name, batch, gpus, dtype, optimizer, overhead)
    k1, k2, k3, k4 = st.columns(4)
    k1.metric("Parameters", f"{m['params']:,}")
    k2.metric(f"Parameter memory ({dtype})", format_bytes(m["param_bytes"], 2),
              help=f"{m['params']:,} × {m['param_bytes'] // m['params']} B = {m['param_bytes']:,} B")
    k3.metric(f"Training memory per GPU (batch {m['per_gpu_batch']} each)", format_bytes(m["per_gpu"], 2))
    k4.metric(f"All {gpus} GPU(s) ÷ parameter memory", f"{m['all_gpus'] / m['param_bytes']:,.1f}×")
    st.dataframe(pd.DataFrame([{"part": k, "per GPU MiB": v / labs.MIB, "share": v / m["per_gpu"]}
                               for k, v in m["parts"].items()]), hide_index=True, key="lab4_parts",
                 column_config={"per GPU MiB": st.column_config.NumberColumn(format="%.1f"),
                                "share": st.column_config.NumberColumn(format="percent")})
    cap = db.devices["v100-sxm2"].memory_capacity
    show(memory_chart(labs.memory_vs_batch(name, gpus, dtype, optimizer, overhead), cap / 2 ** 30), "lab4_chart",
         f"{name}_memory_{gpus}gpu_{dtype}")
    st.caption("Per GPU vs global batch; the red line is a 16 GB V100.")
    reading("Parameter memory = params × 4 B at fp32: ResNet18 11,689,512 × 4 = 46.8 MB, ResNet50 25,557,032 × 4 = "
            "102.2 MB.",
            "Training adds gradients (same size), optimizer state (momentum 1×, Adam 2×) and the activations saved "
            "for backward, which grow with the batch and soon dominate; the context and workspace come on top.",
            "A report's 130–290× gap between GPU memory and parameters is these parts, plus what PyTorch's caching "
            "allocator keeps reserved (which GPUtil counts as used) — not \"communication overhead\".",
            "On 2 data-parallel GPUs each holds a full replica (weights, gradients, state, context) and half the "
            "batch's activations: less per GPU, more in total. A report expected 2× and read equal totals as "
            "\"avoiding duplication\".")
    open_button(name, "lab4_open")


# == lab 5 ==========================================================================================================

def lab5() -> None:
    question("What do conv2 of the PyTorch-examples MNIST network cost by pen and paper, how do FLOPs and memory grow "
             "with the batch (1…501), and what changes when conv2 is widened?")
    c1, c2 = st.columns(2)
    batch = c1.slider("Batch", 1, 501, 1, key="lab5_batch")
    width = int(c2.number_input("Widened conv2: output channels", min_value=1, max_value=1024, value=128, step=1,
                                key="lab5_width"))
    report = core.analyze(labs.MNIST, batch_size=batch)
    for line in report.explain("conv2"):
        st.latex(formula_latex(line))
    st.metric(f"conv2 FLOPs at batch {batch}", f"{report.layer('conv2').flops:,}")
    wide = labs.widened(width)
    nets = [labs.MNIST, wide]
    fc1_in = core.analyze(wide).layer("fc1").input_shapes[0][-1]
    sweep = labs.vs_batch(nets)
    g1, g2 = st.columns(2)
    for col, column in zip(st.columns(2), ("conv2 GFLOPs", "training MiB")):
        wide_frame = labs.by_network(sweep, column)
        show(lines_chart(wide_frame, "batch", list(wide_frame.columns[1:]), column, log_x=False),
             f"lab5_{column.split()[0]}_chart", f"mnist_{column.replace(' ', '_')}_vs_batch", col)
    st.subheader(f"conv2 at 64 vs {width} channels (batch {batch})")
    st.dataframe(labs.side_by_side(nets, batch), hide_index=True, width="stretch", key="lab5_side_by_side")
    st.dataframe(labs.units_table(report), hide_index=True, key="lab5_units",
                 column_config={c: st.column_config.NumberColumn(format="localized") for c in ("count", "bytes")})
    reading("conv2: 64·24·24 = 36,864 outputs, each 288 multiplies + 287 adds + 1 bias add = 576 FLOPs "
            "(= 2 × 288 MACs): 21,233,664 FLOPs per image.",
            "FLOPs grow exactly linearly with the batch; memory is a fixed part (weights, gradients, optimizer "
            "state) plus the batch × activations.",
            "A profiler's conv2 FLOPs differ from these: cuDNN chose Winograd kernels (fewer multiplies, extra "
            "transforms), and fadd/fmul/ffma counters see only what runs on CUDA cores.",
            "Units: counts are not bytes. A report added parameter and activation counts and called them bytes; at "
            "fp32 multiply by 4 (table).",
            f"Widening conv2 to {width} channels scales its outputs and MACs and fc1's inputs "
            f"(9,216 → {fc1_in:,}); fc1 holds most parameters.")
    open_button(labs.MNIST, "lab5_open")


LAB_PAGES = {1: lab1, 2: lab2, 3: lab3, 4: lab4, 5: lab5}
missing = [i for i in labs.NEEDS[lab or 1] if i not in db.devices]
if missing:                            # a built-in entry that did not load (the Devices page says why)
    st.error(f"This lab needs {', '.join(missing)} from device_specs.json, which did not load.")
    st.stop()
try:
    LAB_PAGES[lab or 1]()
except core.CalcError as e:
    st.error(f"This lab cannot compute that: {e}")
