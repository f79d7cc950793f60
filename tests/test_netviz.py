"""The network's graph as DOT (``core.netviz``, ``core.netgroups``) and ``python -m core graph``: edges checked one by
one on a hand-built residual network, ResNet-152's collapsed stages against torchvision's block counts and shares
recomputed from ``report.layers``, colour bins, the legend, highlight, expand, and every built-in network."""

from __future__ import annotations

import re
import shutil

import pytest

import core
from core import netviz
from core.cli import main
from core.netgroups import find_groups

NODE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" \[(.*)\];$')
EDGE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)";$')
ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|<<.*>>|[^,\s]+)')


def parse(dot: str) -> tuple[dict[str, dict[str, str]], set[tuple[str, str]]]:
    """(node id → its attributes, the set of edges) of the DOT text netviz writes: one statement per line."""
    nodes, edges = {}, set()
    for line in dot.splitlines():
        if m := EDGE.match(line):
            edges.add((m[1], m[2]))
        elif m := NODE.match(line):
            nodes[m[1]] = {k: v.strip('"') for k, v in ATTR.findall(m[2])}
    return nodes, edges


def residual() -> core.Network:
    """x → stem → bn → relu → block.conv1 → block.relu → block.conv2 → block.add(+ relu) → pool → flat → fc."""
    N = core.Node.make
    return core.Network.make("tiny_res", {"x": (3, 8, 8)}, [
        N("stem", "conv2d", "x", out_channels=8, kernel_size=3, padding=1),
        N("bn", "batch_norm", "stem"),
        N("relu", "relu", "bn"),
        N("block.conv1", "conv2d", "relu", out_channels=8, kernel_size=3, padding=1),
        N("block.relu", "relu", "block.conv1"),
        N("block.conv2", "conv2d", "block.relu", out_channels=8, kernel_size=3, padding=1),
        N("block.add", "add", ["block.conv2", "relu"]),
        N("pool", "adaptive_avg_pool2d", "block.add", output_size=1),
        N("flat", "flatten", "pool", start_dim=1),
        N("fc", "linear", "flat", out_features=10),
    ])


def test_residual_network_edges_one_by_one():
    nodes, edges = parse(netviz.dot(core.analyze(residual()), "flops"))
    assert edges == {("x", "stem"), ("stem", "bn"), ("bn", "relu"), ("relu", "block.conv1"),
                     ("block.conv1", "block.relu"), ("block.relu", "block.conv2"),
                     ("block.conv2", "block.add"), ("relu", "block.add"),       # the skip connection
                     ("block.add", "pool"), ("pool", "flat"), ("flat", "fc")}
    assert set(nodes) == {"legend::", "x", "stem", "bn", "relu", "block.conv1", "block.relu", "block.conv2",
                          "block.add", "pool", "flat", "fc"}
    # a box shows name, op and per-sample output shape; the join is a circle marked ⊕
    assert nodes["block.conv1"]["label"] == r"block.conv1\nconv2d · 8×8×8"
    assert nodes["fc"]["label"] == r"fc\nlinear · 10" and nodes["fc"]["peripheries"] == "2"    # the output
    assert nodes["x"]["label"] == r"x\ninput · 3×8×8" and nodes["x"]["shape"] == "oval"
    assert nodes["block.add"]["shape"] == "circle" and nodes["block.add"]["label"] == "⊕"
    assert nodes["block.add"]["xlabel"] == "add 8×8×8"


def test_concat_and_mul_are_joins_and_a_one_input_op_is_not():
    N = core.Node.make
    net = core.Network.make("joins", {"x": (4, 4, 4)}, [
        N("a", "relu", "x"), N("b", "sigmoid", "x"),
        N("cat", "concat", ["a", "b"], dim=1), N("gate", "mul", ["a", "b"]), N("solo", "relu", "cat")])
    nodes, _ = parse(netviz.dot(core.analyze(net), "activation"))
    assert nodes["cat"]["label"] == "‖" and nodes["gate"]["label"] == "⊗"
    assert "shape" not in nodes["solo"] and "xlabel" not in nodes["solo"]        # a box, as the graph's default
    assert nodes["cat"]["xlabel"] == "cat 8×4×4"             # 4 + 4 channels


def test_bins_and_legend_on_mnist():
    report = core.analyze("mnist_cnn")
    nodes, _ = parse(netviz.dot(report, "flops"))
    total = 24_071_218                    # test_cli: 2 × 11,992,448 MACs + 86,322 elementwise and pool FLOPs
    # conv2: 64·24·24 · 32·3·3 = 10,616,832 MACs = 21,233,664 FLOPs, 88.2 % of the total: the top bin (≥ 30 %)
    assert 21_233_664 / total == pytest.approx(0.8821, abs=1e-4)
    assert nodes["conv2"]["fillcolor"] == netviz.PALETTE[6] and nodes["conv2"]["fontcolor"] == "#ffffff"
    assert "88.2 % of FLOPs" in nodes["conv2"]["tooltip"]
    # conv1: 32·26·26 · 1·3·3 = 194,688 MACs = 389,376 FLOPs, 1.62 %: the 1–3 % bin, black text on orange
    assert nodes["conv1"]["fillcolor"] == netviz.PALETTE[3] and nodes["conv1"]["fontcolor"] == "#000000"
    # flatten is a view: 0 FLOPs, white
    assert nodes["flatten"]["fillcolor"] == netviz.ZERO
    legend = nodes["legend::"]["label"]
    rows = re.findall(r'BGCOLOR="(#\w+)" WIDTH="18"> </TD><TD ALIGN="LEFT">([^<]*)<', legend)
    assert rows == [("#ffffff", "0"), ("#ffffb2", "&lt; 0.1 %"), ("#fed976", "0.1–0.3 %"), ("#feb24c", "0.3–1 %"),
                    ("#fd8d3c", "1–3 %"), ("#fc4e2a", "3–10 %"), ("#e31a1c", "10–30 %"), ("#b10026", "≥ 30 %")]


@pytest.mark.parametrize("share, expected", [(0, -1), (0.000999, 0), (0.001, 1), (0.0029, 1), (0.003, 2),
                                             (0.01, 3), (0.0299, 3), (0.03, 4), (0.1, 5), (0.2999, 5), (0.3, 6),
                                             (1.0, 6)])
def test_bin_edges(share, expected):
    assert netviz.bin_of(share) == expected       # bins: < 0.1, 0.1–0.3, 0.3–1, 1–3, 3–10, 10–30, ≥ 30 %


def test_dark_fills_get_white_text():
    assert [netviz.text_colour(c) for c in netviz.PALETTE] == ["#000000"] * 4 + ["#ffffff"] * 3
    assert netviz.text_colour("#ffffff") == "#000000" and netviz.text_colour("#000000") == "#ffffff"


def test_resnet152_stages_collapse_with_their_flops_share():
    report = core.analyze("resnet152")
    d = netviz.draw(report, "flops")              # 515 layers: collapsed by default
    by_id = {g.gid: g for g in d.groups}
    # torchvision's ResNet-152: [3, 8, 36, 3] bottlenecks
    assert {k: g.count for k, g in by_id.items()} == {"layer1": 3, "layer2": 8, "layer3": 36, "layer4": 3}
    layers = report.layers
    total = sum(layer.flops for layer in layers)
    layer3 = [layer for layer in layers if layer.name.startswith("layer3.")]
    assert len(layer3) == 36 * 10 + 2         # conv, bn ×3, relu ×3, add per bottleneck; the first's downsample
    share = sum(layer.flops for layer in layer3) / total
    assert d.shares["group::layer3"] == pytest.approx(share)
    nodes, edges = parse(d.dot)
    label = nodes["group::layer3"]["label"]
    assert label.startswith(r"layer3: 36 × block\n(conv ×3, bn ×3, relu ×3, add; 1 differs)")
    assert f"{share * 100:.1f} % of FLOPs" in label
    assert nodes["group::layer3"]["fillcolor"] == netviz.PALETTE[netviz.bin_of(share)]
    assert {("group::layer2", "group::layer3"), ("group::layer3", "group::layer4")} <= edges
    assert not any(n.startswith("layer3.") for n in nodes)
    # drawn: legend aside, the input, conv1 bn1 relu maxpool, four stages, avgpool flatten fc
    assert d.nodes == 1 + 4 + 4 + 3 and len(nodes) == d.nodes + 1


def test_expand_one_block():
    report = core.analyze("resnet152")
    d = netviz.draw(report, "flops", expand="layer3")
    nodes, edges = parse(d.dot)
    assert [g.gid for g in d.groups] == ["layer1", "layer2", "layer4"]
    assert "layer3.17.conv2" in nodes and "group::layer3" not in nodes
    assert ("group::layer2", "layer3.0.conv1") in edges and ("group::layer2", "layer3.0.downsample.0") in edges
    assert ("layer3.35.relu_2", "group::layer4") in edges
    assert netviz.draw(report, "flops", expand="layer3.5").groups == d.groups    # by one of its blocks
    with pytest.raises(core.CalcError, match=r"field 'expand' = 'layer9'.*layer1, layer2, layer3, layer4"):
        netviz.draw(report, "flops", expand="layer9")
    with pytest.raises(core.CalcError, match="field 'expand'"):
        netviz.draw(report, "flops", collapse=False, expand="layer3")


def test_highlight_outlines_a_node_or_the_run_holding_it():
    nodes, _ = parse(netviz.dot(core.analyze("mnist_cnn"), "params", highlight=["conv2"]))
    assert nodes["conv2"]["penwidth"] == "4" and nodes["conv2"]["color"] == netviz.HIGHLIGHT
    assert "penwidth" not in nodes["conv1"]
    nodes, _ = parse(netviz.dot(core.analyze("resnet152"), "flops", highlight=["layer3.4.conv2"]))
    assert nodes["group::layer3"]["penwidth"] == "4" and "penwidth" not in nodes["group::layer2"]


def test_measures_checked():
    report = core.analyze("mnist_cnn")
    with pytest.raises(core.CalcError, match="field 'measure' = 'speed'"):
        netviz.draw(report, "speed")
    with pytest.raises(core.CalcError, match="field 'measure' = 'time'.*needs a time estimate"):
        netviz.draw(report, "time")


def test_time_and_bound_follow_the_estimate_rows():
    report = core.analyze("resnet18")
    est = core.estimate(report, "v100-sxm2")
    d = netviz.draw(report, "time", estimate=est, collapse=False)
    for row in est.layers:
        assert d.shares[row["name"]] == pytest.approx(row["share"])
    nodes, _ = parse(netviz.draw(report, "bound", estimate=est, collapse=False).dot)
    for row in est.layers:
        assert nodes[row["name"]]["fillcolor"] == netviz.BOUND_COLOURS[row["limited_by"]]
    # a run is coloured by the term that limits most of its forward time
    d = netviz.draw(report, "bound", estimate=est, collapse=True)
    secs: dict[str, float] = {}
    for row in est.layers:
        if row["name"].startswith("layer1."):
            secs[row["limited_by"]] = secs.get(row["limited_by"], 0) + row["forward_s"]
    assert d.shares["group::layer1"] == max(secs, key=secs.get)


def test_groups_of_other_families():
    counts = {n: {g.gid: g.count for g in find_groups(core.analyze(n).compiled)}
              for n in ("densenet201", "vit_h_14", "resnet18")}
    # torchvision: DenseNet-201 blocks of [6, 12, 48, 32] layers; ViT-H/14 32 encoder layers; ResNet-18 [2, 2, 2, 2]
    assert counts["densenet201"] == {"features.denseblock1": 6, "features.denseblock2": 12,
                                     "features.denseblock3": 48, "features.denseblock4": 32}
    assert counts["vit_h_14"] == {"encoder.layers": 32}
    assert counts["resnet18"] == {"layer1": 2, "layer2": 2, "layer3": 2, "layer4": 2}


@pytest.mark.slow                   # about 2 s for the 80 networks
@pytest.mark.parametrize("name", core.builtin_names())
def test_every_builtin_network_draws(name):
    report = core.analyze(name)
    d = netviz.draw(report, "flops")
    nodes, edges = parse(d.dot)
    assert d.dot.startswith(f'digraph "{name}" {{') and d.dot.endswith("}\n")
    assert len(nodes) == d.nodes + 1 and set(d.edges) == edges
    assert all(s in nodes and t in nodes for s, t in edges)        # every edge joins two drawn nodes


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_with_graphviz():
    text = netviz.svg(netviz.dot(core.analyze(residual()), "flops"))
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "block.conv1" in text


def test_svg_without_graphviz_says_so(monkeypatch):
    monkeypatch.setattr(netviz.shutil, "which", lambda _: None)
    with pytest.raises(core.CalcError, match="Graphviz is not installed"):
        netviz.svg("digraph {}")


def test_cli_graph_prints_dot(capsys):
    assert main(["graph", "mnist_cnn", "--color", "params"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('digraph "mnist_cnn" {') and '"conv1" -> "relu";' in out


def test_cli_graph_expand_and_highlight(capsys):
    assert main(["graph", "resnet152", "--expand", "layer2", "--highlight", "layer2.3.conv1"]) == 0
    nodes, _ = parse(capsys.readouterr().out)
    assert nodes["layer2.3.conv1"]["penwidth"] == "4" and "group::layer2" not in nodes
    assert main(["graph", "resnet152", "--expand", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: field 'expand' = 'nope'") and err.count("\n") == 1


def test_cli_graph_svg_without_graphviz_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(netviz.shutil, "which", lambda _: None)
    assert main(["graph", "mnist_cnn", "--svg"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("error: Graphviz is not installed") and out.err.count("\n") == 1


def test_cli_graph_time_needs_a_device(capsys):
    assert main(["graph", "mnist_cnn", "--color", "time"]) == 2
    err = capsys.readouterr().err
    assert "--color time needs --device" in err and "Traceback" not in err
    assert main(["graph", "mnist_cnn", "--color", "bound", "--device", "v100-sxm2"]) == 0
    assert 'digraph "mnist_cnn"' in capsys.readouterr().out
