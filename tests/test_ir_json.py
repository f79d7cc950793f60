"""The IR's versioned JSON form: every built-in network round-trips exactly; schema and version are present; a
document from a future version is rejected with a clear message."""

from __future__ import annotations

import json

import pytest

import core
from core import Network, NetworkError, Node, analyze

NAMES = core.builtin_names()


def test_builtins_listed():
    for name in ("mnist_cnn", "mnist_cnn_conv2_128", "vgg16", "resnet18", "resnet50", "alexnet"):
        assert name in NAMES
    assert len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("indent", [1, None])
def test_round_trip_equality(name, indent):
    net = core.load_network(name)
    text = net.to_json(indent=indent)
    back = Network.from_json(text)
    assert back == net
    assert back.to_json(indent=indent) == text             # and the text is stable
    assert hash(back) == hash(net)


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_through_dict_and_analysis(name):
    net = core.load_network(name)
    back = Network.from_dict(json.loads(json.dumps(net.to_dict())))
    assert back == net
    a, b = analyze(net), analyze(back)
    assert a.totals == b.totals
    assert [l.as_dict() for l in a.layers] == [l.as_dict() for l in b.layers]


@pytest.mark.parametrize("name", NAMES)
def test_schema_fields_present(name):
    d = json.loads(core.load_network(name).to_json())
    assert d["schema"] == "cnn-calc/network"
    assert d["version"] == core.SCHEMA_VERSION == 1
    assert d["name"] == name
    assert set(d) >= {"schema", "version", "name", "description", "inputs", "nodes", "outputs"}
    assert all(set(n) == {"name", "op", "inputs", "attrs"} for n in d["nodes"])
    assert all(set(i) == {"name", "shape"} for i in d["inputs"])


def test_mnist_json_content():
    d = core.load_network("mnist_cnn").to_dict()
    assert d["inputs"] == [{"name": "x", "shape": [1, 28, 28]}]      # per sample: no batch dimension
    conv2 = next(n for n in d["nodes"] if n["name"] == "conv2")
    assert conv2 == {"name": "conv2", "op": "conv2d", "inputs": ["relu"],
                     "attrs": {"kernel_size": 3, "out_channels": 64}}
    assert d["outputs"] == ["log_softmax"]


def test_tuple_attributes_survive_json():
    net = Network.make("t", {"x": (3, 9, 9)}, [
        Node.make("c", "conv2d", "x", out_channels=4, kernel_size=(3, 1), stride=[2, 1], padding=(1, 0)),
        Node.make("r", "reshape", "c", shape=[-1]),
    ])
    back = Network.from_json(net.to_json())
    assert back == net
    assert back.node("c").get("kernel_size") == (3, 1)
    assert back.node("c").get("stride") == (2, 1)
    # (9 + 2 − 3)//2 + 1 = 5 rows, (9 − 1)//1 + 1 = 9 columns: 4·5·9 = 180
    assert analyze(back).layer("r").output_shape == (1, 180)


@pytest.mark.parametrize("version", [2, 99])
def test_future_version_rejected(version):
    d = core.load_network("mnist_cnn").to_dict()
    d["version"] = version
    with pytest.raises(NetworkError) as info:
        Network.from_json(json.dumps(d))
    msg = str(info.value)
    assert "version" in msg and str(version) in msg
    assert "unsupported" in msg and "1" in msg           # says which version this build reads
    assert info.value.field == "version" and info.value.value == version


def test_json_file_round_trip(tmp_path):
    net = core.load_network("resnet18")
    path = tmp_path / "resnet18.json"
    path.write_text(net.to_json(), encoding="utf-8")
    assert core.load_network(str(path)) == net
    assert analyze(str(path)).totals["params"] == 11_689_512    # see test_hand_arithmetic
