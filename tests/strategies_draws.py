"""What the fuzz cases of ``strategies`` are drawn from: sources of choices (``Draw``, seeded or Hypothesis's),
hostile values, attribute values from each ``Attr``'s kind, networks built from the op registry (valid and invalid)
and sequential ones, mutations of built-in networks' JSON, and the Python source that reproduces a value, a network
or a mutation (``lit``, ``net_code``, ``PREAMBLE``). ``strategies`` imports all of it, so that its importers see one
module.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache
from typing import Any, Callable

from hypothesis import strategies as st

import core
from core.errors import NetworkError
from core.ir import Network, Node
from core.registry import REGISTRY, REQUIRED, Attr

# -- sources of choices ------------------------------------------------------------------------------------------


class Draw:
    """What a generator may ask for. ``chance(p)`` is False when shrunk, so Hypothesis shrinks towards the
    ordinary (non-hostile) branch."""

    def int(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def pick(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, p: float) -> bool:
        return self.int(0, 999) >= 1000 - int(p * 1000)

    def float(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.int(0, 10 ** 6) / 10 ** 6


class RandomDraw(Draw):
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class HypothesisDraw(Draw):
    def __init__(self, draw: Callable):
        self.draw = draw

    def int(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


# -- hostile values ------------------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


def deep(depth: int, leaf: Any = 1) -> list:
    """A list nested ``depth`` deep, built without recursion."""
    v: Any = leaf
    for _ in range(depth):
        v = [v]
    return v


HOSTILE_JSON: tuple = (
    None, True, False, 0, -1, -7, 2 ** 31, 2 ** 63, -(2 ** 63), 2 ** 24 + 1, 10 ** 400, -(10 ** 400), 0.5, -0.0,
    1e308, 5e-324, -5e-324, NAN, INF, -INF, "", "3", "same", "valid", "x" * 300, "☃\u0000", [], [[]], [1, 2, 3],
    [1.5, 2], [None, None], [[1, 2], [3, 4]], [0, 0], [-1, -1], {}, {"h": 3}, [3, {"w": 3}],
)
HOSTILE_PY: tuple = (b"3", 1 + 2j, (1, 2), {1, 2}, object)     # through the Python API only


def hostile(d: Draw, python: bool = False) -> Any:
    """A value nothing should accept blindly: wrong types, huge integers, NaN/inf, empty and deeply nested lists."""
    r = d.int(0, 19)
    if r == 0:
        return deep(d.pick((4, 50, 2000)))
    if r == 1 and python:
        return d.pick(HOSTILE_PY)
    if r == 2:
        return 10 ** d.int(20, 5000)
    return d.pick(HOSTILE_JSON)


# -- attribute values from each Attr's kind ------------------------------------------------------------------------

EQUATIONS = ("ij,jk->ik", "bchw->bhwc", "bij,bjk->bik", "i,i->", "ii->i", "...ij->...ji", "bhwc,cd->bhwd", "a->",
             "ab", "->", "a,b,c->abc", "", "ij,jk", "IJ->JI", "i j->j i")


def kind_value(d: Draw, a: Attr, rank: int = 4) -> Any:
    """A value of the attribute's kind, in a small plausible range (valid for the kind, not always for the shapes)."""
    k = a.kind
    if k.startswith("opt_") and d.chance(0.3):
        return None
    if k in ("int",):
        return d.int(-rank, rank)
    if k in ("pos", "opt_pos"):
        return d.int(1, 8)
    if k in ("nonneg", "opt_nonneg"):
        return d.int(0, 6)
    if k in ("pair", "opt_pair_stride"):
        return d.int(1, 5) if d.chance(0.5) else [d.int(1, 5), d.int(1, 5)]
    if k == "pair0":
        return d.int(0, 3) if d.chance(0.5) else [d.int(0, 3), d.int(0, 3)]
    if k == "padding":
        return d.pick(("same", "valid")) if d.chance(0.2) else kind_value(d, Attr(a.name, "pair0"))
    if k in ("bool", "opt_bool"):
        return d.chance(0.5)
    if k in ("float", "opt_float"):
        return d.pick((1e-5, 0.1, 0.5, 1.0, 2.0, -1.0, 0.0, d.float(-3, 3)))
    if k == "prob":
        return d.float(0, 1)
    if k == "ints":
        if a.name == "dims" and d.chance(0.6):               # permute: a permutation of the full rank
            dims = list(range(rank))
            random.Random(d.int(0, 10 ** 6)).shuffle(dims)
            return dims
        if a.name == "shape" and d.chance(0.5):
            return [-1] if d.chance(0.5) else [d.int(1, 8), -1]
        return [d.int(-rank, 8) for _ in range(d.int(0, 4))]
    if k == "opt_pair":
        return d.int(1, 7) if d.chance(0.5) else [d.pick((None, d.int(1, 7))), d.pick((None, d.int(1, 7)))]
    if k == "choice":
        return d.pick(a.choices)
    if k == "text" and a.name == "equation":
        return d.pick(EQUATIONS)
    if k == "text":
        return d.pick(("?", "torch.foo", "x"))
    if k == "opt_size":
        return d.pick((None, d.int(1, 20), [d.int(1, 20), d.int(1, 20)], [d.int(1, 9)]))
    if k == "opt_scale":
        return d.pick((None, d.float(0.1, 4), 2, [2.0, 0.5], [d.int(1, 3), d.int(1, 3)]))
    if k == "nonneg_float":
        return d.pick((1e-5, 1e-3, 0.0, 0.1, d.float(0, 1)))
    if k == "any":
        if a.name == "equation":
            return d.pick(EQUATIONS)
        if a.name == "size":
            return d.pick((None, d.int(1, 20), [d.int(1, 20), d.int(1, 20)], [d.int(1, 9)]))
        if a.name == "scale_factor":
            return d.pick((None, d.float(0.1, 4), 2, [2.0, 0.5], [d.int(1, 3), d.int(1, 3)]))
        if a.name == "target":
            return d.pick(("?", "torch.foo", "x"))
        return d.pick((None, 1, "x", [1, 2]))
    return hostile(d)


def attr_value(d: Draw, a: Attr, rank: int, python: bool) -> Any:
    return hostile(d, python) if d.chance(0.12) else kind_value(d, a, rank)


# -- networks built from the registry (valid and invalid) ----------------------------------------------------------

OPS = tuple(sorted(REGISTRY))


def input_shape(d: Draw) -> list:
    if d.chance(0.05):
        return d.pick(([], [0, 4, 4], [-1, 3], [10 ** 400], [2 ** 24 + 1, 2], [3, 2 ** 40, 2 ** 40], [1] * 40))
    rank = d.pick((1, 2, 3, 3, 3, 4))
    return [d.int(1, 12) for _ in range(rank)]


def registry_spec(d: Draw, python: bool = True) -> tuple:
    """1–6 nodes with ops drawn from ``REGISTRY`` and attributes from each ``Attr``'s kind (sometimes hostile),
    inputs drawn from what came before (sometimes a name that does not exist), as ``(name, inputs, [(node, op,
    inputs, attrs)], outputs)``: ``build(spec)`` makes the Network (which may itself raise, e.g. on a deeply
    nested value)."""
    inputs = {"x": input_shape(d)}
    if d.chance(0.15):
        inputs["y"] = input_shape(d)
    names = list(inputs)
    nodes = []
    for i in range(d.int(1, 6)):
        op = d.pick(OPS) if not d.chance(0.03) else d.pick(("conv", "Conv2d", "", "relu ", "__class__"))
        rule = REGISTRY.get(op)
        lo, hi = rule.arity if rule else (1, 1)
        count = d.int(lo, hi if hi is not None else lo + 2)
        ins = [d.pick(names) for _ in range(count)]
        if d.chance(0.04):
            ins.append(d.pick(("nope", f"n{i}", "")))
        rank = len(inputs["x"]) + 1
        attrs = {}
        for a in rule.attrs if rule else ():
            if a.default is not REQUIRED and d.chance(0.5):
                continue
            if a.default is REQUIRED and d.chance(0.03):
                continue
            attrs[a.name] = attr_value(d, a, rank, python)
        if d.chance(0.04):
            attrs[d.pick(("bogus", "kernel", "Out_channels"))] = 1
        name = f"n{i}" if not d.chance(0.03) else d.pick(names + ["", "x"])
        nodes.append((name, op, ins, attrs))
        names.append(name)
    outputs = [] if not d.chance(0.08) else [d.pick(names + ["ghost"])]
    return ("fuzz", inputs, nodes, outputs)


def build(spec: tuple) -> Network:
    name, inputs, nodes, outputs = spec
    return Network.make(name, {k: tuple(v) for k, v in inputs.items()},
                        [Node.make(n, op, ins, **attrs) for n, op, ins, attrs in nodes], outputs)


def spec_of(net: Network) -> tuple:
    return (net.name, {k: list(v) for k, v in net.inputs}, [(n.name, n.op, list(n.inputs), dict(n.attrs))
                                                           for n in net.nodes], list(net.outputs))


def registry_network(d: Draw) -> Network:
    """A registry network whose values a Network holds (``Node.make`` refuses a list nested deeper than
    ``core.ir.MAX_NESTING``, with a NetworkError: the cases under test are what a network then does)."""
    while True:
        try:
            return build(registry_spec(d))
        except NetworkError:
            continue


def _conv_like(d: Draw, name: str, prev: str, c: int) -> tuple[Node, int]:
    out = d.int(1, 8)
    groups = d.pick((1, 1, 1, c if out % c == 0 else 1, d.int(1, 3)))
    pad = d.pick((0, 1, 2, "same", "valid", [0, 1])) if d.chance(0.3) else d.int(0, 2)
    return Node.make(name, "conv2d", prev, out_channels=out, kernel_size=d.pick((1, 2, 3, [1, 3], 5)),
                     stride=d.pick((1, 1, 2, [1, 2], 3)), padding=pad, dilation=d.pick((1, 1, 2)), groups=groups,
                     bias=d.chance(0.5)), out


def sequential_network(d: Draw) -> Network:
    """A chain of conv / pool / batch_norm / activations / dropout, then (often) flatten and linear layers: the
    networks the torch spot-check builds. Sizes are drawn near the valid range, so some are rejected."""
    c0, h, w = d.int(1, 4), d.int(1, 20), d.int(1, 20)
    c, nodes, prev, flat = c0, [], "x", False
    for i in range(d.int(1, 8)):
        name = f"l{i}"
        kind = d.pick(("conv", "conv", "pool", "bn", "act", "act", "drop", "adapt", "flatten", "linear"))
        if flat and kind not in ("act", "drop", "linear", "bn"):
            kind = "linear"
        if kind == "conv":
            node, c = _conv_like(d, name, prev, c)
        elif kind == "pool":
            op = d.pick(("max_pool2d", "avg_pool2d"))
            k = d.pick((1, 2, 3, [2, 1]))
            extra = {"dilation": d.pick((1, 2))} if op == "max_pool2d" and d.chance(0.3) else {}
            if op == "avg_pool2d" and d.chance(0.3):
                extra["count_include_pad"] = d.chance(0.5)
            node = Node.make(name, op, prev, kernel_size=k, stride=d.pick((None, 1, 2, [2, 1])),
                             padding=d.pick((0, 0, 1)), ceil_mode=d.chance(0.3), **extra)
        elif kind == "bn":
            node = (Node.make(name, "batch_norm", prev, affine=d.chance(0.8)) if not flat or d.chance(0.5)
                    else Node.make(name, "layer_norm", prev))
        elif kind == "act":
            node = Node.make(name, d.pick(("relu", "relu6", "silu", "gelu", "sigmoid", "tanh", "hardswish",
                                           "hardsigmoid", "identity")), prev)
        elif kind == "drop":
            node = Node.make(name, "dropout", prev, p=d.pick((0.0, 0.1, 0.5)))
        elif kind == "adapt":
            node = Node.make(name, d.pick(("adaptive_avg_pool2d", "adaptive_max_pool2d")), prev,
                             output_size=d.pick((1, 2, [1, 2], 3)))
        elif kind == "flatten":
            node, flat = Node.make(name, "flatten", prev), True
        else:
            if not flat:
                nodes.append(Node.make(f"{name}_flat", "flatten", prev))
                prev, flat = f"{name}_flat", True
            node = Node.make(name, "linear", prev, out_features=d.int(1, 12), bias=d.chance(0.7))
        nodes.append(node)
        prev = node.name
    return Network.make("seq", {"x": (c0, h, w)}, nodes)


def degenerate_network(d: Draw) -> Network:
    """One layer that does no arithmetic (zero FLOPs, zero time): identity, flatten, dropout, reshape."""
    op = d.pick(("identity", "flatten", "dropout", "reshape"))
    attrs = {"shape": [-1]} if op == "reshape" else {}
    return Network.make("degenerate", {"x": tuple(input_shape(d))}, [Node.make("only", op, "x", **attrs)])


# -- reproducers: Python source for values, networks and documents ---------------------------------------------------

def lit(v: Any) -> str:
    """Python source for a value (integers too long for ``repr`` as hex, NaN/inf as names the preamble defines)."""
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(v) if v.bit_length() < 1000 else f"int({hex(v)!r}, 16)"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
    if isinstance(v, list):
        if v and _depth(v) > 20:
            return f"deep({_depth(v)}, {lit(_leaf(v))})"
        return "[" + ", ".join(lit(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + "".join(lit(x) + ", " for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{lit(k)}: {lit(x)}" for k, x in v.items()) + "}"
    if isinstance(v, Network):
        return net_code(v)
    return repr(v)


def _depth(v: Any) -> int:
    n = 0
    while isinstance(v, list) and len(v) == 1:
        v, n = v[0], n + 1
    return n


def _leaf(v: Any) -> Any:
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    return v


def net_code(net: Network | tuple) -> str:
    """``Network.make(...)`` source for a network or a ``registry_spec``."""
    name, inputs, nodes, outputs = spec_of(net) if isinstance(net, Network) else net
    text = ", ".join(f"Node.make({n!r}, {op!r}, {ins!r}" + (f", **{lit(attrs)}" if attrs else "") + ")"
                     for n, op, ins, attrs in nodes)
    return f"Network.make({name!r}, {lit({k: tuple(v) for k, v in inputs.items()})}, [{text}], {outputs!r})"


PREAMBLE = ("import copy, json\nimport core\nfrom core import Network, Node\nfrom core.devices import load_devices, "
            "parse_devices\nfrom tests.strategies import deep\nnan, inf = float('nan'), float('inf')\n")


# -- mutated built-in networks (JSON) -------------------------------------------------------------------------------

SMALL_ZOO = ("mnist_cnn", "alexnet", "resnet18", "squeezenet1_1", "mobilenet_v3_small", "mnasnet0_5", "vgg11",
             "googlenet", "vit_b_32", "vit_b_16", "swin_t", "convnext_tiny", "efficientnet_b0", "shufflenet_v2_x0_5",
             "regnet_x_400mf", "inception_v3", "mobilenet_v2", "resnet50")


def zoo_name(d: Draw, small: bool = False) -> str:
    if small:
        return d.pick(SMALL_ZOO[:8])
    return d.pick(SMALL_ZOO) if not d.chance(0.15) else d.pick(core.builtin_names())


@lru_cache(maxsize=None)
def zoo_doc(name: str) -> dict:
    return core.load_network(name).to_dict()


def _apply(doc: Any, mutation: tuple) -> Any:
    """A new document with one mutation applied; containers are copied along its path only, so the cached
    built-in document is never changed."""
    action, path, arg = mutation
    root = _copy(doc)
    parent = root
    for key in path[:-1]:
        parent[key] = _copy(parent[key])
        parent = parent[key]
    key = path[-1]
    if action == "set":
        parent[key] = arg
    elif action == "del":
        del parent[key]
    elif action == "insert":
        parent.insert(key, arg)
    elif action == "move":
        parent.insert(arg, parent.pop(key))
    return root


def _copy(v: Any) -> Any:
    return dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v


def _mutation_code(mutation: tuple) -> str:
    action, path, arg = mutation
    where = "doc" + "".join(f"[{k!r}]" for k in path[:-1])
    key = path[-1]
    if action == "set":
        return f"{where}[{key!r}] = {lit(arg)}"
    if action == "del":
        return f"del {where}[{key!r}]"
    if action == "insert":
        return f"{where}.insert({key!r}, {lit(arg)})"
    return f"{where}.insert({arg!r}, {where}.pop({key!r}))"


def _mutation(d: Draw, doc: dict) -> tuple:
    nodes = doc.get("nodes") if isinstance(doc.get("nodes"), list) else []
    r = d.int(0, 99)
    if r < 45 and nodes:                                            # an attribute value
        i = d.int(0, len(nodes) - 1)
        node = nodes[i] if isinstance(nodes[i], dict) else {}
        rule = REGISTRY.get(node.get("op")) if isinstance(node.get("op"), str) else None
        attrs = list(rule.attrs) if rule and rule.attrs else [Attr("bogus", "any")]
        a = d.pick(attrs)
        value = kind_value(d, a) if d.chance(0.5) else hostile(d)
        if not isinstance(node.get("attrs"), dict):
            return ("set", ("nodes", i, "attrs"), {a.name: value})
        if d.chance(0.1) and node["attrs"]:
            return ("del", ("nodes", i, "attrs", d.pick(sorted(node["attrs"]))), None)
        return ("set", ("nodes", i, "attrs", a.name), value)
    if r < 60 and nodes:                                            # a node's name, op or inputs
        i = d.int(0, len(nodes) - 1)
        if not isinstance(nodes[i], dict):
            return ("set", ("nodes", i), hostile(d))
        key = d.pick(("name", "op", "inputs", "inputs", "attrs"))
        if d.chance(0.1):
            return ("del", ("nodes", i, key), None) if key in nodes[i] else ("set", ("nodes", i), {})
        other = nodes[d.int(0, len(nodes) - 1)]
        other_name = other.get("name") if isinstance(other, dict) else "x"
        values = {"name": (other_name, "", "x", "a.b"), "op": (d.pick(OPS), "conv", "RELU"),
                  "inputs": ([other_name], [], ["missing"], [other_name, other_name]), "attrs": ({}, [], None)}[key]
        ins = nodes[i].get("inputs")
        if key == "inputs" and isinstance(ins, list) and ins and d.chance(0.5):
            return ("set", ("nodes", i, "inputs", d.int(0, len(ins) - 1)), d.pick((other_name, "", 3, None)))
        return ("set", ("nodes", i, key), d.pick(values) if d.chance(0.8) else hostile(d))
    if r < 75 and nodes:                                            # the structure: delete, duplicate, reorder
        i, j = d.int(0, len(nodes) - 1), d.int(0, len(nodes) - 1)
        return d.pick((("del", ("nodes", i), None), ("insert", ("nodes", j), nodes[i]), ("move", ("nodes", i), j)))
    if r < 87:                                                      # the input shape
        ins = doc.get("inputs")
        if isinstance(ins, list) and ins and isinstance(ins[0], dict) and isinstance(ins[0].get("shape"), list) \
                and ins[0]["shape"] and d.chance(0.7):
            k = d.int(0, len(ins[0]["shape"]) - 1)
            return ("set", ("inputs", 0, "shape", k), d.pick((d.int(1, 64), 1, 0, -3, 2 ** 24, 10 ** 30))
                    if d.chance(0.7) else hostile(d))
        return ("set", ("inputs",), d.pick(([], [{"name": "x"}], [{"name": "x", "shape": [3, 32, 32]}] * 2))
                if d.chance(0.5) else hostile(d))
    key = d.pick(("schema", "version", "name", "outputs", "outputs", "description", "nodes", "extra"))
    if key == "outputs" and nodes and isinstance(nodes[0], dict) and d.chance(0.6):
        return ("set", ("outputs",), [n.get("name") if isinstance(n, dict) else "?" for n in nodes[:d.int(0, 3)]])
    return ("set", (key,), hostile(d))

