"""Bad input raises ``core.NetworkError`` — never another exception type — with a message naming the node, the field,
the value and the reason. Huge-but-valid sizes are computed exactly as Python ints."""

from __future__ import annotations

import json

import pytest

import core
from core import Network, NetworkError, Node, analyze
from errors_ref import network_error


def one(node: Node, shape=(1, 3, 3)) -> Network:
    return Network.make("t", {"x": shape}, [node])


def _analyze(net):
    return lambda: analyze(net)


MNIST_JSON = core.load_network("mnist_cnn").to_json()


def _doc(**changes) -> str:
    d = json.loads(MNIST_JSON)
    d.update(changes)
    return json.dumps(d)


def _from_json(text):
    return lambda: analyze(Network.from_json(text))


CASES = [
    # (id, callable, fragments that must all appear in the message)
    ("zero-channels", _analyze(one(Node.make("c1", "conv2d", "x", out_channels=0, kernel_size=1))),
     ["c1", "out_channels", "0", "positive"]),
    ("negative-channels", _analyze(one(Node.make("c1", "conv2d", "x", out_channels=-4, kernel_size=1))),
     ["c1", "out_channels", "-4", "positive"]),
    ("zero-features", _analyze(one(Node.make("fc", "linear", "x", out_features=0))),
     ["fc", "out_features", "0", "positive"]),
    ("kernel-too-large", _analyze(one(Node.make("conv2", "conv2d", "x", out_channels=2, kernel_size=5))),
     ["conv2", "kernel", "5×5", "3×3", "larger"]),
    ("kernel-too-large-padded", _analyze(one(Node.make("conv2", "conv2d", "x", out_channels=2, kernel_size=7,
                                                       padding=1))),
     ["conv2", "kernel", "7×7", "5×5", "larger"]),          # padded input 3 + 2·1 = 5
    ("pool-too-large", _analyze(one(Node.make("pool", "max_pool2d", "x", kernel_size=5))),
     ["pool", "kernel", "5", "3", "larger"]),
    ("channel-mismatch", _analyze(Network.make("t", {"x": (1, 3, 3)}, [
        Node.make("a", "conv2d", "x", out_channels=2, kernel_size=1),
        Node.make("b", "conv2d", "x", out_channels=3, kernel_size=1),
        Node.make("s", "add", ("a", "b"))])),
     ["s", "[N, 2, 3, 3]", "[N, 3, 3, 3]"]),
    ("stride-0", _analyze(one(Node.make("c1", "conv2d", "x", out_channels=2, kernel_size=1, stride=0))),
     ["c1", "stride", "0", "≥ 1"]),
    ("pool-stride-0", _analyze(one(Node.make("p", "max_pool2d", "x", kernel_size=2, stride=0))),
     ["p", "stride", "0"]),
    ("unknown-op", _analyze(one(Node.make("a", "conv2dd", "x"))),
     ["a", "op", "conv2dd", "unknown op", "did you mean conv2d"]),
    ("unknown-attribute", _analyze(one(Node.make("a", "conv2d", "x", out_channels=2, kernal_size=1))),
     ["a", "kernal_size", "unknown attribute", "kernel_size"]),
    ("missing-required-attribute", _analyze(one(Node.make("a", "conv2d", "x", out_channels=2))),
     ["a", "kernel_size", "required"]),
    ("wrong-attribute-type", _analyze(one(Node.make("a", "conv2d", "x", out_channels=2, kernel_size="3"))),
     ["a", "kernel_size", "'3'", "integer"]),
    ("cycle", _analyze(Network.make("t", {"x": (1, 3, 3)}, [
        Node.make("a", "relu", "b"), Node.make("b", "relu", "a")])),
     ["a", "b", "inputs", "cycle"]),
    ("self-loop", _analyze(Network.make("t", {"x": (1, 3, 3)}, [Node.make("a", "add", ("x", "a"))])),
     ["a", "inputs", "cycle"]),
    ("missing-input", _analyze(one(Node.make("a", "relu", "y"))),
     ["a", "inputs", "'y'", "neither a node nor a network input"]),
    ("missing-output", _analyze(Network.make("t", {"x": (1, 3, 3)}, [Node.make("a", "relu", "x")], outputs=["zz"])),
     ["outputs", "zz"]),
    ("duplicate-names", _analyze(Network.make("t", {"x": (1, 3, 3)}, [
        Node.make("a", "relu", "x"), Node.make("a", "relu", "x")])),
     ["a", "name", "duplicate"]),
    ("node-named-like-input", _analyze(one(Node.make("x", "relu", "x"))),
     ["x", "name", "duplicate"]),
    ("wrong-arity", _analyze(one(Node.make("a", "conv2d", (), out_channels=2, kernel_size=1))),
     ["a", "inputs", "takes 1", "got 0"]),
    ("malformed-json", _from_json('{"schema": "cnn-calc/network", "version": 1,, }'),
     ["network JSON", "not valid JSON", "line 1"]),
    ("malformed-json-trailing-comma", _from_json('{"schema": "cnn-calc/network",}'),
     ["network JSON", "not valid JSON"]),
    ("not-an-object", _from_json("[1, 2]"), ["network JSON", "object", "list"]),
    ("truncated-json", _from_json(MNIST_JSON[: len(MNIST_JSON) // 2]), ["network JSON", "not valid JSON"]),
    ("truncated-json-empty", _from_json(""), ["network JSON", "not valid JSON"]),
    ("truncated-json-deeply-nested", _from_json("[" * 100_000), ["network JSON"]),
    ("wrong-schema-name", _from_json(_doc(schema="onnx")), ["schema", "onnx", "cnn-calc/network"]),
    ("wrong-version-2", _from_json(_doc(version=2)), ["version", "2", "unsupported"]),
    ("wrong-version-0", _from_json(_doc(version=0)), ["version", "0", "unsupported"]),
    ("wrong-version-string", _from_json(_doc(version="1")), ["version", "'1'", "unsupported"]),
    ("wrong-version-bool", _from_json(_doc(version=True)), ["version", "True", "unsupported"]),
    ("missing-version", _from_json(json.dumps({k: v for k, v in json.loads(MNIST_JSON).items() if k != "version"})),
     ["version", "unsupported"]),
    ("json-inputs-not-list", _from_json(_doc(nodes=[{"name": "r", "op": "relu", "inputs": "x"}])),
     ["r", "inputs", "'x'", "list"]),
    ("json-attr-named-inputs", _from_json(_doc(nodes=[{"name": "r", "op": "relu", "inputs": ["x"],
                                                       "attrs": {"inputs": ["x"]}}])),
     ["r", "inputs"]),
    ("json-attr-named-name", _from_json(_doc(nodes=[{"name": "r", "op": "relu", "inputs": ["x"],
                                                     "attrs": {"name": "q"}}])),
     ["r", "name"]),
    ("json-attr-object-value", _from_json(_doc(nodes=[{"name": "c", "op": "conv2d", "inputs": ["x"],
                                                       "attrs": {"out_channels": 2, "kernel_size": {"h": 3}}}])),
     ["c", "kernel_size"]),
    ("json-integer-too-long", _from_json('{"schema": "cnn-calc/network", "version": 1, "name": "n", "inputs": '
                                         '[{"name": "x", "shape": [' + "9" * 5000 + ']}], "nodes": []}'),
     ["network JSON"]),
    ("json-empty-network", _from_json(_doc(nodes=[], outputs=[])), ["nodes"]),
    ("empty-network", _analyze(Network.make("empty", {"x": (1, 3, 3)}, [])), ["empty"]),
    ("absurd-channels", _analyze(one(Node.make("c1", "conv2d", "x", out_channels=10 ** 12, kernel_size=1))),
     ["c1", "out_channels", "1000000000000", "absurdly large"]),
    ("absurd-kernel", _analyze(one(Node.make("c1", "conv2d", "x", out_channels=1, kernel_size=10 ** 12))),
     ["c1", "kernel_size", "1000000000000", "absurdly large"]),
    ("absurd-input", _analyze(one(Node.make("r", "relu", "x"), shape=(10 ** 12, 3, 3))),
     ["input 'x'", "shape", "1,000,000,000,000", "absurdly large"]),
    ("absurd-batch", lambda: analyze("mnist_cnn", batch_size=10 ** 9),
     ["batch_size", "1000000000", "absurdly large"]),
    ("batch-0", lambda: analyze("mnist_cnn", batch_size=0), ["batch_size", "0", "at least 1"]),
    ("batch-negative", lambda: analyze("mnist_cnn", batch_size=-3), ["batch_size", "-3", "at least 1"]),
    ("batch-float", lambda: analyze("mnist_cnn", batch_size=2.5), ["batch_size", "2.5", "integer"]),
    ("input-shape-zero", lambda: analyze("mnist_cnn", input_shape=(1, 0, 28)), ["input_shape", "0", "positive"]),
    ("input-shape-zero-text", lambda: analyze("mnist_cnn", input_shape="1x0x28"), ["input_shape", "1x0x28"]),
    ("input-shape-zero-in-ir", _analyze(one(Node.make("r", "relu", "x"), shape=(1, 0, 3))),
     ["input 'x'", "shape", "0", "positive"]),
    ("input-shape-not-integer", lambda: analyze("mnist_cnn", input_shape=(1.5, 28, 28)), ["input_shape", "1.5"]),
    ("input-shape-garbage", lambda: analyze("mnist_cnn", input_shape="axb"), ["input_shape", "axb"]),
    ("input-shape-too-small-for-net", lambda: analyze("mnist_cnn", input_shape=(1, 4, 4)),
     ["conv2", "kernel", "3×3", "2×2"]),     # conv1 leaves 4 − 3 + 1 = 2
    ("unknown-network", lambda: analyze("resnet19"), ["model", "resnet19", "unknown network", "resnet18"]),
    ("unknown-dtype", lambda: analyze("mnist_cnn", dtype="fp8"), ["dtype", "fp8", "unknown precision"]),
    ("unknown-optimizer", lambda: analyze("mnist_cnn", optimizer="lion"), ["optimizer", "lion", "unknown optimizer"]),
    ("not-a-model", lambda: analyze(5), ["model", "int"]),
    ("missing-file", lambda: analyze("/nonexistent/dir/net.json"), ["model", "net.json", "cannot read"]),
]


@pytest.mark.parametrize("fn, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_network_error(fn, fragments):
    err = network_error(fn)
    msg = str(err)
    assert "\n" not in msg
    missing = [f for f in fragments if f not in msg]
    assert not missing, f"message {msg!r} lacks {missing}"


def test_error_carries_structured_fields():
    err = network_error(_analyze(one(Node.make("conv2", "conv2d", "x", out_channels=2, kernel_size=5))))
    assert err.node == "conv2"
    assert err.field == "kernel_size"
    assert err.value == (5, 5)
    assert "larger than its padded input" in err.reason
    assert str(err) == "conv2, field 'kernel_size' = (5, 5): kernel 5×5 is larger than its padded input 3×3"


def test_network_error_is_a_value_error():
    assert issubclass(NetworkError, ValueError)


def test_non_utf8_file_raises_network_error(tmp_path):
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00\x81 not json")
    msg = str(network_error(lambda: analyze(str(path))))
    assert "binary.json" in msg or "network JSON" in msg


def test_malformed_json_file_raises_network_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"schema": "cnn-calc/network", "version": 1, "name": ', encoding="utf-8")
    assert "not valid JSON" in str(network_error(lambda: analyze(str(path))))


# -- huge but valid: exact integers --------------------------------------------------------------------------------

def test_huge_linear_is_exact():
    net = Network.make("huge", {"x": (10 ** 6,)}, [Node.make("fc", "linear", "x", out_features=10 ** 6)])
    r = analyze(net, batch_size=10 ** 6)
    t = r.totals
    assert t["macs"] == 10 ** 18                       # 10^6 samples × 10^6 inputs × 10^6 outputs
    assert isinstance(t["macs"], int) and type(t["flops"]) is int
    assert t["flops"] == 2 * 10 ** 18                  # 2 × MACs
    assert t["params"] == 10 ** 12 + 10 ** 6           # 10^6 · 10^6 weights + 10^6 biases
    assert t["param_bytes"] == 4 * (10 ** 12 + 10 ** 6)
    # no dx (the input needs no gradient); dW = 2 × 10^18, db = one add per output: 10^6 · 10^6 = 10^12
    assert t["backward_flops"] == 2 * 10 ** 18 + 10 ** 12
    assert t["input_bytes"] == 4 * 10 ** 12            # 10^6 × 10^6 elements × 4
    # peak: input 10^12 + output 10^12 elements live together while fc runs
    assert t["activation_bytes"] == 4 * 2 * 10 ** 12
    assert r.layer("fc").macs == 10 ** 18


def test_huge_conv_is_exact():
    # 4096 channels 3×3 on a 4096×4096 image, batch 4096: every factor is 2^12
    net = Network.make("big", {"x": (4096, 4096, 4096)},
                       [Node.make("c", "conv2d", "x", out_channels=4096, kernel_size=3, padding=1, bias=False)])
    t = analyze(net, batch_size=4096).totals
    assert t["macs"] == 2 ** 12 * 2 ** 12 * 2 ** 24 * 2 ** 12 * 9   # N · C_out · H·W · C_in · 9 = 9 · 2^60
    assert t["macs"] == 10_376_293_541_461_622_784                 # 9 × 1,152,921,504,606,846,976
