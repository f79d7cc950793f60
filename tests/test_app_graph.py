"""The Graph page in AppTest: ResNet-50 drawn whole with its skip connections, a chosen layer's row and arithmetic, the
collapse and expand boxes, colour by time, the Network page's what-if highlight, and a network from an ONNX file."""

from __future__ import annotations

from pathlib import Path

from onnx import helper as h
from streamlit.testing.v1 import AppTest

import core
from apptest_ref import open_page
from core.onnx_import import import_onnx
from onnx_ref import X, onnx_bytes, vi, zeros
from test_netviz import parse

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "views" / "graph.py")


def dot_of(at) -> str:
    (chart,) = at.get("graphviz_chart")
    return chart.proto.spec


def test_resnet50_is_drawn_whole_with_its_skip_connections():
    at = open_page(PAGE)
    at.selectbox(key="model").set_value("resnet50").run()
    assert not at.exception
    nodes, edges = parse(dot_of(at))
    # 175 layers and the input (under 200 layers: nothing collapsed), the legend beside them
    assert len(nodes) == 175 + 1 + 1
    assert ("layer1.0.relu_2", "layer1.1.add") in edges            # the identity skip around block layer1.1
    assert ("layer1.0.downsample.1", "layer1.0.add") in edges      # the projection skip of the first block
    assert nodes["layer1.1.add"]["label"] == "⊕"
    assert "drawn as 176 nodes" in at.caption[0].value


def test_a_chosen_layer_shows_its_row_and_arithmetic_and_is_outlined():
    at = open_page(PAGE)
    at.selectbox(key="model").set_value("resnet50").run()
    at.selectbox(key="graph_layer").set_value("layer3.2.conv2").run()
    assert not at.exception
    row = next(d.value for d in at.dataframe if "layer" in d.value.columns)
    assert row["params"].iloc[0] == 589_824              # 3×3 conv, 256 → 256 channels, no bias: 256·256·9
    assert row["output shape"].iloc[0] == "1×256×14×14"
    text = " ".join(m.value for m in at.latex)
    # MACs: 1·256·14·14 · 256·3·3 = 115,605,504 (LaTeX writes 115{,}605{,}504)
    assert r"1\cdot 256\cdot 14\cdot 14\cdot 256\cdot 3\cdot 3" in text and "115{,}605{,}504" in text
    nodes, _ = parse(dot_of(at))
    assert nodes["layer3.2.conv2"]["penwidth"] == "4"


def test_collapse_expand_and_colour_by_time():
    at = open_page(PAGE)
    at.selectbox(key="model").set_value("resnet50").run()
    at.selectbox(key="graph_blocks").set_value("collapse").run()
    at.radio(key="graph_measure").set_value("flops").run()
    nodes, _ = parse(dot_of(at))
    assert nodes["group::layer3"]["label"].startswith(r"layer3: 6 × block")     # torchvision: [3, 4, 6, 3]
    assert at.selectbox(key="graph_expand").options == ["—", "layer1", "layer2", "layer3", "layer4"]
    at.selectbox(key="graph_expand").set_value("layer3").run()
    nodes, _ = parse(dot_of(at))
    assert "group::layer3" not in nodes and "layer3.5.conv3" in nodes and "group::layer2" in nodes
    at.radio(key="graph_measure").set_value("time").run()
    assert not at.exception
    report = core.analyze("resnet50")
    est = core.estimate(report, "v100-sxm2")          # the sidebar's default device and time model
    share = sum(r["share"] for r in est.layers if r["name"].startswith("layer2."))
    assert f"{share * 100:.1f} % of predicted forward time" in parse(dot_of(at))[0]["group::layer2"]["label"]


def test_the_network_pages_what_if_layer_is_outlined_on_the_graph():
    at = open_page(str(ROOT / "app.py"))
    at.switch_page("views/network.py").run()
    at.selectbox(key="model").set_value("resnet18").run()
    at.selectbox(key="edit_layer").set_value("layer1.0.conv2").run()
    at.selectbox(key="edit_field").set_value("out_channels").run()
    at.button(key="edit_see_graph").click().run()
    assert not at.exception and at.title[0].value == "Graph"
    nodes, _ = parse(dot_of(at))
    # layer1.0.conv2's output is added to the stem's (through bn2 and the residual add): conv1 and every conv
    # writing into layer1's adds share its channels
    groups = core.channel_groups(core.load_network("resnet18"))
    coupled = {n for n, g in groups.items() if g == groups["layer1.0.conv2"] and core.load_network("resnet18")
               .node(n).op == "conv2d"}
    assert {"conv1", "layer1.0.conv2", "layer1.1.conv2"} <= coupled
    assert {n for n, a in nodes.items() if a.get("penwidth") == "4"} == coupled
    assert any("Outlined in blue" in c.value for c in at.caption)


def residual_onnx() -> bytes:
    """x → Conv(3→4, 3×3, pad 1) → Relu → Conv(4→4) → Add(skip from the Relu) → GlobalAveragePool."""
    nodes = [h.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             h.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             h.make_node("Add", ["c2", "r1"], ["s"], name="skip"),
             h.make_node("GlobalAveragePool", ["s"], ["y"], name="pool")]
    return onnx_bytes(nodes, [X], [vi("y", [1, 4, 1, 1])], inits=[zeros("w1", 4, 3, 3, 3), zeros("w2", 4, 4, 3, 3)])


def test_an_onnx_model_is_drawn():
    net = import_onnx(residual_onnx(), name="student.onnx").network
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["custom_network"] = net
    at.session_state["model"] = "custom"
    at.run()
    assert not at.exception
    nodes, edges = parse(dot_of(at))
    names = [n.name for n in net.nodes]
    skip = next(n for n in net.nodes if n.op == "add")
    assert nodes[skip.name]["label"] == "⊕" and len(skip.inputs) == 2
    expected = {(src, n.name) for n in net.nodes for src in n.inputs}
    assert edges == expected and set(names) <= set(nodes)
