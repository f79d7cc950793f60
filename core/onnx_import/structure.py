"""The graph's structure, read before anything is inferred: the nodes in an order where every input is produced
first (a missing input or a cycle is an error naming the node and the tensor), whether a graph input feeds only
weight slots (a weight, not the data input), the opset, and the module scopes PyTorch's exporters record in node
names and metadata (for readable IR names)."""

from __future__ import annotations

import heapq

from ..errors import NetworkError
from .base import _PASS_THROUGH, STANDARD_DOMAINS, WEIGHT_SLOTS


def _node_label(node, i: int) -> str:
    return node.name or f"{node.op_type} node #{i}"


def _topological(graph, where: str) -> list:
    """The nodes in an order where every input is produced first; a missing input or a cycle is an error naming
    the node and the tensor."""
    produced: dict[str, int] = {}
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for i, node in enumerate(graph.node):
        for o in node.output:
            if not o:
                continue
            if o in produced or o in available:
                raise NetworkError("the tensor is produced twice", node=_node_label(node, i), field="output",
                                   value=o)
            produced[o] = i
    waiting = []
    users: dict[int, list[int]] = {}
    for i, node in enumerate(graph.node):
        deps = set()
        for name in node.input:
            if not name or name in available:
                continue
            if name not in produced:
                raise NetworkError("input is produced by no node, initializer or graph input",
                                   node=_node_label(node, i), field="input", value=name)
            deps.add(produced[name])
        waiting.append(len(deps))
        for d in deps:
            users.setdefault(d, []).append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)                # the file's own order wherever it is a valid one
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users.get(i, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(graph.node):
        stuck = [_node_label(graph.node[i], i) for i, w in enumerate(waiting) if w > 0]
        raise NetworkError(f"the graph has a cycle through {', '.join(stuck[:5])}", node=stuck[0], field="input",
                           value=[n for n in graph.node[[i for i, w in enumerate(waiting) if w > 0][0]].input])
    for o in graph.output:
        if o.name not in produced and o.name not in available:
            raise NetworkError("graph output is produced by no node", node=where, field="output", value=o.name)
    return [graph.node[i] for i in order]


def _feeds_only_weight_slots(name: str, consumers: dict, depth: int = 0) -> bool:
    uses = consumers.get(name, [])
    if not uses or depth > 8:
        return False
    for node, slot in uses:
        if node.op_type in _PASS_THROUGH and slot == 0:
            if not all(_feeds_only_weight_slots(o, consumers, depth + 1) for o in node.output if o):
                return False
        elif slot not in WEIGHT_SLOTS.get(node.op_type, ()):
            return False
    return True


def _opset(model) -> int:
    for o in model.opset_import:
        if o.domain in STANDARD_DOMAINS:
            return int(o.version)
    return 1


def _scope(name: str) -> tuple | None:
    if not name or "/" not in name:
        return None
    parts = [p for p in name.strip("/").split("/") if p]
    return tuple(parts[:-1]) or None


def _torch_scopes(node) -> list[str]:
    """The module names ``torch.onnx.export(..., dynamo=True)`` records on a node (its last entry, the aten op,
    left out)."""
    import ast

    for p in node.metadata_props:
        if p.key == "pkg.torch.onnx.name_scopes":
            try:
                scopes = ast.literal_eval(p.value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return []
            return [x for x in scopes[:-1] if isinstance(x, str) and x] if isinstance(scopes, list) else []
    return []
