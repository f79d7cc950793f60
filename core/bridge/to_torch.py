"""IR → PyTorch: a runnable ``nn.Module`` (``to_module``) and readable PyTorch source (``to_source``).

How each node becomes torch is its rule's ``to_torch`` (``core.ops``): a module (an ``nn`` class and its constructor
arguments, ``TorchModule``), a learned tensor (``TorchParam``), or an expression over its inputs (``TorchExpr``:
add, concat, reshape, matmul, …). This module is the machinery around them: ``to_module`` instantiates the modules and
evaluates the same forward expressions that ``to_source`` prints, so the two cannot drift apart.

Semantics follow the engine (``core.ops``), where every shape is per sample and the batch stays dim 0:

* ``reshape`` keeps the batch: ``x.reshape(x.shape[0], *shape)``;
* ``parameter`` is an ``nn.Parameter`` of shape ``[1, *shape]`` (torchvision's class token / position embedding
  layout), expanded over the batch, so its per-sample shape is ``shape``;
* ``matmul`` and ``sdpa`` broadcast the per-sample dims: an input with fewer dims gets singleton dims inserted after
  the batch (``torch.matmul`` alone would align the batch of one input with a per-sample dim of the other);
* in-place activations stay in place (``nn.ReLU(inplace=True)``); an in-place add or multiply (``out += x``) is
  written out of place, with the same numbers;
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
from functools import lru_cache
from typing import Any, Callable, NamedTuple, Union

from ..errors import CalcError
from ..graph import Compiled, NodeInfo, compile_network
from ..ir import Network
from ..registry import TorchExpr, TorchModule, TorchParam, cannot_convert

__all__ = ["to_module", "to_source"]


def _torch():
    import torch

    return torch


_Spec = Union[TorchModule, TorchParam, TorchExpr]


def _forward_expr(spec: _Spec, own: str, batch: str, xs: list[str]) -> str:
    """The node's forward as an expression; ``own`` names its module or parameter, ``batch`` the batch size."""
    if isinstance(spec, TorchModule):
        return spec.call.format(own=own, args=", ".join(xs))
    if isinstance(spec, TorchParam):
        return f"{own}.expand({batch}, {', '.join(map(str, spec.shape))})"
    return spec.code


def _module_class(spec: TorchModule):
    import importlib

    return getattr(importlib.import_module(spec.origin), spec.cls)


def _construct(spec: TorchModule | TorchParam):
    torch = _torch()
    if isinstance(spec, TorchParam):
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
        spec = n.rule.to_torch(n, input_names(n))
        live = n.name in read
        if live and isinstance(spec, TorchParam) and spec.stored is not None:
            raise cannot_convert(n, f"the IR derives this tensor from {spec.stored:,} stored elements (numel) "
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
            owner, attr = tree.add(n.name, _construct(spec)) if not isinstance(spec, TorchExpr) else (None, "")
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


def _module_source(spec: TorchModule) -> str:
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


def _init_source(attr: str, spec: TorchModule | TorchParam) -> str:
    """The ``__init__`` line that creates a node's module, parameter or buffer."""
    if isinstance(spec, TorchModule):
        return f"self.{attr} = {_module_source(spec)}"
    dims = (spec.stored,) if spec.stored is not None else (1, *spec.shape)
    zeros = f"torch.zeros({', '.join(map(str, dims))})"
    if spec.buffer:
        return f"self.register_buffer({attr!r}, {zeros})"
    return f"self.{attr} = nn.Parameter({zeros}{'' if spec.trainable else ', requires_grad=False'})"


def _imports(specs, uses_f: bool) -> list[str]:
    other = sorted({f"from {s.origin} import {s.cls}" for s in specs
                    if isinstance(s, TorchModule) and s.origin != "torch.nn"})
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
        if n.inputs != (prev,) or not isinstance(spec, TorchModule) or spec.call != TorchModule.call:
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
        if not isinstance(spec, TorchExpr):
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
