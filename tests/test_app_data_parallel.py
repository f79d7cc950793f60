"""The Estimates page's Data parallel tab (ui/data_parallel_view.py): 1 to 64 GPUs, the sentence on where
communication passes the chosen share of the step (checked against core.scaling and communication_dominates), the
typical error beside it, valid Vega-Lite charts, and its controls (PALEO, nodes, input pipeline, the share)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from altair.vegalite.v6.schema import load_schema
from streamlit.testing.v1 import AppTest

from core.api import scaling
from core.devices import load_devices
from core.sweeps import communication_dominates
from ui import data_parallel_view as dpv

PAGE = str(Path(__file__).resolve().parent.parent / "views" / "estimates.py")


def _tab(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["estimates_tab"] = "Data parallel"
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "GPUs" in d.value.columns)


def _sentence(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Communication adds more than"))


def _core_rows(link="nvlink2-v100", node_link="ib-hdr", mode="strong", **kw):
    db = load_devices(user_path=None)
    return scaling("mnist_cnn", "v100-sxm2", db.interconnects[link], workers=dpv.GPU_COUNTS, batch_size=1, mode=mode,
                   gpus_per_node=kw.pop("gpus_per_node", 8), node_link=db.interconnects[node_link], **kw)


def test_the_tab_shows_1_to_64_gpus_as_core_computes_them():
    at = _tab()
    table = _table(at)
    assert list(table["GPUs"]) == [1, 2, 4, 8, 16, 32, 64]
    assert list(table["nodes"]) == [1, 1, 1, 1, 2, 4, 8]                     # 8 GPUs per node above one node
    rows = _core_rows(allreduce="ring", comm_model="ddp", input_pipeline="synthetic", nics=1)
    assert table["efficiency"].tolist() == pytest.approx([r["efficiency"] for r in rows])
    assert table["exposed ms"].tolist() == pytest.approx([r["exposed_s"] * 1e3 for r in rows])
    first = communication_dominates(rows, 0.10)
    assert _sentence(at).startswith(dpv.dominates_sentence(first, 0.10))
    assert "typical error of the efficiency not yet measured" in _sentence(at) or "points" in _sentence(at)


def test_the_link_starts_at_the_devices_own():
    # the page's default device is the V100-SXM2: its server joins the GPUs by NVLink 2
    at = _tab()
    assert at.selectbox(key="scaling_link").value == "nvlink2-v100"
    names = list(load_devices(user_path=None).interconnects)
    db = load_devices(user_path=None)
    assert names[dpv.default_link(db.device("a100-80gb-sxm"), names)] == "nvlink3-a100"
    assert names[dpv.default_link(db.device("rtx-3090"), names)] == "pcie3-x16"


def test_the_sentence_follows_the_share_and_says_none():
    at = _tab()
    at.slider(key="scaling_share").set_value(50).run()
    rows = _core_rows(allreduce="ring", comm_model="ddp", input_pipeline="synthetic", nics=1)
    first = communication_dominates(rows, 0.50)
    assert _sentence(at).startswith(dpv.dominates_sentence(first, 0.50))
    assert dpv.dominates_sentence(None, 0.1) == "Communication adds more than 10 % of the step at none up to 64 GPUs"
    assert dpv.dominates_sentence(32, 0.1) == "Communication adds more than 10 % of the step from **32 GPUs**"


def _without_data(spec: dict) -> dict:
    """A spec as Streamlit sends it, less what Streamlit changes: inline data (sent apart), autosize, the null
    colour title it writes as " "."""
    if "layer" in spec:
        return {"layer": [_without_data(layer) for layer in spec["layer"]]}
    enc = {k: {**v, "title": (v.get("title") or "").strip() or None} if k == "color" else v
           for k, v in spec.get("encoding", {}).items()}
    return {"mark": spec.get("mark"), "encoding": enc}


def test_both_charts_are_valid_vega_lite_and_drawn_as_built():
    at = _tab()
    drawn = [json.loads(e.proto.spec) for e in at.get("vega_lite_chart")]
    assert len(drawn) == 2
    rows = _core_rows(allreduce="ring", comm_model="ddp", input_pipeline="synthetic", nics=1)
    first = communication_dominates(rows, 0.10)
    frame = pd.DataFrame(rows)
    built = [dpv.efficiency_chart(frame, 0.10, first), dpv.parts_chart(dpv.step_parts(frame))]
    validator = jsonschema.Draft7Validator(load_schema())
    for spec, shown in zip(built, drawn):
        spec = json.loads(json.dumps(spec, allow_nan=False))      # JSON as the browser gets it: no NaN
        errors = [e.message for e in validator.iter_errors(spec)]
        assert not errors, errors[:3]
        assert _without_data(shown) == _without_data(spec)
    parts = pd.DataFrame(built[1]["data"]["values"])
    # the parts add up to the whole step at every GPU count (the overlapped all-reduce is inside the backward)
    assert parts.groupby("GPUs")["share"].sum().tolist() == pytest.approx([1.0] * 7)
    marked = [layer for layer in built[0]["layer"] if layer["mark"].get("color") == "red"]
    assert (marked[0]["data"]["values"][0]["workers"] if marked else None) == first


def test_a_network_that_does_no_work_has_no_efficiency_to_draw():
    rows = scaling("mnist_cnn", "v100-sxm2", "pcie3-x16", workers=dpv.GPU_COUNTS, batch_size=1)
    frame = pd.DataFrame(rows).assign(efficiency=None, speedup=None, training_step_s=0.0)
    spec = json.loads(json.dumps(dpv.efficiency_chart(frame, 0.1, None), allow_nan=False))
    assert not list(jsonschema.Draft7Validator(load_schema()).iter_errors(spec))
    assert all(s == 0.0 for s in dpv.step_parts(frame)["share"])


def test_paleo_input_pipeline_and_nodes_controls():
    at = _tab()
    at.selectbox(key="scaling_link").set_value("nvlink2-v100").run()
    at.selectbox(key="scaling_gpus_per_node").set_value(4).run()
    at.number_input(key="scaling_nics").set_value(2).run()
    at.selectbox(key="scaling_input").set_value("cpu").run()
    assert not at.exception
    rows = _core_rows("nvlink2-v100", gpus_per_node=4, allreduce="ring", comm_model="ddp", input_pipeline="cpu",
                      cpu_cores=32, nics=2)
    table = _table(at)
    assert list(table["nodes"]) == [1, 1, 1, 2, 4, 8, 16]
    assert table["input wait ms"].tolist() == pytest.approx([r["input_wait_s"] * 1e3 for r in rows])
    at.button_group(key="scaling_comm_model").set_value("paleo").run()        # one link for every GPU
    assert not at.exception and at.selectbox(key="scaling_node_link").disabled
    table = _table(at)
    assert set(table["nodes"]) == {1}
    assert "PALEO model; PALEO's term: no measured error" in _sentence(at)


def test_error_words_show_the_measured_error_when_there_is_one(monkeypatch):
    monkeypatch.setattr(dpv, "typical_error", lambda: {"median_points": 4.0, "p90_points": 11.0,
                                                       "signed_median_points": 1.0, "rows": 30, "basis": "b"})
    short, long = dpv.error_words("ddp")
    assert short == "efficiency typically ±4.0 points" and "held out by source" in long.lower()
