"""ONNX in (core/onnx_import/): input shapes and the batch, names, folds too large to build, paths, the API and the
CLI; malformed files refused in one line naming what and where; torchvision networks exported with
``torch.onnx.export`` checked layer by layer against the same networks from the zoo (whose counts equal PyTorch's own,
tests/test_zoo_data.py); the Network page's upload. Each mapped op on a hand-built graph: tests/test_onnx_ops.py.

The hand-built tests import neither torch nor streamlit (the fast subset); the export tests carry the torch mark,
the upload test the app mark.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import helper as h
from onnx import numpy_helper

import core
from core.onnx_import import import_onnx, load_onnx
from onnx_ref import X, const, layers, one, onnx_bytes, run, vi, zeros

ROOT = Path(__file__).resolve().parent.parent


# == input shapes, files, the CLI =================================================================================

def test_a_symbolic_batch_is_fine_and_other_sizes_come_from_input_shape():
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], strides=[2, 2]), h.make_node("GlobalAveragePool", ["c"], ["y"])]
    data = onnx_bytes(nodes, [vi("x", ["N", 3, "H", "W"])], inits=[zeros("W", 4, 3, 3, 3)])
    with pytest.raises(core.NetworkError, match="symbolic dimension 'H'") as e:
        import_onnx(data)
    assert e.value.field == "input_shape"
    r, _ = run(data, input_shape=(3, 17, 17))
    assert one(r, "conv2d").output_shape == (1, 4, 8, 8)      # (17 − 3) // 2 + 1 = 8
    # the model's own sizes can be replaced too, and analyze() passes input_shape on
    fixed = onnx_bytes(nodes, [X], inits=[zeros("W", 4, 3, 3, 3)])
    assert one(run(fixed, input_shape="3x17x17")[0], "conv2d").macs == 4 * 8 * 8 * 3 * 3 * 3


def _flatten_then_fc(batch: int) -> bytes:
    """Conv → Reshape to a constant [batch, 16] → Gemm, as an export at a fixed batch writes a flatten."""
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv"),
             h.make_node("Reshape", ["c", "shape"], ["f"], name="flatten"),
             h.make_node("Gemm", ["f", "F"], ["y"], name="fc", transB=1)]
    return onnx_bytes(nodes, [vi("x", [batch, 3, 4, 4])],
                      inits=[zeros("W", 4, 3, 3, 3), const("shape", [batch, 16]), zeros("F", 10, 16)])


def test_an_export_at_a_fixed_batch_above_one_is_refused_in_one_line():
    # At a fixed batch of 2 the Reshape keeps [2, 16]: re-inferred at batch 1, ONNX does not check the element
    # count of a Reshape without -1, so the fc would run on [2, 16] with no batch axis, counting 2 · 16 · 10 = 320
    # MACs per sample instead of 16 · 10 = 160. Refused instead.
    with pytest.raises(core.NetworkError) as e:
        import_onnx(_flatten_then_fc(2))
    msg = str(e.value)
    assert "fixed batch of 2" in msg and "dynamic batch axis" in msg and "\n" not in msg
    assert e.value.field == "x" and e.value.value == [2, 3, 4, 4]
    # the same graph at batch 1 is one sample: conv 4·2·2 · 3·3·3 = 432 MACs, fc 16 · 10 = 160
    r, _ = run(_flatten_then_fc(1))
    assert one(r, "conv2d").macs == 432 and one(r, "linear").macs == 160
    assert r.totals["macs"] == 432 + 160


class _CountingSet(set):
    """A set that counts membership tests: the work unique_name does."""

    checks = 0

    def __contains__(self, item):
        type(self).checks += 1
        return super().__contains__(item)


def test_naming_many_nodes_of_one_base_is_linear_and_names_do_not_change():
    from core.ir import release_name, unique_name

    # 2,000 nodes of one base: one membership test each plus the final miss, 2,001 + 1 for "x"; searching from
    # _1 every time took 1 + 2 + … + 2,000 ≈ 2,000,000 (20,000 unnamed ONNX nodes took 44 s)
    _CountingSet.checks = 0
    taken, counters = _CountingSet({"relu_5"}), {}
    names = [unique_name("relu", taken, counters) for _ in range(2000)]
    assert _CountingSet.checks <= 2 * 2000
    # relu, relu_1 … relu_4, then relu_5 is taken already (a node with that name): relu_6 …, 2,000 names in all
    assert names[:6] == ["relu", "relu_1", "relu_2", "relu_3", "relu_4", "relu_6"] and names[-1] == "relu_2000"
    # the same names as the search without counters, through names freed again (an undone node) and bases that
    # are other bases' names ("a_1" against "a"'s second name)
    rng = np.random.default_rng(0)
    plain, fast, counters, log = set(), set(), {}, []
    for _ in range(3000):
        if log and rng.random() < 0.3:
            gone = log.pop(int(rng.integers(len(log))))
            plain.discard(gone)
            release_name(gone, fast, counters)
        else:
            base = str(rng.choice(["a", "a_1", "a_1_1", "b", "a_2"]))
            name = unique_name(base, plain)
            assert unique_name(base, fast, counters) == name
            log.append(name)
    assert plain == fast


def test_an_onnx_graph_of_unnamed_nodes_gets_the_same_names():
    # 300 unnamed Relu nodes: relu, relu_1 … relu_299, one per node, in order
    nodes = [h.make_node("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}"]) for i in range(300)]
    net = import_onnx(onnx_bytes(nodes, [X])).network
    assert [n.name for n in net.nodes] == ["relu"] + [f"relu_{i}" for i in range(1, 300)]


def _bomb(op: str, n: int) -> bytes:
    """A tiny file whose input-independent branch computes an n·n-element constant with ``op`` (reduced to one
    number and added to the activation): folding it would build n² elements."""
    ones = h.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.ones((1, 1), np.float32)))
    grow = {
        "Expand": [ones, h.make_node("Constant", [], ["s"], value=const("v", [n, n])),
                   h.make_node("Expand", ["one", "s"], ["big"], name="bomb")],
        "Tile": [ones, h.make_node("Constant", [], ["s"], value=const("v", [n, n])),
                 h.make_node("Tile", ["one", "s"], ["big"], name="bomb")],
        "Add": [h.make_node("Constant", [], ["col"], value=numpy_helper.from_array(np.ones((n, 1), np.float32))),
                h.make_node("Constant", [], ["row"], value=numpy_helper.from_array(np.ones((1, n), np.float32))),
                h.make_node("Add", ["col", "row"], ["big"], name="bomb")],
        "Gather": [h.make_node("Constant", [], ["row"], value=numpy_helper.from_array(np.ones((1, n), np.float32))),
                   h.make_node("Constant", [], ["i"], value=const("v", [0] * n)),
                   h.make_node("Gather", ["row", "i"], ["big"], name="bomb")],
        "Range": [h.make_node("Constant", [], ["a"], value=const("v", 0.0, np.float32)),
                  h.make_node("Constant", [], ["b"], value=const("v", float(n * n), np.float32)),
                  h.make_node("Constant", [], ["d"], value=const("v", 1.0, np.float32)),
                  h.make_node("Range", ["a", "b", "d"], ["big"], name="bomb")],
    }[op]
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"), *grow,
             h.make_node("ReduceMax", ["big"], ["m"], keepdims=0), h.make_node("Add", ["r", "m"], ["y"], name="add")]
    return onnx_bytes(nodes, [X])


@pytest.mark.parametrize("op, n", [("Expand", 10_000), ("Tile", 10_000), ("Add", 10_000), ("Gather", 10_000),
                                   ("Range", 5_000)])
def test_a_huge_input_independent_value_is_known_by_shape_without_building_it(op, n):
    import tracemalloc

    data = _bomb(op, n)
    assert len(data) < 200_000
    tracemalloc.start()
    try:
        r, _ = run(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # building the constant takes n² elements: 10,000² = 10⁸ float32 = 400 MB (Expand builds it twice: 800 MB);
    # Range 5,000² = 2.5·10⁷ float32 = 100 MB, twice with its cast. Known by shape only, the import stays small.
    assert peak < 60 * 2 ** 20, f"{peak / 2 ** 20:.0f} MiB"
    assert [l.op for l in r.layers][:1] == ["relu"] and r.layers[0].output_shape == (1, 3, 8, 8)


def test_many_large_folds_stop_keeping_values_at_a_total():
    import tracemalloc

    # 64 constants of 1,024 · 1,024 = 2²⁰ elements each (at the per-value cap): 2²⁶ float32 = 256 MiB if all were
    # kept; values stop being kept past 2²⁴ elements in all (64 MiB of float32), the rest known by shape only
    nodes = [h.make_node("Relu", ["x"], ["r0"], name="relu"),
             h.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.ones((1, 1), np.float32))),
             h.make_node("Constant", [], ["s"], value=const("v", [1024, 1024]))]
    for i in range(64):
        nodes += [h.make_node("Expand", ["one", "s"], [f"big{i}"]),
                  h.make_node("ReduceMax", [f"big{i}"], [f"m{i}"], keepdims=0),
                  h.make_node("Add", [f"r{i}", f"m{i}"], [f"r{i + 1}"], name=f"add{i}")]
    tracemalloc.start()
    try:
        r, _ = run(onnx_bytes(nodes, [X]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2 ** 20, f"{peak / 2 ** 20:.0f} MiB"
    assert len(layers(r, "add")) == 64


def test_a_kernel_larger_than_the_input_says_so_not_no_cost_rule():
    # 3×3 kernel on a 1×1 input (given as 3x1x1 for a model with symbolic sizes), and on a fixed 2×2 input: ONNX
    # infers no output shape, the IR's conv check names the real reason
    nodes = [h.make_node("Conv", ["x", "W"], ["c"], name="conv1"), h.make_node("Relu", ["c"], ["y"])]
    inits = [zeros("W", 4, 3, 3, 3)]
    for data, shape, seen in ((onnx_bytes(nodes, [vi("x", ["N", 3, "H", "W"])], inits=inits), "3x1x1", "1×1"),
                              (onnx_bytes(nodes, [vi("x", [1, 3, 2, 2])], inits=inits), None, "2×2")):
        with pytest.raises(core.NetworkError) as e:
            import_onnx(data, shape)
        msg = str(e.value)
        assert "no cost rule" not in msg and f"kernel 3×3 is larger than its padded input {seen}" in msg
        assert e.value.node == "conv1" and e.value.field == "kernel_size" and "\n" not in msg


def test_paths_load_network_analyze_and_the_cli(tmp_path):
    nodes = [h.make_node("Conv", ["x", "W", "B"], ["c"], name="conv"), h.make_node("Relu", ["c"], ["y"])]
    path = tmp_path / "tiny.onnx"
    path.write_bytes(onnx_bytes(nodes, [X], inits=[zeros("W", 4, 3, 3, 3), zeros("B", 4)]))
    net = core.load_network(str(path))
    assert net.name == "tiny" and load_onnx(path.read_bytes()).nodes == net.nodes
    r = core.analyze(str(path), batch_size=2)
    assert r.totals["params"] == 112 and r.totals["macs"] == 2 * 4 * 6 * 6 * 27      # batch 2 · 3,888
    out = subprocess.run([sys.executable, "-m", "core", "analyze", str(path), "--json"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert '"macs": 3888' in out.stdout                         # 4·6·6 · 3·3·3
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x00\xff not protobuf")
    out = subprocess.run([sys.executable, "-m", "core", "analyze", str(bad)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and "broken.onnx" in out.stderr and "not an ONNX model" in out.stderr


# == malformed files ==============================================================================================

def _conv(**attrs):
    return onnx_bytes([h.make_node("Conv", ["x", "W"], ["y"], name="conv1", **attrs)], [X],
                      inits=[zeros("W", 4, 3, 3, 3)])


MALFORMED = {
    "empty": (b"", ["empty"]),
    "not protobuf": (b"\x00\xff this is text", ["not an ONNX model", "protobuf"]),
    "no graph": (h.make_model(h.make_graph([], "g", [], [])).SerializeToString(), ["no graph", "graph"]),
    "missing input": (onnx_bytes([h.make_node("Relu", ["nope"], ["y"], name="r1")], [X]),
                      ["r1", "input", "nope", "produced by no node"]),
    "cycle": (onnx_bytes([h.make_node("Add", ["x", "b"], ["a"], name="add_a"),
                          h.make_node("Relu", ["a"], ["b"], name="relu_b")], [X], [vi("a", None)]),
              ["cycle", "add_a", "relu_b"]),
    "zero stride": (_conv(strides=[0, 1]), ["conv1", "strides", "positive"]),
    "pads of the wrong length": (_conv(pads=[1, 1, 1]), ["conv1", "pads"]),
    "kernel_shape against the weight": (_conv(kernel_shape=[5, 5]), ["conv1", "kernel_shape", "[5, 5]", "[3, 3]"]),
    "weight channels against the input": (
        onnx_bytes([h.make_node("Conv", ["x", "W"], ["y"], name="conv1")], [X], inits=[zeros("W", 4, 5, 3, 3)]),
        ["conv1", "'W'", "5 input channels", "has 3"]),
    "group against the channels": (_conv(group=2), ["conv1", "group 2", "6 input channels"]),
    "an op ONNX does not know": (onnx_bytes([h.make_node("Foo", ["x"], ["y"], name="foo1")], [X]),
                                 ["foo1", "Foo", "cannot infer the shape"]),
    "no data input": (onnx_bytes([h.make_node("Constant", [], ["y"], value=zeros("v", 3))], []),
                      ["no data input"]),
    "a conv without its weight": (onnx_bytes([h.make_node("Conv", ["x"], ["y"], name="conv1")], [X]),
                                  ["conv1", "W missing"]),
    "a BatchNorm without its statistics": (
        onnx_bytes([h.make_node("BatchNormalization", ["x", "s", "b"], ["y"], name="bn1")], [X],
                   inits=[zeros("s", 3), zeros("b", 3)]), ["bn1", "input_mean, input_var missing"]),
    "a name that is not UTF-8": (_conv().replace(b"conv1", b"conv\xff"), ["not UTF-8", "name"]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_model_is_one_line_naming_the_problem(case):
    data, words = MALFORMED[case]
    with pytest.raises(core.NetworkError) as e:
        import_onnx(data)
    text = str(e.value)
    assert "\n" not in text and "Traceback" not in text
    for w in words:
        assert w in text, (case, text)


def test_mangled_files_are_a_network_or_a_message():
    """Bytes of a valid file changed at random: protobuf, ONNX's inference and the converter each refuse what they
    cannot read, and none of them raises anything but NetworkError (nor takes the process down)."""
    import random

    rng = random.Random(16)
    results = {"network": 0, "refused": 0}
    for _ in range(150):
        data = bytearray(TINY)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            import_onnx(bytes(data))
            results["network"] += 1
        except core.NetworkError as e:
            assert "\n" not in str(e)
            results["refused"] += 1
    assert results["network"] > 0 and results["refused"] > 0


def test_a_crash_or_a_hang_of_onnx_inference_is_a_message(monkeypatch):
    """onnx's C++ shape inference can abort the process on a malformed file (a failed assertion): it runs in a
    helper process, whose end is reported and which the next import starts afresh."""
    from core.onnx_import import inference, shapes

    monkeypatch.setattr(shapes, "_INFERENCE", inference._Inference())     # where _infer looks it up
    monkeypatch.setattr(inference, "_HELPER", "import os, sys\nsys.stdin.buffer.read(8)\nos.abort()\n")
    with pytest.raises(core.NetworkError, match=r"crashed on this model \(signal 6\): the file is malformed"):
        import_onnx(_conv())
    monkeypatch.setattr(inference, "_HELPER", "import time, sys\nsys.stdin.buffer.read(8)\ntime.sleep(60)\n")
    monkeypatch.setattr(inference, "INFERENCE_TIMEOUT_S", 1)
    with pytest.raises(core.NetworkError, match="did not finish within 1 s"):
        import_onnx(_conv())
    monkeypatch.undo()
    assert core.analyze(load_onnx(_conv())).totals["macs"] == 4 * 6 * 6 * 27       # a fresh helper answers


def test_files_that_cannot_be_read(tmp_path, monkeypatch):
    with pytest.raises(core.NetworkError, match="cannot read the file") as e:
        import_onnx(tmp_path / "absent.onnx")
    assert e.value.field == "model"
    with pytest.raises(core.NetworkError, match="not a regular file"):
        import_onnx(tmp_path)
    with pytest.raises(core.NetworkError, match="expected a path"):
        import_onnx(42)
    from core.onnx_import import read

    monkeypatch.setattr(read, "MAX_ONNX_BYTES", 100)           # the cap is checked before the file is read
    path = tmp_path / "big.onnx"
    path.write_bytes(b"\x00" * 101)
    with pytest.raises(core.NetworkError, match="101 bytes; the limit is 100"):
        import_onnx(path)
    with pytest.raises(core.NetworkError, match="the limit is 100"):
        import_onnx(b"\x00" * 101)
    monkeypatch.undo()
    with pytest.raises(core.NetworkError, match="3 dimensions per sample"):
        import_onnx(_conv(), input_shape=(3, 8))


# == torchvision networks exported by PyTorch =====================================================================

# one network (the smallest) of every convolutional family in the zoo
EXPORTED = ["resnet18", "vgg11", "alexnet", "densenet121", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
            "squeezenet1_1", "shufflenet_v2_x0_5", "googlenet", "inception_v3", "regnet_y_400mf", "convnext_tiny",
            "mnasnet0_5", "resnext50_32x4d", "wide_resnet50_2"]
WEIGHTED = ("conv2d", "linear", "batch_norm")


def _export(model, shape, path, **kw) -> None:
    import contextlib
    import io
    import warnings

    import torch

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros((1,) + tuple(shape)),), str(path), **kw)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each network exported as users would, without weights (export_params=False, about 1 s each) and with
    BatchNorm kept (do_constant_folding=False)."""
    from core.bridge.torchvision_zoo import build

    folder = tmp_path_factory.mktemp("onnx")
    for name in EXPORTED:
        _export(build(name, "cpu"), core.zoo.index()[name]["input_shape"], folder / f"{name}.onnx", dynamo=False,
                export_params=False, do_constant_folding=False)
    return folder


def _weighted(report):
    return [(l.op, l.output_shape, l.params) for l in report.layers if l.op in WEIGHTED]


@pytest.mark.torch
@pytest.mark.parametrize("name", EXPORTED)
def test_an_exported_torchvision_network_matches_the_zoo(exported, name):
    result = import_onnx(exported / f"{name}.onnx")
    mine, zoo = core.analyze(result.network), core.analyze(name)
    assert result.unsupported == () and result.warnings == ()
    assert _weighted(mine) == _weighted(zoo)                   # every conv, linear and BatchNorm, in order
    # inception_v3's aux classifier does not run in eval mode: the export leaves its weights out, the zoo counts
    # them as parameters the forward never uses
    unused = sum(l.params for l in zoo.layers if l.op == "parameter" and l.name.startswith("AuxLogits"))
    assert mine.totals["params"] == zoo.totals["params"] - unused
    assert mine.totals["macs"] == zoo.totals["macs"]
    assert mine.totals["flops"] == zoo.totals["flops"]
    assert mine.input_shape == zoo.input_shape


@pytest.mark.torch
def test_a_default_export_with_weights_folds_batchnorm_into_the_convs(tmp_path):
    """torch.onnx.export's defaults (export_params=True, do_constant_folding=True): every BatchNorm right after a
    conv is folded into it, leaving a bias: 2·C fewer trainable parameters, C more, and the same MACs."""
    from core.bridge.torchvision_zoo import build

    _export(build("resnet18", "cpu"), (3, 224, 224), tmp_path / "r18.onnx", dynamo=False)
    assert (tmp_path / "r18.onnx").stat().st_size > 4 * 11_000_000              # the weights are in the file
    mine, zoo = core.analyze(str(tmp_path / "r18.onnx")), core.analyze("resnet18")
    bns = [n for n in zoo.compiled.nodes if n.op == "batch_norm"]
    assert all(zoo.compiled.by_name[n.inputs[0]].op == "conv2d" for n in bns)     # every BN follows a conv
    channels = sum(n.out_shape[0] for n in bns)                 # 4,800 for ResNet-18
    assert mine.totals["params"] == zoo.totals["params"] - 2 * channels + channels == 11_684_712
    assert mine.totals["macs"] == zoo.totals["macs"]
    assert [l.output_shape for l in layers(mine, "conv2d")] == [l.output_shape for l in layers(zoo, "conv2d")]
    assert not layers(mine, "batch_norm")


@pytest.mark.torch
def test_a_dynamo_export(tmp_path):
    """torch.onnx.export(..., dynamo=True) writes opset 18+ with weights as initializers and names from module
    scopes. Its optimiser drops a conv bias that is all zeros, so the weights are made non-zero first."""
    import torch

    from core.bridge.torchvision_zoo import build

    model = build("squeezenet1_1", "cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(0.5, 1.0)
    _export(model, (3, 224, 224), tmp_path / "sq.onnx", dynamo=True)
    mine, zoo = core.analyze(str(tmp_path / "sq.onnx")), core.analyze("squeezenet1_1")
    assert _weighted(mine) == _weighted(zoo)
    assert mine.totals["params"] == zoo.totals["params"] == sum(p.numel() for p in model.parameters())
    assert mine.totals["macs"] == zoo.totals["macs"]
    assert "features.0" in [l.name for l in mine.layers]       # the conv's module name, as in PyTorch


# == the Network page =============================================================================================

def _tiny(x):
    """conv 3→4 (3×3), ReLU, global average pool, fc 4→10."""
    return onnx_bytes([h.make_node("Conv", ["x", "W", "B"], ["c"], name="conv"), h.make_node("Relu", ["c"], ["r"]),
                       h.make_node("GlobalAveragePool", ["r"], ["p"]), h.make_node("Flatten", ["p"], ["f"]),
                       h.make_node("Gemm", ["f", "F", "FB"], ["y"], name="fc", transB=1)],
                      [x], inits=[zeros("W", 4, 3, 3, 3), zeros("B", 4), zeros("F", 10, 4), zeros("FB", 10)])


TINY = _tiny(X)


@pytest.mark.app
def test_the_network_page_takes_an_onnx_upload():
    import tomllib

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "views" / "network.py"), default_timeout=120).run()
    assert not at.exception
    cap = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]
    assert f"ONNX model (max {cap} MB)" in at.file_uploader(key="import_json").label     # what the server allows
    at.file_uploader(key="import_json").set_value(("tiny.onnx", TINY, "application/octet-stream")).run()
    assert not at.exception and not at.error
    assert at.session_state["model"] == "custom"
    # conv 4·3·3·3 + 4 = 112, fc 4·10 + 10 = 50: 162 parameters
    assert at.caption[0].value.startswith("tiny: 5 layers, 162 parameters")
    assert "Imported tiny.onnx" in at.success[0].value
    at.file_uploader(key="import_json").set_value(("broken.onnx", b"\x00\xff", "application/octet-stream")).run()
    assert not at.exception
    assert "broken.onnx: not an ONNX model" in at.error[0].value and "Nothing was imported" in at.error[0].value
    assert at.caption[0].value.startswith("tiny: 5 layers, 162 parameters")      # the imported network stays


@pytest.mark.app
def test_a_model_with_symbolic_sizes_asks_for_its_input_shape_on_the_page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "views" / "network.py"), default_timeout=120).run()
    at.file_uploader(key="import_json").set_value(("dyn.onnx", _tiny(vi("x", ["N", 3, "H", "W"])),
                                                   "application/octet-stream")).run()
    assert not at.exception and "symbolic dimension 'H'" in at.error[0].value
    assert at.session_state["model"] == "mnist_cnn"                # nothing imported, nothing lost
    # a shape too small for the 3×3 conv fails at the conv, not at input_shape: the box and what was typed stay
    at.text_input(key="onnx_input_shape").set_value("3x1x1").run()
    assert not at.exception and "kernel 3×3 is larger than its padded input 1×1" in at.error[0].value
    assert at.text_input(key="onnx_input_shape").value == "3x1x1" and at.session_state["model"] == "mnist_cnn"
    at.text_input(key="onnx_input_shape").set_value("3x16x16").run()
    assert not at.exception and not at.error and at.session_state["model"] == "custom"
    assert at.caption[0].value.startswith("dyn: 5 layers, 162 parameters")          # as tiny.onnx: sizes free
