"""The Estimates page's Data parallel tab: the sidebar's network trained on 1 to 64 GPUs (``core.scaling``), its
scaling efficiency, where the step's time goes at each GPU count (compute, the all-reduce overlapped with the
backward, the exposed all-reduce, synchronisation, input wait), the first GPU count at which communication adds more
than a chosen share of the step (``core.sweeps.communication_dominates``) and the DDP model's typical error. Above
one node of ``gpus_per_node`` GPUs the workers are whole nodes joined by the network chosen here. Built once per
input (``ui.memo``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import CalcError
from core.api import scaling
from core.choices import ALLREDUCE, COMM_MODELS, INPUT_PIPELINES, SCALING_MODES
from core.data_parallel import typical_error
from core.sweeps import communication_dominates
from ui.charts import CONFIG, LEGEND, LOG2, SCHEMA, cached_spec, full, records, show
from ui.explain import how
from ui.memo import inputs_key, memo
from ui.shared_cache import device_digest
from ui.tables import dataframe

GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)
GPUS_PER_NODE = (1, 2, 4, 8, 16)
NODE_LINK = "ib-hdr"                       # the network between nodes preselected, where the database has it
COMM_NAMES = {"ddp": "DDP", "paleo": "PALEO"}
# the parts of one step, bottom to top: they add up to the step (the overlapped all-reduce runs during the backward)
PARTS = {"compute": ("compute_s", "#9ecae1"), "all-reduce, overlapped": ("overlapped_s", "#3182bd"),
         "all-reduce, exposed": ("exposed_s", "#e6550d"), "synchronisation": ("sync_s", "#756bb1"),
         "input wait": ("input_wait_s", "#8c6d31")}


TABLE = {"workers": "GPUs", "nodes": "nodes", "per_worker_batch": "batch per GPU", "speedup": "speed-up",
         "efficiency": "efficiency", "communication_share": "communication share",
         "training_step_s": "training step ms", "samples_per_s": "samples/s", "compute_s": "compute ms",
         "allreduce_s": "all-reduce ms", "overlapped_s": "overlapped ms", "exposed_s": "exposed ms",
         "sync_s": "synchronisation ms", "input_wait_s": "input wait ms"}

FORMATS = {"samples/s": "%.1f", "speed-up": "%.2f", "efficiency": "percent", "communication share": "percent"}
SXM_LINK = {"p100-sxm2": "nvlink1-p100", "v100-sxm2": "nvlink2-v100", "a100-40gb-sxm": "nvlink3-a100",
            "a100-80gb-sxm": "nvlink3-a100", "h100-sxm": "nvlink4-h100", "h200-sxm": "nvlink4-h100",
            "b200": "nvlink5-b200"}      # the NVLink (NVSwitch from A100 on) of an SXM board's server


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as the tab's table shows them: times in ms, in the order of the step's parts."""
    out = frame[list(TABLE)].rename(columns=TABLE)
    for col in TABLE.values():
        if col.endswith(" ms"):
            out[col] = out[col] * 1e3
    return out


def scaling_frame(report, dev, link, node_link, settings: dict, *, mode: str, gpus_per_node: int | None,
                  workers=GPU_COUNTS) -> pd.DataFrame:
    """``core.scaling``'s rows for ``workers`` GPUs, built once per input; ``settings``: estimate keywords."""
    links = {"link": device_digest(link), "node_link": device_digest(node_link) if node_link else None}
    key = ("dp_tab", *inputs_key(report, dev, **settings, **links), mode, gpus_per_node, tuple(workers))

    def build():
        kw = {**settings, **({"node_link": node_link} if gpus_per_node else {})}
        return pd.DataFrame(scaling(report, dev, link, workers=workers, batch_size=report.batch_size, mode=mode,
                                    dtype=report.dtype, optimizer=report.optimizer, gpus_per_node=gpus_per_node,
                                    **kw))
    return memo(key, build)


def step_parts(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per GPU count and part of the step: seconds and share of the step (compute here is the step's compute
    less the part of the backward the all-reduce overlaps, so the parts add up to the step)."""
    rows = []
    for _, r in frame.iterrows():
        step = r["training_step_s"]
        for order, (part, (col, _)) in enumerate(PARTS.items()):
            s = r[col] - (r["overlapped_s"] if col == "compute_s" else 0.0)
            rows.append({"GPUs": int(r["workers"]), "part": part, "order": order, "share": s / step if step else 0.0,
                         "time": full(s, "s"), "share_text": f"{s / step:.1%}" if step else "—"})
    return pd.DataFrame(rows)


def efficiency_chart(frame: pd.DataFrame, share: float, first: int | None) -> dict:
    """Scaling efficiency against GPUs (log₂), ideal scaling as a dashed line, and a red rule (labelled) at ``first``,
    the fewest GPUs at which communication adds more than ``share`` of the step."""
    rows = records(frame[["workers", "efficiency", "speedup", "communication_share"]].assign(
        efficiency_text=[f"{v:.1%}" if v == v and v is not None else "—" for v in frame["efficiency"]],
        share_text=[f"{v:.1%}" for v in frame["communication_share"]]))
    x = {"field": "workers", "type": "quantitative", "title": "GPUs", "scale": LOG2, "axis": {"format": ",d"}}
    y = {"field": "efficiency", "type": "quantitative", "title": "scaling efficiency",
         "axis": {"format": ".0%"}, "scale": {"domainMin": 0}}
    tips = [{"field": "workers", "type": "quantitative", "title": "GPUs", "format": ",d"},
            {"field": "efficiency_text", "type": "nominal", "title": "efficiency"},
            {"field": "speedup", "type": "quantitative", "title": "speed-up", "format": ",.2f"},
            {"field": "share_text", "type": "nominal", "title": "communication share of the step"}]
    layers = [{"data": {"values": rows}, "mark": {"type": "line", "point": True},
               "encoding": {"x": x, "y": y, "tooltip": tips}},
              {"data": {"values": [{"efficiency": 1.0, "label": "ideal: every GPU as fast as one alone"}]},
               "mark": {"type": "rule", "strokeDash": [4, 4], "color": "gray"},
               "encoding": {"y": y, "tooltip": [{"field": "label", "type": "nominal", "title": "line"}]}}]
    if first is not None:
        mark = [{"workers": first, "label": f"communication > {percent(share)} of the step from here"}]
        layers += [{"data": {"values": mark}, "mark": {"type": "rule", "color": "red", "strokeDash": [6, 3]},
                    "encoding": {"x": x, "tooltip": [{"field": "label", "type": "nominal", "title": "line"}]}},
                   {"data": {"values": [{**mark[0], "efficiency": 1.0, "text": f"communication > {percent(share)}"}]},
                    "mark": {"type": "text", "color": "red", "align": "right", "dx": -4, "dy": 12},
                    "encoding": {"x": x, "y": y, "text": {"field": "text", "type": "nominal"}}}]
    return {"config": CONFIG, "layer": layers, "height": 300, "$schema": SCHEMA}


def parts_chart(parts: pd.DataFrame) -> dict:
    """Stacked bars per GPU count: each part's share of the training step."""
    colors = [c for _, c in PARTS.values()]
    return {"config": CONFIG, "data": {"values": records(parts)}, "mark": {"type": "bar"}, "height": 300,
            "encoding": {
                "x": {"field": "GPUs", "type": "ordinal", "title": "GPUs", "axis": {"labelAngle": 0}},
                "y": {"field": "share", "type": "quantitative", "title": "share of the step",
                      "stack": "zero", "axis": {"format": ".0%"}},
                "color": {"field": "part", "type": "nominal", "title": None, "legend": LEGEND,
                          "scale": {"domain": list(PARTS), "range": colors}, "sort": list(PARTS)},
                "order": {"field": "order", "type": "quantitative"},
                "tooltip": [{"field": "GPUs", "type": "ordinal"}, {"field": "part", "type": "nominal"},
                            {"field": "time", "type": "nominal", "title": "time per step"},
                            {"field": "share_text", "type": "nominal", "title": "share of the step"}]},
            "$schema": SCHEMA}


def percent(share: float) -> str:
    """A share as the app writes it: "10 %", "0.25 %", "under 0.01 %"."""
    return "under 0.01 %" if 0 < share < 1e-4 else f"{share * 100:.2g} %"


def dominates_sentence(first: int | None, share: float, most: int = GPU_COUNTS[-1]) -> str:
    """"communication adds more than 10 % of the step from 32 GPUs" (or "at none up to 64 GPUs")."""
    if first is None:
        return f"Communication adds more than {percent(share)} of the step at none up to {most} GPUs"
    return f"Communication adds more than {percent(share)} of the step from **{first} GPU{'s' if first > 1 else ''}**"


def error_words(comm_model: str) -> tuple[str, str]:
    """(the typical error of the scaling efficiency in a few words, the longer form for the help icon)."""
    if comm_model == "paleo":
        return ("PALEO's term: no measured error", "PALEO's all-reduce has not been checked against measured runs; "
                "the DDP model has its typical error.")
    e = typical_error()
    if e.get("median_points") is None:
        return "typical error of the efficiency not yet measured", f"Not yet measured: {e['basis']}."
    return (f"efficiency typically ±{e['median_points']:.1f} points",
            f"Held out by source: median |error| {e['median_points']:.1f} points of efficiency, 1 in 10 off by more "
            f"than {e['p90_points']:.1f} ({e['rows']} rows; {e['basis']}).")


def default_link(dev, names: list[str]) -> int:
    """The link a device's GPUs have in their usual server: NVLink / NVSwitch for SXM boards, else PCIe 3.0."""
    want = SXM_LINK.get(dev.id, "pcie3-x16")
    return names.index(want) if want in names else 0


def _controls(tab, db, dev) -> dict:
    names = list(db.interconnects)
    a, b, c, d = tab.columns(4)
    link = a.selectbox("Interconnect in a node", names, index=default_link(dev, names), key="scaling_link",
                       format_func=lambda i: db.interconnects[i].name)
    comm = b.segmented_control("Model", list(COMM_MODELS), format_func=COMM_NAMES.get, default=COMM_MODELS[0],
                               required=True, key="scaling_comm_model",
                               help="DDP: gradient buckets all-reduced during the backward at NCCL's achieved "
                                    "bandwidth, plus synchronisation; PALEO: the whole all-reduce after the backward "
                                    "at the datasheet rate, over one link for every GPU") or COMM_MODELS[0]
    mode = c.radio("Scaling", list(SCALING_MODES), horizontal=True, key="scaling_mode",
                   help="strong: the batch in the sidebar is split over the GPUs; weak: each GPU keeps it")
    algo = d.selectbox("All-reduce", list(ALLREDUCE), key="scaling_allreduce")
    a, b, c, d = tab.columns(4)
    per_node = a.selectbox("GPUs per node", GPUS_PER_NODE, index=GPUS_PER_NODE.index(8), key="scaling_gpus_per_node",
                           disabled=comm == "paleo", help="above it, the GPUs are whole nodes joined by the network "
                           "between nodes (DDP only: PALEO has one link for every GPU)")
    node_link = b.selectbox("Network between nodes", names, index=names.index(NODE_LINK) if NODE_LINK in names else 0,
                            key="scaling_node_link", format_func=lambda i: db.interconnects[i].name,
                            disabled=comm == "paleo")
    nics = int(c.number_input("NICs per node", 1, 64, 1, key="scaling_nics", disabled=comm == "paleo"))
    pipeline = d.selectbox("Input pipeline", list(INPUT_PIPELINES), key="scaling_input",
                           help="synthetic: no decoding; cpu or dali: the node's CPU cores decode every step's "
                                "images, and a step lasts at least as long")
    a, b = tab.columns([1, 3])
    cores = int(a.number_input("CPU cores per node", 1, 1024, 32, key="scaling_cpu_cores",
                               disabled=pipeline == "synthetic"))
    share = b.slider("Mark where communication adds more than this share of the step", 1, 50, 10, format="%d %%",
                     key="scaling_share") / 100
    settings = {"allreduce": algo, "comm_model": comm, "input_pipeline": pipeline,
                **({"cpu_cores": cores} if pipeline != "synthetic" else {}),
                **({"nics": nics} if comm == "ddp" else {})}
    return {"link": db.interconnects[link], "node_link": db.interconnects[node_link] if comm == "ddp" else None,
            "mode": mode, "gpus_per_node": per_node if comm == "ddp" else None, "settings": settings,
            "share": share, "comm": comm}


def show_tab(tab, report, dev, db, time_settings: dict, name: str) -> None:
    """The tab's controls, its sentence and typical error, the two charts, the table and how it is computed."""
    c = _controls(tab, db, dev)
    try:
        frame = scaling_frame(report, dev, c["link"], c["node_link"], {**time_settings, **c["settings"]},
                              mode=c["mode"], gpus_per_node=c["gpus_per_node"])
    except CalcError as e:
        tab.error(str(e))
        return
    first = communication_dominates(frame.to_dict("records"), c["share"])
    short, long = error_words(c["comm"])
    tab.caption(f"{dominates_sentence(first, c['share'])} ({COMM_NAMES[c['comm']]} model; {short}).", help=long)
    key = ("dp_charts", *inputs_key(report, dev, **time_settings, **c["settings"]), device_digest(c["link"]),
           device_digest(c["node_link"]) if c["node_link"] else None, c["mode"], c["gpus_per_node"])
    left, right = tab.columns(2)
    with left:
        show(cached_spec((*key, "efficiency", c["share"]), lambda: efficiency_chart(frame, c["share"], first)),
             "scaling_chart", f"{name}_scaling_efficiency")
    with right:
        show(cached_spec((*key, "parts"), lambda: parts_chart(step_parts(frame))), "scaling_parts_chart",
             f"{name}_scaling_parts")
    dataframe(table(frame), key="scaling_table", container=tab,
              column_config={c: st.column_config.NumberColumn(format=FORMATS.get(c, "%.3f")) for c in TABLE.values()
                             if c.endswith(" ms") or c in FORMATS})
    nodes = (f" Above {c['gpus_per_node']} GPUs per node the GPUs are whole nodes: a ring inside each node over "
             f"{c['link'].name}, then a ring between nodes over {c['settings']['nics']} × {c['node_link'].name}."
             if c["gpus_per_node"] else "")
    how("DDP (PyTorch's DistributedDataParallel over NCCL) groups the gradients into buckets (the first 1 MiB, then "
        "25 MiB) and all-reduces each as soon as the backward has made it, overlapping the rest of the backward; "
        "only what is still running after the backward's last layer (exposed) adds to the step, with the wait for "
        "the slowest GPU (synchronisation: grows with √(2 ln GPUs) and with the host's time issuing the step's "
        "kernels) and, with the DataLoader decoding on the CPU, its time beyond the GPU's step (input wait). "
        "PALEO instead adds the whole all-reduce after the backward, at the link's datasheet rate."
        + nodes + " Efficiency = speed-up ÷ GPUs; the marked share is (exposed + synchronisation) ÷ step.",
        container=tab)
