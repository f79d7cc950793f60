"""The network IR: an immutable DAG of named nodes plus an input spec, with a versioned JSON form.

Shapes in the IR are *per sample*: the batch dimension N is implicit and always first, so a network is analysed once
and any batch size is a multiplication (see ``core.graph``). Dimension indices in attributes (``flatten.start_dim``,
``concat.dim``, ``softmax.dim``, ``permute.dims``) count the batch as dim 0, exactly as in PyTorch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping

from .errors import NetworkError
from .registry import shown

SCHEMA_VERSION = 1
SCHEMA_NAME = "cnn-calc/network"


MAX_NESTING = 64       # no op takes a list nested deeper; a deeper one is refused before anything recurses on it


def _nesting(value: Any) -> int:
    """How deep lists nest in ``value`` (0 for a scalar), level by level without recursion; stops counting past
    ``MAX_NESTING``."""
    depth, level = 0, [value] if isinstance(value, (list, tuple)) else []
    while level and depth <= MAX_NESTING:
        depth += 1
        level = [x for v in level for x in v if isinstance(x, (list, tuple))]
    return depth


def _freeze(value: Any, node: str | None = None, field: str | None = None) -> Any:
    """Lists become tuples (recursively) so attribute values are hashable and immutable; a value nested deeper than
    ``MAX_NESTING`` is refused (naming the node and field when given)."""
    if not isinstance(value, (list, tuple)):
        return value
    if _nesting(value) > MAX_NESTING:
        raise NetworkError(f"a list nested more than {MAX_NESTING} deep is not an attribute value", node=node,
                           field=field)
    return _freeze_nested(value)


def _freeze_nested(value: Any) -> Any:
    return tuple(_freeze_nested(v) for v in value) if isinstance(value, (list, tuple)) else value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value



def unique_name(base: str, taken: set[str], counters: dict[str, int] | None = None) -> str:
    """``base``, or ``base_1``, ``base_2``, … : the first not in ``taken``, which it joins (importers name nodes
    after their source's names, which may repeat). ``counters`` (one dict per ``taken``, kept by the caller)
    remembers per base the suffix below which every name is taken, so that n nodes of one base are named in
    linear, not quadratic, time (20,000 unnamed ONNX nodes took 44 s); the names are the same either way."""
    i = counters.get(base, 0) if counters is not None else 0
    name = f"{base}_{i}" if i else base
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    if counters is not None:
        counters[base] = i + 1
    return name


def release_name(name: str, taken: set[str], counters: dict[str, int] | None = None) -> None:
    """Free ``name`` (a node that was undone) so that ``unique_name`` hands it out again, as it would without
    ``counters``: the counter of every base it can be a name of (itself, or ``base`` of ``base_<n>``) drops to it."""
    taken.discard(name)
    if not counters:
        return
    if name in counters:
        counters[name] = 0
    m = re.fullmatch(r"(.*)_([1-9][0-9]*)", name, re.DOTALL)
    if m and m.group(1) in counters:
        counters[m.group(1)] = min(counters[m.group(1)], int(m.group(2)))


@dataclass(frozen=True)
class Node:
    """One operation: ``op`` names a registered rule (``core.ops``), ``attrs`` its attributes, ``inputs`` the names of
    the nodes or network inputs it reads, in order."""

    name: str
    op: str
    attrs: tuple[tuple[str, Any], ...] = ()
    inputs: tuple[str, ...] = ()

    @staticmethod
    def make(name: str, op: str, inputs: Iterable[str] | str = (), **attrs: Any) -> "Node":
        return Node.from_attrs(name, op, inputs, attrs)

    @staticmethod
    def from_attrs(name: str, op: str, inputs: Iterable[str] | str, attrs: Mapping[str, Any]) -> "Node":
        if isinstance(inputs, str):
            inputs = (inputs,)
        return Node(name, op, tuple(sorted((k, _freeze(v, name, k)) for k, v in attrs.items())), tuple(inputs))

    @property
    def attr(self) -> dict[str, Any]:
        return dict(self.attrs)

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def with_attrs(self, **changes: Any) -> "Node":
        return Node.from_attrs(self.name, self.op, self.inputs, {**self.attr, **changes})


@dataclass(frozen=True)
class Network:
    """A named DAG. ``inputs`` maps each input name to its per-sample shape (e.g. ``{"x": (1, 28, 28)}``);
    ``outputs`` names the nodes whose results leave the network (default: the last node)."""

    name: str
    inputs: tuple[tuple[str, tuple[int, ...]], ...]
    nodes: tuple[Node, ...]
    outputs: tuple[str, ...] = field(default=())
    description: str = ""

    @staticmethod
    def make(name: str, inputs: Mapping[str, Iterable[int]], nodes: Iterable[Node],
             outputs: Iterable[str] = (), description: str = "") -> "Network":
        nodes = tuple(nodes)
        outs = tuple(outputs) or ((nodes[-1].name,) if nodes else ())
        return Network(name, tuple((k, tuple(v)) for k, v in inputs.items()), nodes, outs, description)

    def __hash__(self) -> int:      # computed once: a ResNet-152 has ~500 nodes and analyses look networks up by hash
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash((self.name, self.inputs, self.nodes, self.outputs, self.description))

    @property
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        return dict(self.inputs)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise NetworkError("no such node in the network", node=name)

    def replace_node(self, new: Node) -> "Network":
        return Network(self.name, self.inputs, tuple(new if n.name == new.name else n for n in self.nodes),
                       self.outputs, self.description)

    def with_input_shape(self, shape: Iterable[int], input_name: str | None = None) -> "Network":
        key = input_name or self.inputs[0][0]
        new_inputs = tuple((k, tuple(shape) if k == key else v) for k, v in self.inputs)
        return Network(self.name, new_inputs, self.nodes, self.outputs, self.description)

    # -- JSON -----------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_NAME,
            "version": SCHEMA_VERSION,
            "name": self.name,
            "description": self.description,
            "inputs": [{"name": k, "shape": list(v)} for k, v in self.inputs],
            "nodes": [{"name": n.name, "op": n.op, "inputs": list(n.inputs),
                       "attrs": {k: _thaw(v) for k, v in n.attrs}} for n in self.nodes],
            "outputs": list(self.outputs),
        }

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @staticmethod
    def from_json(text: str) -> "Network":
        if not isinstance(text, (str, bytes, bytearray)):
            raise NetworkError(f"expected the text of a JSON document, got {type(text).__name__}", node="network JSON")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise NetworkError(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})",
                               node="network JSON") from None
        except RecursionError:
            raise NetworkError("not a network: the JSON is nested too deeply", node="network JSON") from None
        except ValueError as e:     # e.g. an integer literal longer than Python converts
            raise NetworkError(f"not valid JSON ({e})", node="network JSON") from None
        return Network.from_dict(data)

    @staticmethod
    def from_dict(data: Any) -> "Network":
        where = "network JSON"
        if not isinstance(data, dict):
            raise NetworkError(f"expected a JSON object, got {type(data).__name__}", node=where)
        if data.get("schema") != SCHEMA_NAME:
            raise NetworkError(f"expected schema '{SCHEMA_NAME}'", node=where, field="schema",
                               value=shown(data.get("schema")))
        version = data.get("version")
        if type(version) is not int or version != SCHEMA_VERSION:
            raise NetworkError(f"unsupported schema version (this build reads version {SCHEMA_VERSION})",
                               node=where, field="version", value=shown(version))
        name = _expect(data, "name", str, where)
        inputs_raw = _expect(data, "inputs", list, where)
        nodes_raw = _expect(data, "nodes", list, where)
        inputs: dict[str, tuple[int, ...]] = {}
        for i, item in enumerate(inputs_raw):
            w = f"inputs[{i}]"
            if not isinstance(item, dict):
                raise NetworkError("expected an object with 'name' and 'shape'", node=w)
            iname = _expect(item, "name", str, w)
            shape = _expect(item, "shape", list, w)
            if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
                raise NetworkError("shape must be a list of integers", node=w, field="shape", value=shown(shape))
            if iname in inputs:
                raise NetworkError("duplicate input name", node=w, field="name", value=shown(iname))
            inputs[iname] = tuple(shape)
        nodes = []
        for i, item in enumerate(nodes_raw):
            w = f"nodes[{i}]"
            if not isinstance(item, dict):
                raise NetworkError("expected an object with 'name', 'op', 'inputs', 'attrs'", node=w)
            nname = _expect(item, "name", str, w)
            op = _expect(item, "op", str, nname)
            ins = _expect(item, "inputs", list, nname)
            if not all(isinstance(s, str) for s in ins):
                raise NetworkError("inputs must be a list of node names", node=nname, field="inputs", value=shown(ins))
            attrs = item.get("attrs", {})
            if not isinstance(attrs, dict):
                raise NetworkError("attrs must be an object", node=nname, field="attrs", value=shown(attrs))
            for k, v in attrs.items():
                if not isinstance(k, str):
                    raise NetworkError("attribute names must be strings", node=nname, field="attrs", value=shown(k))
                if not _plain(v):
                    raise NetworkError("attribute values must be numbers, strings, booleans, null or lists of them",
                                       node=nname, field=k, value=shown(v))
            nodes.append(Node.from_attrs(nname, op, ins, attrs))
        outputs = data.get("outputs", [])
        if not isinstance(outputs, list) or not all(isinstance(s, str) for s in outputs):
            raise NetworkError("outputs must be a list of node names", node=where, field="outputs",
                               value=shown(outputs))
        description = data.get("description", "")
        if not isinstance(description, str):      # printed as it is, but never an integer too long to print
            description = str(shown(description))
        return Network.make(name, inputs, nodes, outputs, description)


def _plain(v: Any, depth: int = 0) -> bool:
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    return isinstance(v, list) and depth < 3 and all(_plain(x, depth + 1) for x in v)


def _expect(obj: dict, key: str, typ: type, where: str) -> Any:
    if key not in obj:
        raise NetworkError("missing", node=where, field=key)
    value = obj[key]
    if not isinstance(value, typ):
        raise NetworkError(f"expected {typ.__name__}, got {type(value).__name__}", node=where, field=key,
                           value=shown(value))
    return value
