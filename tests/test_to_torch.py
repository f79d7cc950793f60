"""IR → PyTorch (``core.bridge.to_torch``): ``to_module`` and ``to_source`` against torch, torchvision and the engine.

Expected values come from torch itself (torchvision's models and state dicts, torch ops applied sample by sample), from
the engine's own analysis (parameter counts, output shapes) or from hand arithmetic shown in a comment. Large
networks are built on the meta device; real forward passes use small inputs (2 CPU cores).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import core
from core import Network, Node
from core.bridge.fx_import import import_table
from core.bridge.to_torch import to_module, to_source
from core.registry import Importer

N = Node.make
BATCH = 2


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def exec_source(code: str, device: str | None = None) -> nn.Module:
    """Run generated code the way a student would paste it; it defines ``model``."""
    namespace: dict = {}
    with torch.device(device) if device else nullcontext():
        exec(compile(code, "<to_source>", "exec"), namespace)
    return namespace["model"]


def load_by_position(model: nn.Module, state: dict) -> None:
    """Copy ``state`` into ``model`` entry by entry (generated source names layers differently, same order)."""
    own = model.state_dict()
    assert len(own) == len(state)
    for (k, mine), theirs in zip(own.items(), state.values()):
        assert mine.shape == theirs.shape, k
    model.load_state_dict(dict(zip(own, state.values())), strict=True)


def randomize_buffers(model: nn.Module) -> None:
    """BatchNorm running statistics away from their 0 / 1 defaults, so eval-mode BatchNorm does something."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if b.is_floating_point():
                b.copy_(torch.rand(b.shape, generator=g) + (0.5 if name.endswith("running_var") else -0.5))


# == every built-in network ========================================================================================

# What the IR does not describe fully cannot be built: an ``opaque`` op (no rule) or a tensor the IR derives from a
# table without saying how (``parameter`` with ``numel``; e.g. MaxViT's relative-position bias).
NOT_BUILDABLE_OPS = {"opaque", "parameter"}


@pytest.mark.parametrize("name", core.builtin_names())
def test_builtin_on_meta(name):
    net = core.load_network(name)
    try:
        model = to_module(net, device="meta")
    except core.NetworkError as e:
        assert net.node(e.node).op in NOT_BUILDABLE_OPS
        with pytest.raises(core.NetworkError):
            to_source(net)
        return
    params = core.analyze(net).totals["params"]
    classes = 10 if name.startswith("mnist") else 1000       # MNIST digits / ImageNet classes
    x = torch.empty(BATCH, *net.input_shapes["x"], device="meta")
    for m in (model, exec_source(to_source(net), "meta")):
        assert n_params(m) == params
        with torch.no_grad():                         # eval mode: meta BatchNorm is 3× faster without statistics
            assert tuple(m.eval()(x).shape) == (BATCH, classes)


def test_hand_checked_networks_are_buildable():
    for name in ("mnist_cnn", "mnist_cnn_conv2_128", "alexnet", "vgg11", "resnet18", "resnet50"):
        to_module(core.load_network(name), device="meta")


# torchvision CNNs built from modules only (one per family): the IR keeps their module names
LAYOUT = [n for n in ("alexnet", "vgg11_bn", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "densenet121",
                      "mobilenet_v2", "mobilenet_v3_small", "mnasnet0_5", "efficientnet_b0", "shufflenet_v2_x0_5",
                      "squeezenet1_0") if n in core.builtin_names()]


@pytest.mark.parametrize("name", LAYOUT)
def test_state_dict_layout_is_torchvisions(name):
    """Same keys, in the same order, with the same shapes as torchvision's model (both on meta)."""
    with torch.device("meta"):
        reference = torchvision.models.get_model(name, weights=None).state_dict()
    ours = to_module(core.load_network(name), device="meta").state_dict()
    assert [(k, v.shape) for k, v in ours.items()] == [(k, v.shape) for k, v in reference.items()]


@pytest.mark.parametrize("name, size", [("resnet18", 64), ("vgg11", 64), ("alexnet", 64),
                                        ("mobilenet_v3_small", 224)])     # adaptive pooling: any size ≥ 63 works
def test_torchvision_weights_give_torchvisions_output(name, size):
    torch.manual_seed(0)
    reference = torchvision.models.get_model(name, weights=None).eval()
    randomize_buffers(reference)
    net = core.load_network(name).with_input_shape((3, size, size))
    x = torch.randn(1, 3, size, size)
    model = to_module(net).eval()
    model.load_state_dict(reference.state_dict(), strict=True)
    pasted = exec_source(to_source(net)).eval()
    load_by_position(pasted, reference.state_dict())
    with torch.no_grad():
        expected = reference(x)
        assert torch.allclose(model(x), expected, atol=1e-5)
        assert torch.allclose(pasted(x), expected, atol=1e-5)


# == what-if edits run =============================================================================================

def test_mnist_conv2_widened_to_128_runs():
    net = core.load_network("mnist_cnn_conv2_128")
    model = to_module(net)
    # conv1 1·32·3·3 + 32 = 320; conv2 32·128·3·3 + 128 = 36,992; fc1 (128·12·12 = 18,432)·128 + 128 = 2,359,424;
    # fc2 128·10 + 10 = 1,290 → 2,398,026
    assert n_params(model) == 320 + 36_992 + 2_359_424 + 1_290 == 2_398_026
    assert tuple(model.get_submodule("fc1").weight.shape) == (128, 18_432)
    out = model(torch.randn(3, 1, 28, 28))
    assert tuple(out.shape) == (3, 10)
    assert torch.allclose(out.exp().sum(dim=1), torch.ones(3), atol=1e-5)   # log_softmax rows


def _resnet18_64px() -> Network:
    return core.load_network("resnet18").with_input_shape((3, 64, 64))


def test_resnet18_with_a_widened_stage_runs():
    result = core.edit(_resnet18_64px(), "layer2.0.conv1", "out_channels", 192)
    model = to_module(result.network).eval()
    assert tuple(model.get_submodule("layer2.0.conv1").weight.shape) == (192, 64, 3, 3)
    assert tuple(model.get_submodule("layer2.0.bn1").weight.shape) == (192,)
    assert tuple(model.get_submodule("layer2.0.conv2").weight.shape) == (128, 192, 3, 3)
    with torch.no_grad():
        assert tuple(model(torch.randn(1, 3, 64, 64)).shape) == (1, 1000)


def test_resnet18_with_a_coupled_conv_widened_runs():
    # layer1.0.conv2 feeds a residual add with the stem: the edit widens conv1 and layer1.1.conv2 too
    result = core.edit(_resnet18_64px(), "layer1.0.conv2", "out_channels", 96)
    assert result.coupled
    model = to_module(result.network).eval()
    assert tuple(model.get_submodule("conv1").weight.shape) == (96, 3, 7, 7)
    assert tuple(model.get_submodule("layer1.1.conv1").weight.shape) == (64, 96, 3, 3)
    assert tuple(model.get_submodule("layer2.0.downsample.0").weight.shape) == (128, 96, 1, 1)
    assert n_params(model) == core.analyze(result.network).totals["params"]
    with torch.no_grad():
        assert tuple(model(torch.randn(1, 3, 64, 64)).shape) == (1, 1000)


# == every op kind =================================================================================================

@dataclass
class Case:
    id: str
    inputs: dict          # input name -> per-sample shape
    nodes: list

    def network(self) -> Network:
        return Network.make(self.id, self.inputs, self.nodes)


def one(_id: str, _shape: tuple, _op: str, /, **attrs) -> Case:
    return Case(_id, {"x": _shape}, [N("y", _op, "x", **attrs)])


_ACTIVATIONS = ["relu", "relu6", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid", "identity"]

_ALL_CASES = [
    one("conv2d", (3, 8, 8), "conv2d", out_channels=4, kernel_size=3, stride=2, padding=1, bias=False),
    one("conv2d_same_dilated_grouped", (4, 7, 6), "conv2d", out_channels=6, kernel_size=(3, 2), padding="same",
        dilation=2, groups=2),
    one("conv2d_valid", (2, 6, 6), "conv2d", out_channels=3, kernel_size=(2, 3), padding="valid"),
    one("conv_transpose2d", (4, 5, 5), "conv_transpose2d", out_channels=6, kernel_size=3, stride=2, padding=1,
        output_padding=1, groups=2),
    one("linear", (5, 16), "linear", out_features=7),
    one("linear_no_bias", (6,), "linear", out_features=9, bias=False),
    one("max_pool2d", (3, 9, 9), "max_pool2d", kernel_size=3, stride=2, padding=1, ceil_mode=True),
    one("max_pool2d_dilated", (2, 9, 9), "max_pool2d", kernel_size=2, dilation=2),
    one("avg_pool2d", (2, 7, 7), "avg_pool2d", kernel_size=3, stride=2, padding=1, count_include_pad=False),
    one("avg_pool2d_divisor", (2, 6, 6), "avg_pool2d", kernel_size=2, divisor_override=3),
    one("adaptive_avg_pool2d", (2, 5, 9), "adaptive_avg_pool2d", output_size=(None, 3)),
    one("adaptive_max_pool2d", (2, 5, 9), "adaptive_max_pool2d", output_size=(3, 4)),
    one("batch_norm_1d_features", (6,), "batch_norm"),
    one("batch_norm_1d_sequence", (4, 5), "batch_norm", affine=False),
    one("batch_norm", (3, 4, 4), "batch_norm", eps=1e-3, momentum=0.01),
    one("batch_norm_3d", (2, 3, 4, 4), "batch_norm", track_running_stats=False),
    one("layer_norm", (3, 4, 5), "layer_norm", normalized_ndim=2, bias=False),
    one("layer_norm_no_affine", (5, 8), "layer_norm", elementwise_affine=False),
    one("group_norm", (6, 3, 3), "group_norm", num_groups=3),
    *[one(k, (3, 4, 4), k) for k in _ACTIVATIONS],
    one("relu_inplace", (3, 4, 4), "relu", inplace=True),      # idempotent: the test's inputs may be overwritten
    one("softmax", (3, 4, 4), "softmax", dim=-1),
    one("log_softmax", (5, 3), "log_softmax", dim=1),
    one("dropout", (3, 4, 4), "dropout", p=0.3),
    one("flatten", (3, 4, 5), "flatten", start_dim=2),
    one("reshape", (3, 4, 4), "reshape", shape=(-1, 4)),
    one("permute", (3, 4, 5), "permute", dims=(0, 2, 3, 1)),
    one("transpose", (3, 4, 5), "transpose", dim0=1, dim1=-1),
    one("channel_shuffle", (6, 3, 3), "channel_shuffle", groups=3),
    Case("contiguous_after_transpose", {"x": (3, 4, 5)},
         [N("t", "transpose", ("x",), dim0=1, dim1=3), N("y", "contiguous", ("t",))]),
    one("interpolate_size", (3, 5, 4), "interpolate", size=(12, 10)),
    one("interpolate_bilinear", (3, 5, 4), "interpolate", size=9, mode="bilinear", align_corners=True),
    one("interpolate_bicubic_scale", (3, 5, 4), "interpolate", scale_factor=(2, 0.5), mode="bicubic"),
    one("add_scalar", (3, 4, 4), "add", scalar=1.5),
    one("mul_scalar", (3, 4, 4), "mul", scalar=-2.0),
    one("sub_scalar", (3, 4, 4), "sub", scalar=0.5),
    Case("div_broadcast", {"a": (3, 4, 4), "b": (3, 1, 4)}, [N("y", "div", ("a", "b"))]),
    Case("add_broadcast", {"a": (3, 4, 4), "b": (3, 1, 4)}, [N("y", "add", ("a", "b"))]),
    Case("add_inplace", {"a": (3, 4, 4), "b": (3, 1, 4)}, [N("y", "add", ("a", "b"), inplace=True)]),
    Case("mul_three", {"a": (3, 4), "b": (3, 4), "c": (1, 4)}, [N("y", "mul", ("a", "b", "c"))]),
    Case("concat", {"a": (2, 4), "b": (5, 4)}, [N("y", "concat", ("a", "b"), dim=1)]),
    Case("matmul", {"a": (4, 5), "b": (5, 6)}, [N("y", "matmul", ("a", "b"))]),
    Case("matmul_broadcast", {"a": (2, 1, 4, 5), "b": (3, 5, 6)}, [N("y", "matmul", ("a", "b"))]),
    Case("sdpa_causal", {"q": (6, 8), "k": (6, 8), "v": (6, 5)}, [N("y", "sdpa", ("q", "k", "v"), is_causal=True)]),
    Case("sdpa_broadcast", {"q": (3, 4, 8), "k": (6, 8), "v": (1, 6, 8)}, [N("y", "sdpa", ("q", "k", "v"))]),
    Case("parameter_tokens", {"x": (5, 8)},               # ViT: class token, then position embedding
         [N("cls", "parameter", shape=(1, 8)), N("cat", "concat", ("cls", "x"), dim=1),
          N("pos", "parameter", shape=(6, 8)), N("y", "add", ("cat", "pos"))]),
    Case("parameter_frozen", {"x": (3, 4)},
         [N("w", "parameter", shape=(3, 4), trainable=False), N("y", "mul", ("x", "w"))]),
    Case("parameter_buffer", {"x": (3, 4)},
         [N("b", "parameter", shape=(3, 4), buffer=True, numel=12), N("y", "add", ("x", "b"))]),   # 3·4 = 12
    one("mean", (3, 4, 5), "mean", dim=(2, -1), keepdim=True),
    one("mean_drop_dims", (3, 4, 5), "mean", dim=(1,)),
    one("sum", (3, 4, 5), "sum", dim=(2, -1), keepdim=True),
    one("sum_drop_dims", (2, 3, 4), "sum", dim=(1,)),
    one("expand", (3, 1, 5), "expand", shape=(3, 4, 5)),
    one("norm", (3, 4, 5), "norm", dim=(2, -1), keepdim=True),
    one("norm_p3", (3, 4, 5), "norm", dim=(1,), p=3.0),
    one("leaky_relu", (3, 4, 4), "leaky_relu", negative_slope=0.2),
    one("slice", (3, 8, 5), "slice", dim=2, start=1, end=7, step=2),
    one("slice_to_end", (6, 4), "slice", dim=-2, start=-3),
    one("slice_select", (5, 8), "slice", dim=1, start=0, select=True),
    one("pad", (3, 4, 5), "pad", pad=(1, 2, 0, 3)),
    one("roll", (6, 6, 3), "roll", shifts=(-2, -2), dims=(1, 2)),
    Case("einsum", {"a": (3, 4, 5), "b": (3, 5, 6)}, [N("y", "einsum", ("a", "b"), equation="nhij,nhjk->nhik")]),
    Case("multihead_attention", {"q": (3, 8), "k": (4, 6), "v": (4, 5)},
         [N("attn", "multihead_attention", ("q", "k", "v"), embed_dim=8, num_heads=2)]),
    Case("multihead_self_attention", {"x": (5, 8)},
         [N("attn", "multihead_attention", ("x", "x", "x"), embed_dim=8, num_heads=4, bias=False)]),
    # Swin v1 window attention: relative-position table (2·4 − 1)·(2·4 − 1)·4 heads = 196 extra parameters
    one("window_attention", (8, 8, 32), "window_attention", window_size=4, num_heads=4, shift_size=2,
        extra_params=196),
    # Swin v2: position MLP 2·512 + 512 + 512·4 = 3,584, logit scale 4 → 3,588 extra parameters
    one("window_attention_v2", (6, 6, 16), "window_attention", window_size=3, num_heads=4, shift_size=1,
        extra_params=3588),
]

# ``core.ops`` is still growing: a case whose op or attributes the engine does not know (yet) is left out here,
# while ``test_every_op_kind_has_a_case`` makes sure every registered op is covered.
CASES = [c for c in _ALL_CASES
         if all(n.op in core.REGISTRY and {k for k, _ in n.attrs} <= {a.name for a in core.REGISTRY[n.op].attrs}
                for n in c.nodes)]
UNCONVERTIBLE = {"opaque": {"shape": (4,), "target": "torch.fft.fft"}}    # no rule, so nothing to build


def test_every_op_kind_has_a_case():
    covered = {n.op for c in CASES for n in c.nodes} | set(UNCONVERTIBLE)
    assert set(core.REGISTRY) - covered == set()


def test_every_rule_says_how_it_becomes_torch():
    assert [k for k, rule in core.REGISTRY.items() if not callable(rule.to_torch)] == []
    with pytest.raises(RuntimeError, match="to_torch"):
        dataclasses.replace(core.REGISTRY["relu"], to_torch=None)      # a rule without one is refused


def test_every_importer_target_resolves():
    import torchvision.models.swin_transformer  # noqa: F401 — torchvision's functions resolve once it is imported

    table = import_table()
    assert table.unresolved == ()
    targets = [imp.target for rule in core.REGISTRY.values() for imp in rule.imports]
    assert len(table.modules) + len(table.functions) + len(table.methods) == len(targets)
    # a typo names nothing, and is reported as such
    typo = dataclasses.replace(core.REGISTRY["relu"], kind="toy",
                               imports=(Importer("function", "torch.nn.functional.rleu", lambda c, n: None),
                                        Importer("module", "torch.nn.ReLu", lambda c, n, m: None)))
    assert import_table({"toy": typo}).unresolved == ("torch.nn.functional.rleu", "torch.nn.ReLu")


def test_a_torch_object_imports_to_one_op_only():
    # torch.nn.functional.relu_ is torch.relu_ itself: naming it again, for another op, is refused
    twice = dataclasses.replace(core.REGISTRY["relu6"], kind="toy",
                                imports=(Importer("function", "torch.nn.functional.relu_", lambda c, n: None),))
    with pytest.raises(RuntimeError, match="relu_"):
        import_table({**core.REGISTRY, "toy": twice})


def test_in_place_nodes_stay_in_place():
    net = Network.make("inplace", {"a": (3, 4), "b": (3, 4)},
                       [N("s", "add", ("a", "b"), inplace=True), N("r", "relu", "s", inplace=True),
                        N("h", "hardswish", "r")])
    code = to_source(net)
    assert "s = a + b" in code                                  # an in-place add is written out of place
    assert "nn.ReLU(inplace=True)" in code and "nn.Hardswish()" in code
    assert to_module(net).r.inplace and not to_module(net).h.inplace
    a, b = torch.randn(BATCH, 3, 4), torch.randn(BATCH, 3, 4)
    expected = F.hardswish(torch.relu(a + b))
    for model in (to_module(net), exec_source(code)):
        assert torch.equal(model(a, b), expected)


def _inputs(net: Network) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randn(BATCH, *s, generator=g) for _, s in net.inputs]


def _randomized(model: nn.Module) -> nn.Module:
    """Random parameters (the zero-initialised ``parameter`` nodes included) and BatchNorm statistics."""
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    randomize_buffers(model)
    return model.eval()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op_converts_and_runs(case: Case):
    net = case.network()
    report = core.analyze(net, batch_size=BATCH)
    xs = _inputs(net)
    model = _randomized(to_module(net))
    with torch.no_grad():
        out = model(*xs)
    assert tuple(out.shape) == report.layers[-1].output_shape
    assert n_params(model) == report.totals["params"]
    if not any(n.op == "window_attention" for n in case.nodes):     # its index tables are torchvision's own
        # the engine's buffers are float state (BatchNorm statistics), not integer counters
        assert sum(b.numel() for b in model.buffers() if b.is_floating_point()) == report.totals["buffers"]
    pasted = exec_source(to_source(net)).eval()
    load_by_position(pasted, model.state_dict())
    with torch.no_grad():
        assert torch.allclose(pasted(*xs), out, atol=1e-6)


def _per_sample(fn: Callable) -> Callable:
    """The engine's semantics of a batched op: torch's op applied to each sample on its own."""
    return lambda *xs: torch.stack([fn(*(x[i] for x in xs)) for i in range(xs[0].shape[0])])


# Independent torch references for the nodes whose semantics the converter has to get right by hand.
REFERENCES: dict[str, Callable] = {
    "matmul_broadcast": lambda m, a, b: _per_sample(torch.matmul)(a, b),
    "sdpa_broadcast": lambda m, q, k, v: _per_sample(F.scaled_dot_product_attention)(q, k, v),
    "sdpa_causal": lambda m, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "reshape": lambda m, x: x.view(-1, 12, 4),                       # 3·4·4 = 48 = 12·4 per sample
    "permute": lambda m, x: x.permute(0, 2, 3, 1),
    "transpose": lambda m, x: x.transpose(1, 3),
    "channel_shuffle": lambda m, x: x.view(BATCH, 3, 2, 3, 3).transpose(1, 2).reshape(BATCH, 6, 3, 3),
    "contiguous_after_transpose": lambda m, x: x.transpose(1, 3).contiguous(),
    "add_scalar": lambda m, x: x + 1.5,
    "mul_scalar": lambda m, x: x * -2.0,
    "mul_three": lambda m, a, b, c: a * b * c,
    "parameter_tokens": lambda m, x: torch.cat([m.cls.expand(BATCH, 1, 8), x], dim=1) + m.pos,
    "parameter_frozen": lambda m, x: x * m.w,
    "conv2d_same_dilated_grouped": lambda m, x: F.conv2d(x, m.y.weight, m.y.bias, padding="same", dilation=2, groups=2),
}


@pytest.mark.parametrize("case_id", sorted(REFERENCES))
def test_op_matches_torch_reference(case_id):
    net = next(c for c in CASES if c.id == case_id).network()
    model = _randomized(to_module(net))
    xs = _inputs(net)
    with torch.no_grad():
        assert torch.allclose(model(*xs), REFERENCES[case_id](model, *xs), atol=1e-6)


def test_parameter_is_stored_with_a_leading_one():
    # torchvision's ViT keeps class_token as [1, 1, D]: the same layout, expanded over the batch
    model = to_module(next(c for c in CASES if c.id == "parameter_tokens").network())
    assert tuple(model.cls.shape) == (1, 1, 8) and tuple(model.pos.shape) == (1, 6, 8)
    frozen = to_module(next(c for c in CASES if c.id == "parameter_frozen").network())
    assert not frozen.w.requires_grad




def test_tensor_derived_from_a_table():
    # unread (parameters an eval forward does not use, e.g. Inception's aux head): built as the 100 stored elements
    aux = N("aux", "parameter", shape=(1,), numel=100)
    net = Network.make("aux", {"x": (4,)}, [aux, N("y", "relu", "x")], outputs=("y",))
    model = to_module(net)
    assert n_params(model) == 100 == core.analyze(net).totals["params"]
    x = torch.randn(BATCH, 4)
    assert torch.equal(model(x), torch.relu(x)) and n_params(exec_source(to_source(net))) == 100
    # read: how the 100 elements make a [3, 5] tensor is not in the IR
    net = Network.make("bias", {"x": (3, 5)}, [N("b", "parameter", shape=(3, 5), numel=100), N("y", "add", ("x", "b"))])
    with pytest.raises(core.NetworkError) as err:
        to_module(net)
    assert err.value.node == "b"


# == graph structure and names =====================================================================================

def test_several_inputs_and_outputs():
    net = Network.make("two", {"a": (3, 4), "b": (3, 4)},
                       [N("s", "add", ("a", "b")), N("p", "mul", ("a", "b")), N("out", "relu", "s")],
                       outputs=("out", "p"))
    a, b = torch.randn(BATCH, 3, 4), torch.randn(BATCH, 3, 4)
    for model in (to_module(net), exec_source(to_source(net))):
        out, p = model(a, b)
        assert torch.equal(out, torch.relu(a + b)) and torch.equal(p, a * b)


def test_names_that_cannot_nest_fall_back_to_flat_ones():
    # "block" is a layer, so "block.fc" cannot live inside it; "forward" is nn.Module's own method
    net = Network.make("clash", {"x": (4,)},
                       [N("block", "relu", "x"), N("block.fc", "linear", "block", out_features=3),
                        N("forward", "tanh", "block.fc"), N("1st layer", "linear", "forward", out_features=2),
                        N("class", "sigmoid", "1st layer")])
    model = to_module(net)
    # torch takes any other string as a name, so "1st layer" stays as it is (the generated source renames it)
    assert list(model.state_dict()) == ["block_fc.weight", "block_fc.bias", "1st layer.weight", "1st layer.bias"]
    x = torch.randn(BATCH, 4)
    pasted = exec_source(to_source(net))
    load_by_position(pasted, model.state_dict())
    with torch.no_grad():
        assert torch.equal(pasted(x), model(x))
        assert tuple(model(x).shape) == (BATCH, 2)


def test_chain_becomes_sequential_and_dag_a_class():
    chain = to_source(core.load_network("mnist_cnn"))
    assert "nn.Sequential(" in chain and "class " not in chain
    assert "nn.Linear(9216, 128),  # fc1: [N, 128]" in chain           # 64·12·12 = 9216 inputs
    dag = to_source(core.load_network("resnet18"), class_name="MyResNet")
    assert "class MyResNet(nn.Module):" in dag and "model = MyResNet()" in dag
    assert "layer1_0_add = layer1_0_bn2 + maxpool" in dag


def test_import_core_does_not_import_torch():
    code = "import sys, core, core.bridge.to_torch; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(core.__file__).rsplit("/core/", 1)[0])


# == bad input =====================================================================================================

def test_invalid_network_raises_naming_the_node():
    net = Network.make("bad", {"x": (3, 3, 3)}, [N("conv", "conv2d", "x", out_channels=4, kernel_size=7)])
    for convert in (to_module, to_source):
        with pytest.raises(core.NetworkError) as err:
            convert(net)
        assert err.value.node == "conv"


@pytest.mark.parametrize("shape, op, attrs", [
    ((6,), "channel_shuffle", {"groups": 2}),          # torch: channel_shuffle needs > 2 dims
    ((2, 2, 2, 2, 2), "batch_norm", {}),               # torch: BatchNorm1d/2d/3d only
])
def test_the_engine_rejects_what_torch_cannot_run(shape, op, attrs):
    net = Network.make("odd", {"x": shape}, [N("odd_node", op, "x", **attrs)])
    with pytest.raises(core.NetworkError) as err:
        core.analyze(net)
    assert err.value.node == "odd_node"


@pytest.mark.parametrize("shape, op, attrs", [
    *[((4,), op, attrs) for op, attrs in UNCONVERTIBLE.items() if op in core.REGISTRY],
])
def test_node_torch_cannot_run_raises_naming_the_node(shape, op, attrs):
    net = Network.make("odd", {"x": shape}, [N("odd_node", op, "x" if op != "opaque" else (), **attrs)])
    core.analyze(net)                                  # the engine accepts it
    for convert in (to_module, to_source):
        with pytest.raises(core.NetworkError) as err:
            convert(net)
        assert err.value.node == "odd_node"


def test_bad_class_name():
    with pytest.raises(core.CalcError):
        to_source(core.load_network("resnet18"), class_name="not a name")
