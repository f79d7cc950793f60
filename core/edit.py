"""What-if edits: change one attribute of one node and get a new network in which dependents follow.

Input channels and features are never stored (they come from shape propagation), so widening a conv changes the
next conv's ``in_channels``, BatchNorm's ``num_features`` and the first Linear's ``in_features`` after a flatten by
themselves. What propagation alone cannot fix are *coupled* channels: tensors that must keep equal channel counts
(the two inputs of a residual add) and depthwise convs whose groups equal their channels. An edit of ``out_channels``
(``out_features`` for Linear) applies to the whole coupled group; the result says which nodes it touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import NetworkError
from .graph import NodeInfo, compile_network
from .ir import Network, _freeze
from .registry import get_rule, validate_attrs


@dataclass(frozen=True)
class EditResult:
    network: Network
    changed: tuple[str, ...]        # nodes whose attributes were rewritten (the coupled group)
    reshaped: tuple[str, ...]       # nodes whose output shape or parameter count changed as a consequence

    @property
    def coupled(self) -> bool:
        return len(self.changed) > 1


class _Groups:
    """Union-find over channel variables."""

    def __init__(self):
        self.parent: dict[str, str] = {}

    def find(self, a: str) -> str:
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def channel_groups(network: Network) -> dict[str, str]:
    """Map each node to the id of its output's channel variable; nodes with the same id must keep equal channels.
    How a node's channels relate to its inputs' is its rule's ``channel`` (``core.registry.OpRule``)."""
    _check_network(network)
    comp = compile_network(network)
    var: dict[str, tuple[str, int] | None] = {k: None for k in comp.input_shapes}   # node → (var, size)
    uf = _Groups()
    for n in comp.nodes:
        ch = n.rule.channel_kind(n.ctx)
        if ch == "depthwise" and n.out_shape[0] == n.in_shapes[0][0]:
            var[n.name] = var[n.inputs[0]]
        elif ch in ("new", "depthwise"):
            var[n.name] = (n.name, n.out_shape[0] if n.rule.channel_field == "out_channels" else n.out_shape[-1])
        elif ch == "pass" and n.inputs:
            var[n.name] = var[n.inputs[0]]
        elif ch == "unify":
            vs = [var[s] for s in n.inputs if var[s] is not None]
            sizes = {v[1] for v in vs}
            if vs and len(sizes) == 1:
                for v in vs[1:]:
                    uf.union(vs[0][0], v[0])
                var[n.name] = vs[0]
            else:
                var[n.name] = max(vs, key=lambda v: v[1]) if vs else None
        else:
            var[n.name] = None
    return {n.name: uf.find(var[n.name][0]) for n in comp.nodes if var[n.name] is not None}


def _check_network(network: Any) -> None:
    if not isinstance(network, Network):
        raise NetworkError(f"expected a Network (core.load_network), not {type(network).__name__}", field="network",
                           value=type(network).__name__)


def _input_group(groups: dict, n: NodeInfo) -> str | None:
    return groups.get(n.inputs[0])


def edit(network: Network, node: str, field: str, value: Any) -> EditResult:
    """Set ``node.field = value``; raises ``NetworkError`` (naming the node) if the edited network is invalid, in
    which case the caller still has the original ``network`` untouched. ``node`` and ``field`` are names (str);
    anything else is a NetworkError too."""
    _check_network(network)
    if not isinstance(node, str):
        raise NetworkError(f"a layer is named by a string, not {type(node).__name__}", field="node", value=node)
    if not isinstance(field, str):
        raise NetworkError(f"an attribute is named by a string, not {type(field).__name__}", node=node,
                           field="field", value=field)
    comp = compile_network(network)
    info = comp.by_name.get(node)
    if info is None:
        raise NetworkError("no such layer", node=node, field=field, value=value)
    rule = get_rule(info.op, node)
    value = _freeze(value, node, field)          # [5, 5] as JSON writes it is (5, 5)
    validate_attrs(rule, node, {**dict(network.node(node).attrs), field: value})   # the value itself is sane

    targets: dict[str, dict[str, Any]] = {node: {field: value}}
    depthwise = rule.channel_kind(info.ctx) == "depthwise"
    if field == rule.channel_field:
        groups = channel_groups(network)
        gid = groups.get(node)
        for other in comp.nodes:
            if other.name == node:
                continue
            kind = other.rule.channel_kind(other.ctx)
            if kind == "depthwise":
                if _input_group(groups, other) == gid:      # its attributes follow the channels it reads
                    targets[other.name] = other.rule.follow(other.ctx, value)
            elif groups.get(other.name) == gid and kind == "new" and other.rule.channel_field:
                targets[other.name] = {other.rule.channel_field: value}
        if depthwise:                 # the edit sets its channels: its groups follow, its multiplier becomes 1
            targets[node] = {**info.rule.follow(info.ctx, value), field: value}

    new = network
    for name, changes in targets.items():
        new = new.replace_node(new.node(name).with_attrs(**changes))
    after = compile_network(new)      # raises NetworkError at the first node the edit breaks
    reshaped = tuple(n.name for n in after.nodes
                     if n.name not in targets and (n.out_shape != comp.by_name[n.name].out_shape
                                                   or n.params != comp.by_name[n.name].params))
    return EditResult(new, tuple(targets), reshaped)
