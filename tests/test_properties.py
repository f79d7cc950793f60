"""Property tests (hypothesis).

Valid: random sequential CNNs (conv2d with random channels / kernel / stride / padding / dilation / dividing groups,
batch_norm, relu-family activations, max / avg pooling, then adaptive_avg_pool2d, flatten, linear) are built twice,
as IR and as torch modules, from one spec; every layer's output shape, the parameter count and the MACs
(FlopCounterMode / 2) must agree, and so must the backward FLOPs of the conv / linear layers.

Invalid: networks made invalid by construction (the generator computes why) must raise ``core.NetworkError`` and
nothing else, naming the offending node; where torch can judge the same network it must reject it too.
"""

from __future__ import annotations

import json
import string

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from torch import nn

import core
from core import Network, NetworkError, Node
from torch_ref import BATCH, Seq, fwd_bwd_flops, mac_layer_flops, n_params, split_grouped

N = Node.make
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ACTIVATIONS = {"relu": nn.ReLU, "relu6": nn.ReLU6, "hardswish": nn.Hardswish, "silu": nn.SiLU, "gelu": nn.GELU,
               "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "hardsigmoid": nn.Hardsigmoid}


def _out_len(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool = False) -> int:
    """PyTorch's output length of a conv / pool window (used only to keep generated networks valid)."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _max_kernel(size: int, p: int, d: int, cap: int = 5) -> int:
    """The largest kernel whose dilated extent d·(k−1)+1 fits the padded length size+2p."""
    return min(cap, (size + 2 * p - 1) // d + 1)


def _divisors(n: int) -> list[int]:
    return [g for g in range(1, n + 1) if n % g == 0]


# -- valid networks ----------------------------------------------------------------------------------------------

@st.composite
def cnn_specs(draw):
    """(input shape, [(name, ir_node_attrs, torch_factory)]): each layer drawn valid for the shape so far."""
    shape = input_shape = (draw(st.integers(1, 6)), draw(st.integers(4, 18)), draw(st.integers(4, 18)))
    layers = []
    for i in range(draw(st.integers(1, 6))):
        name = f"l{i}"
        c, h, w = shape
        kind = draw(st.sampled_from(["conv", "conv", "conv", "bn", "act", "maxpool", "avgpool"]))
        if kind == "conv":
            g = draw(st.sampled_from(_divisors(c)))
            co = g * draw(st.integers(1, max(1, 8 // g)))
            d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
            pad_kind = draw(st.sampled_from(["int", "pair", "same", "valid"]))
            if pad_kind == "same":
                s, p = (1, 1), (0, 0)
            else:
                s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
                p = (0, 0) if pad_kind == "valid" else (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
                if pad_kind == "int":
                    p = (p[0], p[0])
            k = (draw(st.integers(1, _max_kernel(h, p[0], d[0]))), draw(st.integers(1, _max_kernel(w, p[1], d[1]))))
            bias = draw(st.booleans())
            padding = pad_kind if pad_kind in ("same", "valid") else (p[0] if pad_kind == "int" else p)
            attrs = dict(out_channels=co, kernel_size=k, stride=s, padding=padding, dilation=d, groups=g, bias=bias)
            mod = (lambda c=c, a=attrs: nn.Conv2d(c, a["out_channels"], a["kernel_size"], a["stride"], a["padding"],
                                                  a["dilation"], a["groups"], a["bias"]))
            shape = (co, h, w) if pad_kind == "same" else \
                (co, _out_len(h, k[0], s[0], p[0], d[0]), _out_len(w, k[1], s[1], p[1], d[1]))
            layers.append((name, "conv2d", attrs, mod))
        elif kind == "bn":
            layers.append((name, "batch_norm", {}, lambda c=c: nn.BatchNorm2d(c)))
        elif kind == "act":
            op = draw(st.sampled_from(sorted(ACTIVATIONS)))
            layers.append((name, op, {}, ACTIVATIONS[op]))
        else:
            is_max = kind == "maxpool"
            d = draw(st.integers(1, 2)) if is_max else 1
            k = draw(st.integers(1, min(3, _max_kernel(h, 0, d, 3), _max_kernel(w, 0, d, 3))))
            p = draw(st.integers(0, k // 2))
            s = draw(st.one_of(st.none(), st.integers(1, 3)))
            ceil_mode = draw(st.booleans())
            attrs = dict(kernel_size=k, stride=s, padding=p, ceil_mode=ceil_mode)
            if is_max:
                attrs["dilation"] = d
                mod = (lambda a=attrs: nn.MaxPool2d(a["kernel_size"], a["stride"], a["padding"], a["dilation"],
                                                    ceil_mode=a["ceil_mode"]))
            else:
                attrs["count_include_pad"] = draw(st.booleans())
                mod = (lambda a=attrs: nn.AvgPool2d(a["kernel_size"], a["stride"], a["padding"], a["ceil_mode"],
                                                    a["count_include_pad"]))
            ss = k if s is None else s
            shape = (c, _out_len(h, k, ss, p, d, ceil_mode), _out_len(w, k, ss, p, d, ceil_mode))
            layers.append((name, "max_pool2d" if is_max else "avg_pool2d", attrs, mod))
        assert min(shape) >= 1, "generator bug: the spec must stay valid"
    c, h, w = shape
    osz = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    classes = draw(st.integers(1, 10))
    layers += [("pool", "adaptive_avg_pool2d", {"output_size": osz}, lambda o=osz: nn.AdaptiveAvgPool2d(o)),
               ("flat", "flatten", {"start_dim": 1}, lambda: nn.Flatten(1)),
               ("fc", "linear", {"out_features": classes}, lambda f=c * osz[0] * osz[1], o=classes: nn.Linear(f, o))]
    return input_shape, layers


def _build(spec) -> tuple[Network, Seq]:
    input_shape, layers = spec
    nodes, prev = [], "x"
    for name, op, attrs, _ in layers:
        nodes.append(N(name, op, prev, **attrs))
        prev = name
    net = Network.make("random_cnn", {"x": input_shape}, nodes)
    return net, Seq(*[(name, make()) for name, _, _, make in layers])


@SETTINGS
@given(cnn_specs())
def test_random_cnn_matches_torch(spec):
    net, module = _build(spec)
    report = core.analyze(net, batch_size=BATCH)
    module.eval()                                   # BatchNorm on running stats: any spatial size works
    x = torch.randn(BATCH, *spec[0])
    with torch.no_grad():
        out = module(x)
    assert [l.name for l in report.layers] == list(out)
    for layer in report.layers:
        assert layer.output_shape == tuple(out[layer.name].shape), layer.name
    assert report.totals["params"] == n_params(module)
    assert report.totals["buffers"] == sum(b.numel() for n, b in module.named_buffers()
                                           if not n.endswith("num_batches_tracked"))
    # forward: FlopCounterMode counts exactly the conv and linear multiply-adds (2 FLOPs each)
    split = split_grouped(module)   # grouped convs per group: FlopCounterMode over-counts their weight gradient
    fwd_ref, bwd_ref = fwd_bwd_flops(split, [x], lambda o: o["fc"])
    assert report.totals["macs"] * 2 == fwd_ref
    fwd, bwd = mac_layer_flops(net, report)
    assert fwd == fwd_ref
    assert bwd == bwd_ref
    # every figure is per sample × N
    one = core.analyze(net, batch_size=1).totals
    for key in ("macs", "flops", "backward_flops"):
        assert report.totals[key] == BATCH * one[key]


# -- invalid networks --------------------------------------------------------------------------------------------

names = st.text(alphabet=string.ascii_letters + string.digits + "_.-", min_size=1, max_size=10).map(
    lambda s: "bad_" + s)


def _raises_naming(net: Network, node: str, batch_size: int = 1) -> NetworkError:
    with pytest.raises(NetworkError) as info:
        core.analyze(net, batch_size=batch_size)
    assert node in str(info.value), f"{node!r} not named in {str(info.value)!r}"
    return info.value


def _torch_rejects(make, x_shape) -> None:
    """The same network is invalid for PyTorch too (construction or the forward raises)."""
    with pytest.raises((RuntimeError, ValueError)):
        make()(torch.zeros(1, *x_shape))


@FEW
@given(st.data(), names)
def test_window_larger_than_padded_input(data, name):
    op = data.draw(st.sampled_from(["conv2d", "max_pool2d", "avg_pool2d"]))
    c, h, w = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    bad_axis = data.draw(st.sampled_from([(0,), (1,), (0, 1)]))
    d = (1, 1) if op == "avg_pool2d" else (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    k, p = [], []
    for axis, size in enumerate((h, w)):
        if axis in bad_axis:
            pi = data.draw(st.integers(0, 2))
            # smallest kernel whose dilated extent d·(k−1)+1 exceeds the padded length size + 2p
            ki = data.draw(st.integers((size + 2 * pi - 1) // d[axis] + 2, (size + 2 * pi - 1) // d[axis] + 4))
            assert d[axis] * (ki - 1) + 1 > size + 2 * pi
        else:
            pi = data.draw(st.integers(0, 1))
            ki = data.draw(st.integers(max(1, 2 * pi), max(1, 2 * pi, _max_kernel(size, pi, d[axis], 3))))
            assume(d[axis] * (ki - 1) + 1 <= size + 2 * pi)
        k.append(ki)
        p.append(min(pi, ki // 2) if op != "conv2d" else pi)   # pools: padding ≤ half the kernel, as torch asks
    k, p = tuple(k), tuple(p)
    if op == "conv2d":
        node = N(name, op, "pre", out_channels=2, kernel_size=k, padding=p, dilation=d)
        make = lambda: nn.Sequential(nn.ReLU(), nn.Conv2d(c, 2, k, padding=p, dilation=d))
    elif op == "max_pool2d":
        node = N(name, op, "pre", kernel_size=k, padding=p, dilation=d)
        make = lambda: nn.Sequential(nn.ReLU(), nn.MaxPool2d(k, padding=p, dilation=d))
    else:
        node = N(name, op, "pre", kernel_size=k, padding=p)
        make = lambda: nn.Sequential(nn.ReLU(), nn.AvgPool2d(k, padding=p))
    assume(any(d[a] * (k[a] - 1) + 1 > (h, w)[a] + 2 * p[a] for a in bad_axis))
    net = Network.make("t", {"x": (c, h, w)}, [N("pre", "relu", "x"), node])
    err = _raises_naming(net, name)
    assert err.node == name
    _torch_rejects(make, (c, h, w))


@FEW
@given(st.data(), names)
def test_groups_not_dividing(data, name):
    g = data.draw(st.integers(2, 6))
    c_in = data.draw(st.integers(1, 13))
    c_out = data.draw(st.integers(1, 13))
    if c_in % g == 0 and c_out % g == 0:
        c_out += 1                         # now g ∤ c_out (g ≥ 2), so the conv is invalid by construction
    assert c_in % g or c_out % g
    op = data.draw(st.sampled_from(["conv2d", "conv_transpose2d"]))
    net = Network.make("t", {"x": (c_in, 6, 6)}, [N(name, op, "x", out_channels=c_out, kernel_size=3, groups=g)])
    err = _raises_naming(net, name)
    assert err.field == "groups"
    conv = nn.Conv2d if op == "conv2d" else nn.ConvTranspose2d
    _torch_rejects(lambda: conv(c_in, c_out, 3, groups=g), (c_in, 6, 6))


@FEW
@given(st.data(), names, st.integers(-5, 0))
def test_nonpositive_sizes(data, name, bad):
    where = data.draw(st.sampled_from(["conv_out", "convT_out", "linear_out", "input", "group_norm", "reshape",
                                       "parameter"]))
    x = (3, 6, 6)
    nodes = {
        "conv_out": [N(name, "conv2d", "x", out_channels=bad, kernel_size=1)],
        "convT_out": [N(name, "conv_transpose2d", "x", out_channels=bad, kernel_size=1)],
        "linear_out": [N(name, "linear", "x", out_features=bad)],
        "input": [N("ok", "relu", "x")],
        "group_norm": [N(name, "group_norm", "x", num_groups=bad)],
        "reshape": [N(name, "reshape", "x", shape=(bad, -1) if bad != -1 else (bad, bad))],
        "parameter": [N(name, "parameter", shape=(2, bad))],
    }[where]
    if where == "input":
        shape = list(x)
        shape[data.draw(st.integers(0, 2))] = bad
        net = Network.make("t", {"x": tuple(shape)}, nodes)
        _raises_naming(net, "input 'x'")
    else:
        _raises_naming(Network.make("t", {"x": x}, nodes), name)


@FEW
@given(st.data(), names)
def test_nonpositive_stride(data, name):
    op = data.draw(st.sampled_from(["conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d"]))
    s = data.draw(st.integers(-3, 0))
    stride = data.draw(st.sampled_from([s, (s, 1), (1, s)]))
    extra = {"out_channels": 2} if op.startswith("conv") else {}
    net = Network.make("t", {"x": (2, 8, 8)}, [N(name, op, "x", kernel_size=2, stride=stride, **extra)])
    err = _raises_naming(net, name)
    assert err.field == "stride"


@FEW
@given(names, st.text(max_size=12).filter(lambda s: s not in core.REGISTRY))
def test_unknown_op(name, op):
    net = Network.make("t", {"x": (3, 4, 4)}, [N("ok", "relu", "x"), N(name, op, "ok")])
    err = _raises_naming(net, name)
    assert err.field == "op"


@FEW
@given(st.integers(2, 8), st.integers(2, 8), st.booleans(), names)
def test_add_channel_mismatch(c1, c2, spatial, name):
    """Two branches that cannot broadcast: different channel counts (both ≥ 2, so neither broadcasts), or
    different spatial sizes (a stride-2 branch)."""
    if spatial:
        c2, s2 = c1, 2
    else:
        c2, s2 = (c2 if c2 != c1 else c1 + 1), 1
    nodes = [N("a", "conv2d", "x", out_channels=c1, kernel_size=3, padding=1),
             N("b", "conv2d", "x", out_channels=c2, kernel_size=3, padding=1, stride=s2),
             N(name, "add", ("a", "b"))]
    _raises_naming(Network.make("t", {"x": (3, 8, 8)}, nodes), name)
    a, b = nn.Conv2d(3, c1, 3, padding=1), nn.Conv2d(3, c2, 3, padding=1, stride=s2)
    _torch_rejects(lambda: (lambda t: a(t) + b(t)), (3, 8, 8))


@FEW
@given(st.integers(1, 5), st.data())
def test_cycles(k, data):
    """k nodes reading each other in a ring (k = 1: a node reading itself), hung off a valid head, listed in a
    random order."""
    ring = [f"ring{i}" for i in range(k)]
    nodes = [N("head", "relu", "x")]
    for i, n in enumerate(ring):
        ins = (ring[i - 1],) if i else ((ring[-1], "head") if k > 1 else (n,))
        nodes.append(N(n, "add" if len(ins) > 1 else "relu", ins))
    nodes = data.draw(st.permutations(nodes))
    with pytest.raises(NetworkError) as info:
        core.analyze(Network.make("t", {"x": (2, 3, 3)}, nodes, outputs=[ring[0]]))
    assert info.value.node in ring
    assert info.value.node in str(info.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**15, 10**15) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@FEW
@given(st.text(max_size=60))
def test_garbage_text_is_a_network_error(text):
    with pytest.raises(NetworkError):
        Network.from_json(text)


@FEW
@given(json_values)
def test_garbage_json_values_are_a_network_error(value):
    # no random value carries the schema tag, so none is a network document
    with pytest.raises(NetworkError):
        Network.from_json(json.dumps(value))


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


MNIST_DOC = core.zoo.get("mnist_cnn").to_dict()
MNIST_PATHS = [p for p in _paths(MNIST_DOC) if p]


@SETTINGS
@given(st.sampled_from(MNIST_PATHS), json_values)
def test_mutated_document_analyses_or_raises_network_error(path, value):
    """Any value anywhere in a valid document: the engine either analyses the result or raises NetworkError,
    never another exception (no TypeError, KeyError, ZeroDivisionError …)."""
    doc = json.loads(json.dumps(MNIST_DOC))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        core.analyze(Network.from_json(json.dumps(doc)))
    except NetworkError:
        pass


@pytest.mark.parametrize("value", [{"h": 3}, {}, [{"a": 1}], [3, {"w": 3}]], ids=repr)
@pytest.mark.parametrize("field", ["kernel_size", "padding", "divisor_override"])
def test_object_valued_attribute_is_a_network_error(field, value):
    """A JSON object where an attribute wants a number (a common hand-editing slip) is bad input like any other."""
    attrs = {"kernel_size": 2, field: value}
    doc = {"schema": "cnn-calc/network", "version": core.SCHEMA_VERSION, "name": "t",
           "inputs": [{"name": "x", "shape": [1, 8, 8]}],
           "nodes": [{"name": "pool1", "op": "avg_pool2d", "inputs": ["x"], "attrs": attrs}]}
    with pytest.raises(NetworkError) as info:
        core.analyze(Network.from_json(json.dumps(doc)))
    assert "pool1" in str(info.value)


@FEW
@given(st.one_of(st.integers(max_value=0), st.integers(min_value=2 ** 24 + 1, max_value=10 ** 18),
                 st.just(10 ** 9), st.floats(), st.booleans(), st.text(max_size=5), st.none()))
def test_bad_batch_size(batch):
    net = core.zoo.get("mnist_cnn")
    with pytest.raises(NetworkError):
        core.analyze(net, batch_size=batch)
    with pytest.raises(NetworkError):
        core.analyze(net).with_batch(batch)


@FEW
@given(st.data(), names, st.integers(2 ** 24 + 1, 10 ** 15))
def test_absurd_sizes(data, name, huge):
    """10^12 channels and the like are rejected, naming the node (or the input)."""
    where = data.draw(st.sampled_from(["conv", "convT", "linear", "input", "reshape", "parameter", "interp"]))
    if where == "input":
        _raises_naming(Network.make("t", {"x": (huge, 8, 8)}, [N("ok", "relu", "x")]), "input 'x'")
        return
    node = {
        "conv": N(name, "conv2d", "x", out_channels=huge, kernel_size=1),
        "convT": N(name, "conv_transpose2d", "x", out_channels=huge, kernel_size=1),
        "linear": N(name, "linear", "x", out_features=huge),
        "reshape": N(name, "reshape", "x", shape=(huge, -1)),
        "parameter": N(name, "parameter", shape=(huge,)),
        "interp": N(name, "interpolate", "x", size=(huge, 2)),
    }[where]
    _raises_naming(Network.make("t", {"x": (3, 8, 8)}, [node]), name)


def test_10_to_12_channels_exactly():
    # the brief's example: a conv with 10^12 output channels
    net = Network.make("t", {"x": (3, 8, 8)}, [N("wide", "conv2d", "x", out_channels=10 ** 12, kernel_size=3)])
    _raises_naming(net, "wide")


# -- invalid attribute values that PyTorch rejects: the engine must reject them too, naming the node ------------

_x = (3, 8, 8)
TORCH_REJECTS = [
    # (id, IR op, IR attrs, the same thing in torch on a [1, 3, 8, 8] tensor)
    ("maxpool_stride_2_null", "max_pool2d", dict(kernel_size=2, stride=(2, None)),
     lambda x: nn.MaxPool2d(2, stride=(2, None))(x)),
    ("maxpool_stride_null_2", "max_pool2d", dict(kernel_size=2, stride=(None, 2)),
     lambda x: nn.MaxPool2d(2, stride=(None, 2))(x)),
    ("avgpool_stride_2_null", "avg_pool2d", dict(kernel_size=2, stride=(2, None)),
     lambda x: nn.AvgPool2d(2, stride=(2, None))(x)),
    ("interp_scale_inf", "interpolate", dict(scale_factor=float("inf")),
     lambda x: F.interpolate(x, scale_factor=float("inf"))),
    ("interp_scale_nan", "interpolate", dict(scale_factor=float("nan")),
     lambda x: F.interpolate(x, scale_factor=float("nan"))),
    ("interp_scale_pair_inf", "interpolate", dict(scale_factor=(2.0, float("inf")), mode="bilinear"),
     lambda x: F.interpolate(x, scale_factor=(2.0, float("inf")), mode="bilinear")),
    ("interp_align_corners_nearest", "interpolate", dict(size=4, align_corners=True),
     lambda x: F.interpolate(x, size=4, mode="nearest", align_corners=True)),
    ("interp_align_corners_not_bool", "interpolate", dict(size=4, mode="bilinear", align_corners="yes"),
     lambda x: F.interpolate(x, size=4, mode="bilinear", align_corners="yes")),
    ("dropout_p_above_1", "dropout", dict(p=1.5), lambda x: nn.Dropout(1.5)(x)),
    ("dropout_p_negative", "dropout", dict(p=-0.1), lambda x: nn.Dropout(-0.1)(x)),
    ("avgpool_divisor_zero", "avg_pool2d", dict(kernel_size=2, divisor_override=0),
     lambda x: nn.AvgPool2d(2, divisor_override=0)(x)),
    ("avgpool_divisor_float", "avg_pool2d", dict(kernel_size=2, divisor_override=1.5),
     lambda x: nn.AvgPool2d(2, divisor_override=1.5)(x)),
    ("avgpool_divisor_text", "avg_pool2d", dict(kernel_size=2, divisor_override="abc"),
     lambda x: nn.AvgPool2d(2, divisor_override="abc")(x)),
    ("add_scalar_text", "add", dict(scalar="abc"), lambda x: torch.add(x, "abc")),
]


@pytest.mark.parametrize("op,attrs,torch_fn", [c[1:] for c in TORCH_REJECTS], ids=[c[0] for c in TORCH_REJECTS])
def test_torch_rejects_so_must_the_engine(op, attrs, torch_fn):
    with pytest.raises((RuntimeError, ValueError, TypeError)):
        torch_fn(torch.zeros(1, *_x))
    _raises_naming(Network.make("t", {"x": _x}, [N("ok", "relu", "x"), N("bad_attr", op, "ok", **attrs)]), "bad_attr")


@pytest.mark.parametrize("value", [{"h": 3}, {}, [3, {"w": 3}]], ids=repr)
def test_object_valued_attribute_via_python_api(value):
    """The same slip through the Python API (``Node.make``) rather than JSON."""
    net = Network.make("t", {"x": (1, 8, 8)}, [N("pool1", "avg_pool2d", "x", kernel_size=value)])
    _raises_naming(net, "pool1")


@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "NaN"])
def test_non_finite_json_numbers(literal):
    """Python's json module reads Infinity / NaN; a document using them is bad input, not a crash."""
    text = ('{"schema": "cnn-calc/network", "version": %d, "name": "t", "inputs": [{"name": "x", "shape": [3, 8, 8]}],'
            ' "nodes": [{"name": "up", "op": "interpolate", "inputs": ["x"], "attrs": {"scale_factor": %s}}]}'
            % (core.SCHEMA_VERSION, literal))
    with pytest.raises(NetworkError) as info:
        core.analyze(Network.from_json(text))
    assert "up" in str(info.value)
