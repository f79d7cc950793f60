"""IR → PyTorch: a runnable ``nn.Module`` (``to_module``) and readable PyTorch source (``to_source``).

Both are driven by one table, ``_CONVERTERS``, mapping each op kind to a function that says how a compiled node
becomes torch: a module (an ``nn`` class and its constructor arguments), a learned tensor (``parameter``), or an
expression over its inputs (functional ops: add, concat, reshape, matmul, …). ``to_module`` instantiates the modules
and evaluates the same forward expressions that ``to_source`` prints, so the two cannot drift apart.

Semantics follow the engine (``core.ops``), where every shape is per sample and the batch stays dim 0:

* ``reshape`` keeps the batch: ``x.reshape(x.shape[0], *shape)``;
* ``parameter`` is an ``nn.Parameter`` of shape ``[1, *shape]`` (torchvision's class token / position embedding
  layout), expanded over the batch, so its per-sample shape is ``shape``;
* ``matmul`` and ``sdpa`` broadcast the per-sample dims: an input with fewer dims gets singleton dims inserted after
  the batch (``torch.matmul`` alone would align the batch of one input with a per-sample dim of the other);
* a node whose output nothing reads is built (its parameters count) but not run.

What the IR does not describe cannot be built and raises ``NetworkError`` naming the node: an ``opaque`` op, a
tensor derived from a table without saying how (``parameter`` with ``numel``), and the few layouts torch's modules
refuse (BatchNorm beyond 5-d, ChannelShuffle on [N, C]).

``to_module`` registers submodules hierarchically by the node name split on ".", so a network with torchvision's
layer names (``layer1.0.conv1``, ``features.0``, ``fc``; see ``core.zoo``) has torchvision's ``state_dict`` keys.

torch is imported inside functions only: ``import core`` stays torch-free.
"""

from __future__ import annotations

import keyword
import re
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import Any, Callable, NamedTuple, Union

from ..errors import CalcError, NetworkError
from ..graph import Compiled, NodeInfo, compile_network
from ..ir import Network

__all__ = ["to_module", "to_source"]


def _torch():
    import torch

    return torch


# == how each op becomes torch ====================================================================================

@dataclass(frozen=True)
class _Module:
    """``<origin>.<cls>(**kwargs)``, called as ``call`` says (by default on the node's inputs)."""

    cls: str
    kwargs: dict
    call: str = "{own}({args})"
    origin: str = "torch.nn"


@dataclass(frozen=True)
class _Param:
    """A tensor ``torch.zeros(1, *shape)`` expanded over the batch: an ``nn.Parameter``, or a buffer. ``stored``
    is set when the IR derives the tensor from that many stored elements in a way it does not record: then only the
    stored elements are built, and no node may read the tensor (see ``_plan``)."""

    shape: tuple[int, ...]
    trainable: bool
    buffer: bool = False
    stored: int | None = None


@dataclass(frozen=True)
class _Expr:
    """A functional node: a Python expression over the input variables (``torch`` and ``F`` in scope)."""

    code: str


_Spec = Union[_Module, _Param, _Expr]
_Converter = Callable[[NodeInfo, list[str]], _Spec]   # (node, names of its input variables) → how to build it


def _compact(v: Any) -> Any:
    """(3, 3) → 3 for pair-valued arguments (torch reads an int as the square pair), for readable source."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] == v[1] and v[0] is not None:
        return v[0]
    return v


def _pick(n: NodeInfo, *names: str, **extra: Any) -> dict:
    """Constructor kwargs: ``extra`` first (derived from shapes), then the listed attributes, pairs compacted."""
    return {**extra, **{k: _compact(n.attrs[k]) for k in names}}


def _unsupported(n: NodeInfo, reason: str) -> NetworkError:
    return NetworkError(f"cannot be converted to PyTorch: {reason}", node=n.name, field="op", value=n.op)


def _conv2d(n, xs):
    return _Module("Conv2d", _pick(n, "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias",
                                   in_channels=n.in_shapes[0][0]))


def _conv_transpose2d(n, xs):
    return _Module("ConvTranspose2d", _pick(n, "out_channels", "kernel_size", "stride", "padding", "output_padding",
                                            "groups", "bias", "dilation", in_channels=n.in_shapes[0][0]))


def _linear(n, xs):
    return _Module("Linear", _pick(n, "out_features", "bias", in_features=n.in_shapes[0][-1]))


def _max_pool2d(n, xs):
    return _Module("MaxPool2d", _pick(n, "kernel_size", "stride", "padding", "dilation", "ceil_mode"))


def _avg_pool2d(n, xs):
    return _Module("AvgPool2d", _pick(n, "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                                      "divisor_override"))


def _adaptive(cls: str) -> _Converter:
    return lambda n, xs: _Module(cls, _pick(n, "output_size"))


_BATCH_NORM_BY_RANK = {1: "BatchNorm1d", 2: "BatchNorm1d", 3: "BatchNorm2d", 4: "BatchNorm3d"}   # per-sample rank


def _batch_norm(n, xs):
    rank = len(n.in_shapes[0])
    if rank not in _BATCH_NORM_BY_RANK:
        raise _unsupported(n, f"torch has BatchNorm1d/2d/3d for 2- to 5-d inputs, this one is {rank + 1}-d")
    return _Module(_BATCH_NORM_BY_RANK[rank], _pick(n, "eps", "momentum", "affine", "track_running_stats",
                                                     num_features=n.in_shapes[0][0]))


def _layer_norm(n, xs):
    k = n.attrs["normalized_ndim"]
    trailing = n.in_shapes[0][-k:]
    return _Module("LayerNorm", _pick(n, "eps", "elementwise_affine", "bias",
                                      normalized_shape=trailing[0] if k == 1 else trailing))


def _group_norm(n, xs):
    return _Module("GroupNorm", _pick(n, "num_groups", "eps", "affine", num_channels=n.in_shapes[0][0]))


def _plain(cls: str, *names: str) -> _Converter:
    """A module built from the node's attributes alone (activations, dropout, softmax, …)."""
    return lambda n, xs: _Module(cls, _pick(n, *names))


def _channel_shuffle(n, xs):
    if len(n.in_shapes[0]) < 2:
        raise _unsupported(n, "nn.ChannelShuffle needs an input of 3 or more dims [N, C, …], this one is 2-d")
    return _Module("ChannelShuffle", _pick(n, "groups"))


def _interpolate(n, xs):
    return _Module("Upsample", _pick(n, "size", "scale_factor", "mode", "align_corners"))


def _parameter(n, xs):
    stored = n.attrs.get("numel")
    return _Param(n.out_shape, n.attrs["trainable"], n.attrs.get("buffer", False),
                  stored if stored is not None and stored != prod(n.out_shape) else None)


def _elementwise(symbol: str) -> _Converter:
    def convert(n, xs):
        terms = list(xs) + ([repr(n.attrs["scalar"])] if n.attrs["scalar"] is not None else [])
        return _Expr(f" {symbol} ".join(terms))
    return convert


def _concat(n, xs):
    return _Expr(f"torch.cat([{', '.join(xs)}], dim={n.attrs['dim']})")


def _reshape(n, xs):
    return _Expr(f"{xs[0]}.reshape({xs[0]}.shape[0], {', '.join(map(str, n.out_shape))})")


def _permute(n, xs):
    return _Expr(f"{xs[0]}.permute({', '.join(map(str, n.attrs['dims']))})")


def _transpose(n, xs):
    return _Expr(f"{xs[0]}.transpose({n.attrs['dim0']}, {n.attrs['dim1']})")


def _same_rank(n: NodeInfo, xs: list[str]) -> list[str]:
    """Insert singleton dims after the batch so every input has the same rank (the engine broadcasts per sample)."""
    rank = max(len(s) for s in n.in_shapes)
    return [x if len(s) == rank else f"{x}[:, {', '.join(['None'] * (rank - len(s)))}]"
            for x, s in zip(xs, n.in_shapes)]


def _matmul(n, xs):
    return _Expr(f"torch.matmul({', '.join(_same_rank(n, xs))})")


def _sdpa(n, xs):
    causal = ", is_causal=True" if n.attrs["is_causal"] else ""
    return _Expr(f"F.scaled_dot_product_attention({', '.join(_same_rank(n, xs))}{causal})")


def _full_dim(n: NodeInfo, dim: int) -> int:
    """A dim counting the batch as 0, made non-negative."""
    return dim + len(n.in_shapes[0]) + 1 if dim < 0 else dim


def _mean(n, xs):
    dims = tuple(_full_dim(n, d) for d in n.attrs["dim"])
    keep = ", keepdim=True" if n.attrs["keepdim"] else ""
    return _Expr(f"{xs[0]}.mean(dim={dims!r}{keep})")


def _slice(n, xs):
    d, start, end, step = _full_dim(n, n.attrs["dim"]), n.attrs["start"], n.attrs["end"], n.attrs["step"]
    if n.attrs["select"]:
        return _Expr(f"{xs[0]}.select({d}, {start})")
    size = n.in_shapes[0][d - 1]
    text = f"{start or ''}:{'' if end >= size else end}" + (f":{step}" if step != 1 else "")
    return _Expr(f"{xs[0]}[{':, ' * d}{text}]")


def _pad(n, xs):
    return _Expr(f"F.pad({xs[0]}, {n.attrs['pad']!r})")


def _roll(n, xs):
    return _Expr(f"torch.roll({xs[0]}, shifts={n.attrs['shifts']!r}, dims={n.attrs['dims']!r})")


def _einsum(n, xs):
    return _Expr(f"torch.einsum({n.attrs['equation']!r}, {', '.join(xs)})")


def _multihead_attention(n, xs):
    e = n.attrs["embed_dim"]
    kdim, vdim = n.in_shapes[1][-1], n.in_shapes[2][-1]
    other = {k: v for k, v in (("kdim", kdim), ("vdim", vdim)) if v != e}
    return _Module("MultiheadAttention", _pick(n, "embed_dim", "num_heads", "bias", **other, batch_first=True),
                   call="{own}({args}, need_weights=False)[0]")


def _window_attention(n, xs):
    """torchvision's Swin window attention, the version told apart by its extra parameters: v1 has a
    relative-position bias table, (2·w_h − 1)·(2·w_w − 1)·heads; v2 a continuous-position MLP 2 → 512 → heads
    (2·512 + 512 + 512·heads) and a logit scale per head."""
    (wh, ww), heads, extra = n.attrs["window_size"], n.attrs["num_heads"], n.attrs["extra_params"]
    versions = {(2 * wh - 1) * (2 * ww - 1) * heads: "ShiftedWindowAttention",
                2 * 512 + 512 + 512 * heads + heads: "ShiftedWindowAttentionV2"}
    if extra not in versions:
        raise _unsupported(n, f"extra_params {extra:,} match neither torchvision's Swin v1 window attention "
                              f"({min(versions):,}) nor v2 ({max(versions):,})")
    kwargs = {"dim": n.in_shapes[0][-1], "window_size": [wh, ww], "shift_size": list(n.attrs["shift_size"]),
              "num_heads": heads, "qkv_bias": n.attrs["qkv_bias"], "proj_bias": n.attrs["proj_bias"]}
    return _Module(versions[extra], kwargs, origin="torchvision.models.swin_transformer")


def _opaque(n, xs):
    raise _unsupported(n, f"the engine has no rule for {n.attrs.get('target', '?')}, so there is nothing to build")


_CONVERTERS: dict[str, _Converter] = {
    "conv2d": _conv2d,
    "conv_transpose2d": _conv_transpose2d,
    "linear": _linear,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "adaptive_avg_pool2d": _adaptive("AdaptiveAvgPool2d"),
    "adaptive_max_pool2d": _adaptive("AdaptiveMaxPool2d"),
    "batch_norm": _batch_norm,
    "layer_norm": _layer_norm,
    "group_norm": _group_norm,
    "relu": _plain("ReLU"),
    "relu6": _plain("ReLU6"),
    "sigmoid": _plain("Sigmoid"),
    "tanh": _plain("Tanh"),
    "gelu": _plain("GELU", "approximate"),
    "silu": _plain("SiLU"),
    "hardswish": _plain("Hardswish"),
    "hardsigmoid": _plain("Hardsigmoid"),
    "softmax": _plain("Softmax", "dim"),
    "log_softmax": _plain("LogSoftmax", "dim"),
    "dropout": _plain("Dropout", "p"),
    "identity": _plain("Identity"),
    "flatten": _plain("Flatten", "start_dim", "end_dim"),
    "channel_shuffle": _channel_shuffle,
    "interpolate": _interpolate,
    "parameter": _parameter,
    "add": _elementwise("+"),
    "mul": _elementwise("*"),
    "sub": _elementwise("-"),
    "div": _elementwise("/"),
    "concat": _concat,
    "reshape": _reshape,
    "permute": _permute,
    "transpose": _transpose,
    "matmul": _matmul,
    "sdpa": _sdpa,
    "mean": _mean,
    "slice": _slice,
    "pad": _pad,
    "roll": _roll,
    "einsum": _einsum,
    "multihead_attention": _multihead_attention,
    "window_attention": _window_attention,
    "opaque": _opaque,
}


def _spec(n: NodeInfo, xs: list[str]) -> _Spec:
    convert = _CONVERTERS.get(n.op)
    if convert is None:
        raise _unsupported(n, f"no converter for op '{n.op}'")
    return convert(n, xs)


def _forward_expr(spec: _Spec, own: str, batch: str, xs: list[str]) -> str:
    """The node's forward as an expression; ``own`` names its module or parameter, ``batch`` the batch size."""
    if isinstance(spec, _Module):
        return spec.call.format(own=own, args=", ".join(xs))
    if isinstance(spec, _Param):
        return f"{own}.expand({batch}, {', '.join(map(str, spec.shape))})"
    return spec.code


def _module_class(spec: _Module):
    import importlib

    return getattr(importlib.import_module(spec.origin), spec.cls)


def _construct(spec: _Module | _Param):
    torch = _torch()
    if isinstance(spec, _Param):
        value = torch.zeros(spec.stored) if spec.stored is not None else torch.zeros(1, *spec.shape)
        return value if spec.buffer else torch.nn.Parameter(value, requires_grad=spec.trainable)
    return _module_class(spec)(**spec.kwargs)


class _Planned(NamedTuple):
    node: NodeInfo
    spec: _Spec
    live: bool          # some node or the network's output reads it; a dead node is built but not run


def _plan(comp: Compiled, input_names: Callable[[NodeInfo], list[str]]) -> list[_Planned]:
    """Every node with how it becomes torch, in topological order; raises ``NetworkError`` at the first node that
    cannot be built."""
    read = {s for n in comp.nodes for s in n.inputs} | set(comp.outputs)
    plan = []
    for n in comp.nodes:
        spec = _spec(n, input_names(n))
        live = n.name in read
        if live and isinstance(spec, _Param) and spec.stored is not None:
            raise _unsupported(n, f"the IR derives this tensor from {spec.stored:,} stored elements (numel) "
                                  "without saying how")
        plan.append(_Planned(n, spec, live))
    return plan


# == to_module ====================================================================================================

class _Step(NamedTuple):
    name: str
    run: Callable                 # run(own, batch, *inputs) → output
    inputs: tuple[str, ...]
    owner: Any                    # the nn.Module holding the node's module or parameter (None for functional nodes)
    attr: str                     # its attribute name on ``owner``
    frees: tuple[str, ...]        # values no later step reads: dropped after this step


@lru_cache(maxsize=None)
def _compile_expr(code: str, arity: int) -> Callable:
    torch = _torch()
    args = ", ".join(f"x{i}" for i in range(arity))
    return eval(f"lambda own, batch{', ' if args else ''}{args}: {code}",   # noqa: S307 - code built above
                {"torch": torch, "F": torch.nn.functional})


@lru_cache(maxsize=None)
def _network_module_class():
    nn = _torch().nn

    class IRNetwork(nn.Module):
        """A network built from the cnn-calc IR: ``forward(*inputs)`` runs the nodes in topological order."""

        def __init__(self, network: Network):
            super().__init__()
            self.network_name = network.name
            self.input_names: tuple[str, ...] = tuple(k for k, _ in network.inputs)
            self.output_names: tuple[str, ...] = ()
            self.steps: list[_Step] = []

        def forward(self, *inputs):
            if len(inputs) != len(self.input_names):
                raise TypeError(f"{self.network_name} takes {len(self.input_names)} input(s) "
                                f"({', '.join(self.input_names)}), got {len(inputs)}")
            values = dict(zip(self.input_names, inputs))
            batch = inputs[0].shape[0]
            for step in self.steps:
                own = getattr(step.owner, step.attr) if step.owner is not None else None
                values[step.name] = step.run(own, batch, *(values[s] for s in step.inputs))
                for s in step.frees:
                    del values[s]
            out = tuple(values[o] for o in self.output_names)
            return out[0] if len(out) == 1 else out

        def extra_repr(self) -> str:
            return f"network={self.network_name!r}"

    return IRNetwork


class _Tree:
    """Registers modules and parameters under dotted paths, creating empty ``nn.Module`` containers on the way
    ("layer1.0.conv1" → layer1 → 0 → conv1). A path that cannot be used (a segment that is already a layer, or a
    name taken by ``nn.Module`` itself, such as ``forward``) falls back to a flat name at the root."""

    def __init__(self, root):
        self.root = root
        self.containers = {id(root)}

    @staticmethod
    def _free(parent, name: str) -> bool:
        return bool(name) and not hasattr(parent, name)

    def _parent(self, path: list[str]):
        mod = self.root
        for seg in path:
            child = mod._modules.get(seg)
            if child is None:
                if not self._free(mod, seg):
                    return None
                child = _torch().nn.Module()
                mod.add_module(seg, child)
                self.containers.add(id(child))
            elif id(child) not in self.containers:
                return None                     # a real layer: never hang other layers inside it
            mod = child
        return mod

    def add(self, name: str, obj) -> tuple[Any, str]:
        *path, leaf = name.split(".")
        parent = self._parent(path)
        if parent is None or not self._free(parent, leaf):
            parent, leaf = self.root, _unique(_identifier(name), lambda s: self._free(self.root, s))
        torch = _torch()
        if isinstance(obj, torch.nn.Parameter):
            parent.register_parameter(leaf, obj)
        elif isinstance(obj, torch.Tensor):
            parent.register_buffer(leaf, obj)
        else:
            parent.add_module(leaf, obj)
        return parent, leaf


def to_module(network: Network, device: Any = None):
    """``network`` as a runnable ``torch.nn.Module``: ``forward(*inputs)`` takes one tensor per network input
    (batch first) and returns the output tensor (a tuple if the network has several outputs).

    Parameters are freshly initialised (``parameter`` nodes to zeros). ``device="meta"`` builds without allocating
    memory (for parameter counts and shape checks on large networks). Raises ``NetworkError`` naming the node for
    an invalid network, or for a node torch has no equivalent of."""
    comp = compile_network(network)
    torch = _torch()
    plan = _plan(comp, lambda n: [f"x{j}" for j in range(len(n.inputs))])
    model = _network_module_class()(network)
    tree = _Tree(model)
    last_use = {s: i for i, n in enumerate(comp.nodes) for s in n.inputs}
    keep = set(comp.outputs)
    with torch.device(device) if device is not None else nullcontext():
        for i, (n, spec, live) in enumerate(plan):
            owner, attr = tree.add(n.name, _construct(spec)) if not isinstance(spec, _Expr) else (None, "")
            if not live:
                continue
            xs = [f"x{j}" for j in range(len(n.inputs))]
            frees = tuple(s for s in dict.fromkeys(n.inputs) if last_use[s] == i and s not in keep)
            run = _compile_expr(_forward_expr(spec, "own", "batch", xs), len(xs))
            model.steps.append(_Step(n.name, run, n.inputs, owner, attr, frees))
    model.output_names = tuple(comp.outputs)
    return model


# == to_source ====================================================================================================

_RESERVED = {"self", "torch", "nn", "F", "model"}


def _identifier(name: str) -> str:
    ident = re.sub(r"\W", "_", name) or "_"
    if ident[0].isdigit():
        ident = "_" + ident
    return ident + "_" if keyword.iskeyword(ident) else ident


def _unique(base: str, ok: Callable[[str], bool]) -> str:
    name, k = base, 2
    while not ok(name):
        name, k = f"{base}_{k}", k + 1
    return name


class _Names:
    """Python identifiers for node names: valid, unique, and usable as both a local variable and a module
    attribute (not a keyword, not ``self``/``torch``/``nn``/``F``, not an ``nn.Module`` attribute)."""

    def __init__(self):
        self.taken = set(_RESERVED)
        self.module_attrs = set(dir(_torch().nn.Module())) | {"training"}

    def _ok(self, name: str) -> bool:
        return name not in self.taken and name not in self.module_attrs

    def __call__(self, name: str) -> str:
        ident = _unique(_identifier(name), self._ok)
        self.taken.add(ident)
        return ident


def _module_source(spec: _Module) -> str:
    """``nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)``: required arguments by position, the rest by
    keyword, torch's defaults left out."""
    import inspect

    params = inspect.signature(_module_class(spec).__init__).parameters
    positional, named = [], []
    for key, p in params.items():
        if key not in spec.kwargs:
            continue
        value = spec.kwargs[key]
        if p.default is inspect.Parameter.empty:
            positional.append(repr(value))
        elif not (value == p.default and isinstance(value, bool) == isinstance(p.default, bool)):
            named.append(f"{key}={repr(value)}")
    prefix = "nn." if spec.origin == "torch.nn" else ""
    return f"{prefix}{spec.cls}({', '.join(positional + named)})"


def _init_source(attr: str, spec: _Module | _Param) -> str:
    """The ``__init__`` line that creates a node's module, parameter or buffer."""
    if isinstance(spec, _Module):
        return f"self.{attr} = {_module_source(spec)}"
    dims = (spec.stored,) if spec.stored is not None else (1, *spec.shape)
    zeros = f"torch.zeros({', '.join(map(str, dims))})"
    if spec.buffer:
        return f"self.register_buffer({attr!r}, {zeros})"
    return f"self.{attr} = nn.Parameter({zeros}{'' if spec.trainable else ', requires_grad=False'})"


def _imports(specs, uses_f: bool) -> list[str]:
    other = sorted({f"from {s.origin} import {s.cls}" for s in specs
                    if isinstance(s, _Module) and s.origin != "torch.nn"})
    return ["import torch", *(["import torch.nn.functional as F"] if uses_f else []), "from torch import nn", *other]


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(["N", *map(str, shape)]) + "]"


def _class_name(network: Network) -> str:
    words = re.split(r"[^0-9a-zA-Z]+", network.name)
    name = "".join(w[:1].upper() + w[1:] for w in words if w) or "Network"
    return "Net" + name if name[0].isdigit() else name


def _is_chain(comp: Compiled, plan: list[_Planned]) -> bool:
    """One input, one output, every node a module reading the node before it: an ``nn.Sequential``."""
    if len(comp.network.inputs) != 1 or len(comp.outputs) != 1:
        return False
    prev = comp.network.inputs[0][0]
    for n, spec, _ in plan:
        if n.inputs != (prev,) or not isinstance(spec, _Module) or spec.call != _Module.call:
            return False
        prev = n.name
    return comp.outputs[0] == prev


def _header(comp: Compiled) -> list[str]:
    net = comp.network
    params = comp.trainable + comp.frozen
    lines = [f"# {net.name}" + (f": {net.description}" if net.description else ""),
             f"# Generated by cnn-calc from the network IR; {params:,} parameters."]
    lines += [f"# Input {k}: {_shape_text(s)} (N = batch size)" for k, s in net.inputs]
    return lines


def _example(comp: Compiled, call: str) -> list[str]:
    args = ", ".join(f"torch.randn({', '.join(map(str, (2, *s)))})" for _, s in comp.network.inputs)
    outs = " and ".join(_shape_text(comp.by_name[o].out_shape).replace("N", "2", 1) for o in comp.outputs)
    return ["", f"# Example: {call}({args})  # -> {outs}"]


def _with_comments(codes: list[str], comments: list[str], max_width: int = 64) -> list[str]:
    """Each line of code with its comment, the comments aligned (up to ``max_width``)."""
    width = min(max(len(c) for c in codes), max_width)
    return [f"{c.ljust(width)}  # {note}" if note else c for c, note in zip(codes, comments)]


def _sequential_source(comp: Compiled, plan: list[_Planned]) -> str:
    lines = _header(comp) + _imports([p.spec for p in plan], uses_f=False) + ["", "model = nn.Sequential("]
    codes = [f"    {_module_source(p.spec)}," for p in plan]
    lines += _with_comments(codes, [f"{n.name}: {_shape_text(n.out_shape)}" for n in comp.nodes])
    lines += [")"] + _example(comp, "model")
    return "\n".join(lines) + "\n"


def _class_source(comp: Compiled, class_name: str) -> str:
    names = _Names()
    var = {k: names(k) for k, _ in comp.network.inputs}
    for n in comp.nodes:
        var[n.name] = names(n.name)
    batch = f"{var[comp.network.inputs[0][0]]}.shape[0]"
    plan = _plan(comp, lambda n: [var[s] for s in n.inputs])
    init, init_notes, fwd, fwd_notes = [], [], [], []
    for n, spec, live in plan:
        renamed = var[n.name] != n.name          # the comments then give the node's own name
        if not isinstance(spec, _Expr):
            init.append(f"        {_init_source(var[n.name], spec)}")
            init_notes.append(n.name if renamed else "")
        if live:
            xs = [var[s] for s in n.inputs]
            fwd.append(f"        {var[n.name]} = {_forward_expr(spec, f'self.{var[n.name]}', batch, xs)}")
            fwd_notes.append((f"{n.name}: " if renamed else "") + _shape_text(n.out_shape))
    doc = comp.network.description or comp.network.name
    lines = _header(comp) + _imports([p.spec for p in plan],
                                     uses_f=any(re.search(r"\bF\.", line) for line in fwd))
    lines += ["", "", f"class {class_name}(nn.Module):", f'    """{doc}"""', "",
              "    def __init__(self):", "        super().__init__()"]
    lines += _with_comments(init, init_notes) if init else ["        pass"]
    lines += ["", f"    def forward(self, {', '.join(var[k] for k, _ in comp.network.inputs)}):"]
    lines += _with_comments(fwd, fwd_notes)
    lines += [f"        return {', '.join(var[o] for o in comp.outputs)}", "", "", f"model = {class_name}()"]
    lines += _example(comp, "model")
    return "\n".join(lines) + "\n"


def to_source(network: Network, class_name: str | None = None) -> str:
    """Readable PyTorch code for ``network`` that defines ``model``: an ``nn.Sequential`` with one commented line
    per layer when the network is a chain of modules, otherwise an ``nn.Module`` subclass named ``class_name``
    (default: from the network's name) with submodules named after the nodes and a ``forward`` in topological
    order. The code needs only torch (and torchvision for Swin window attention); ``exec`` it or paste it into a
    notebook."""
    comp = compile_network(network)
    if class_name is not None and (not class_name.isidentifier() or keyword.iskeyword(class_name)
                                   or class_name in _RESERVED):
        raise CalcError("must be a Python identifier", field="class_name", value=class_name)
    plan = _plan(comp, lambda n: ["x"] * len(n.inputs))
    if _is_chain(comp, plan):
        return _sequential_source(comp, plan)
    return _class_source(comp, class_name or _class_name(network))
