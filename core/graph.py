"""Shape propagation and per-sample costs: a network is compiled once into a ``Compiled`` value; every batch size,
dtype and optimizer is then arithmetic on its per-sample numbers (``core.report``), with no re-walk of the graph.

Everything scales exactly with the batch N: each op processes samples independently, so MACs, FLOPs, activation
elements and even the weight-gradient FLOPs (a sum over the batch) are N × the per-sample figure, while parameter
counts do not depend on N.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import prod

from . import ops as _ops  # noqa: F401  (registers every op)
from .errors import NetworkError, digits
from .ir import Network
from .registry import (
    MAX_DIM,
    MAX_ELEMS,
    MAX_WORK,
    Cost,
    Ctx,
    OpRule,
    Params,
    Saves,
    get_rule,
    shown,
    validate_attrs,
)


@dataclass(frozen=True)
class NodeInfo:
    """A node after propagation. All element counts and FLOPs are per sample."""

    name: str
    op: str
    rule: OpRule
    attrs: dict
    inputs: tuple[str, ...]
    in_shapes: tuple[tuple[int, ...], ...]
    out_shape: tuple[int, ...]
    cost: Cost
    params: Params
    saves: Saves
    grad_in: tuple[bool, ...]      # whether each input carries a gradient (some parameter lies upstream)
    needs_grad: bool               # whether this node takes part in the backward pass
    root: str                      # the tensor that holds this node's output (itself unless the op is a view)
    index: int
    bwd_accum: int = 0             # adds that sum the output's gradient arriving from several consumers

    @cached_property
    def per_sample(self) -> tuple[int, ...]:
        """A layer row's numbers before scaling (see ``Report._layer``), computed once per node."""
        p, moves = self.params, self.moves_data
        return (p.trainable + p.frozen, p.trainable, p.buffers, self.cost.macs, self.cost.flops, self.bwd_flops,
                self.bwd_input_flops, self.bwd_weight_flops, p.trainable + p.frozen + p.buffers,
                self.in_elems if moves else 0, self.out_elems if moves else 0, self.bwd_act_elems,
                self.bwd_extra_bytes, self.bwd_weight_elems)

    @property
    def ctx(self) -> Ctx:
        return Ctx(self.name, self.attrs, self.in_shapes, self.out_shape)

    @property
    def bwd_input_flops(self) -> int:
        c = self.cost
        shared = c.bwd_shared if any(self.grad_in[i] for i in c.bwd_shared_inputs) else 0
        return sum(f for f, g in zip(c.bwd_input, self.grad_in) if g) + shared

    @property
    def bwd_flops(self) -> int:
        return self.bwd_input_flops + self.bwd_weight_flops + self.bwd_accum

    @property
    def bwd_weight_flops(self) -> int:
        return self.cost.bwd_weight if self.params.trainable else 0

    @property
    def out_elems(self) -> int:
        return prod(self.out_shape)

    @property
    def in_elems(self) -> int:
        return sum(prod(s) for s in self.in_shapes)

    @property
    def moves_data(self) -> bool:
        return not (self.rule.alias or self.rule.stored)

    @property
    def bwd_act_elems(self) -> int:
        """Activation elements the backward pass of this node reads and writes, per sample: the output gradient
        in, each needed input gradient out, and the tensors it saved read back."""
        if not self.needs_grad or not self.moves_data:
            return 0
        saved = sum(prod(self.in_shapes[i]) for i in self.saves.inputs) + (self.out_elems if self.saves.output else 0)
        grads = sum(prod(s) for s, g in zip(self.in_shapes, self.grad_in) if g)
        return self.out_elems + grads + saved

    @property
    def bwd_extra_bytes(self) -> int:
        """Fixed-width saved buffers (indices, masks, statistics) the backward pass reads back, per sample."""
        return self.saves.extra_bytes if self.needs_grad and self.moves_data else 0

    @property
    def bwd_weight_elems(self) -> int:
        """Weight elements the backward pass touches (batch-independent): weights read for the input gradient,
        weight gradients written."""
        if not self.needs_grad:
            return 0
        weights = self.params.trainable + self.params.frozen
        return (weights if any(self.grad_in) else 0) + self.params.trainable


@dataclass(frozen=True, eq=False)     # identity semantics: one Compiled per network, usable as a cache key
class Compiled:
    network: Network
    nodes: tuple[NodeInfo, ...]
    by_name: dict
    input_shapes: dict
    outputs: tuple[str, ...]
    # per-sample sums
    macs: int
    flops: int
    bwd_flops: int
    trainable: int
    frozen: int
    buffers: int
    peak_live: int          # inference: the largest sum of live activation elements
    peak_at: str            # the node during which that peak occurs
    saved: int              # training: activation elements per sample kept for backward
    saved_extra_bytes: int  # training: per-sample bytes of fixed-width saved buffers (indices, masks, statistics)
    saved_fixed_bytes: int  # training: bytes kept for backward once per batch (BatchNorm statistics)
    input_elems: int
    output_elems: int
    weight_elems_read: int  # parameters and buffers every forward pass reads (batch-independent)
    moved_elems: int        # activation elements read and written by nodes that move data


def _check_shape(shape, where: str, field: str = "shape") -> None:
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise NetworkError("must be a list of integers", node=where, field=field, value=shown(shape))
    for d in shape:
        if d < 1:
            raise NetworkError(f"every dimension must be positive, got {shown(d)}", node=where, field=field,
                               value=shown(list(shape)))
        if d > MAX_DIM:
            raise NetworkError(f"dimension {_count(d)} is absurdly large (limit {MAX_DIM:,})", node=where, field=field,
                               value=shown(list(shape)))
    if prod(shape) > MAX_ELEMS:
        raise NetworkError(f"{_count(prod(shape))} elements per sample is absurdly many (limit {MAX_ELEMS:,})",
                           node=where, field=field, value=shown(list(shape)))


def _count(v: int) -> str:
    """``v`` with thousands separators, or its order of magnitude where it is too long to print."""
    return f"{v:,}" if v < 10 ** 30 else f"about 10^{digits(v) - 1}"


def _check_work(info: NodeInfo) -> None:
    """A node whose per-sample arithmetic or parameters pass ``MAX_WORK`` is absurd (and its time would not be a
    finite float at large batches)."""
    c, p = info.cost, info.params
    for what, v in (("MACs", c.macs), ("FLOPs", c.flops), ("backward FLOPs", sum(c.bwd_input) + c.bwd_weight),
                    ("parameters", p.trainable + p.frozen + p.buffers)):
        if v > MAX_WORK:
            raise NetworkError(f"{_count(v)} {what} per sample is absurdly many (limit {_count(MAX_WORK)})",
                               node=info.name, field="op", value=info.op)


def _topo_order(network: Network) -> list[int]:
    names = {}
    inputs = network.input_shapes
    if not network.inputs:
        raise NetworkError("the network has no inputs", node=network.name)
    for i, n in enumerate(network.nodes):
        if not n.name or not isinstance(n.name, str):
            raise NetworkError("every node needs a non-empty name", node=f"nodes[{i}]", field="name",
                               value=shown(n.name))
        if n.name in names or n.name in inputs:
            raise NetworkError("duplicate name", node=n.name, field="name", value=shown(n.name))
        names[n.name] = i
    for n in network.nodes:
        for src in n.inputs:
            if src not in names and src not in inputs:
                raise NetworkError(f"input '{src}' is neither a node nor a network input", node=n.name,
                                   field="inputs", value=shown(list(n.inputs)))
    indeg = [sum(1 for s in n.inputs if s in names) for n in network.nodes]
    users: dict[int, list[int]] = {}
    for i, n in enumerate(network.nodes):
        for s in n.inputs:
            if s in names:
                users.setdefault(names[s], []).append(i)
    ready = [i for i, d in enumerate(indeg) if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users.get(i, ()):
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(network.nodes):
        stuck = [network.nodes[i].name for i, d in enumerate(indeg) if d > 0]
        raise NetworkError(f"the graph has a cycle through {', '.join(stuck[:5])}", node=stuck[0], field="inputs",
                           value=shown(list(network.nodes[names[stuck[0]]].inputs)))
    return order


def compile_network(network: Network) -> Compiled:
    """Validate and propagate shapes through ``network``; raises ``NetworkError`` naming the first bad node."""
    if not isinstance(network, Network):
        raise NetworkError(f"expected a Network, got {type(network).__name__}")
    try:
        hash(network)
    except TypeError:
        for n in network.nodes:
            for k, v in n.attrs:
                try:
                    hash(v)
                except TypeError:
                    raise NetworkError("attribute values must be numbers, strings, booleans, null or lists of them",
                                       node=n.name, field=k, value=shown(v)) from None
        raise NetworkError("the network holds a value that is not a number, string or list",
                           node=network.name) from None
    return _compile_cached(network)


@lru_cache(maxsize=256)
def _compile_cached(network: Network) -> Compiled:
    for name, shape in network.inputs:
        _check_shape(shape, f"input '{name}'")
    if not network.nodes:
        raise NetworkError("the network has no layers", node=network.name, field="nodes", value=[])
    order = _topo_order(network)
    shapes = dict(network.input_shapes)
    carries = {name: False for name in shapes}
    root = {name: name for name in shapes}
    infos: list[NodeInfo] = []
    for idx, i in enumerate(order):
        node = network.nodes[i]
        rule = get_rule(node.op, node.name)
        lo, hi = rule.arity
        k = len(node.inputs)
        if k < lo or (hi is not None and k > hi):
            want = f"{lo}" if lo == hi else f"{lo} or more" if hi is None else f"{lo}…{hi}"
            raise NetworkError(f"op '{node.op}' takes {want} input(s), got {k}", node=node.name, field="inputs",
                               value=shown(list(node.inputs)))
        attrs = validate_attrs(rule, node.name, node.attr)
        ins = tuple(shapes[s] for s in node.inputs)
        out = rule.shape(Ctx(node.name, attrs, ins))
        _check_shape(out, node.name, "output shape")
        ctx = Ctx(node.name, attrs, ins, out)
        params = rule.params(ctx)
        grad_in = tuple(carries[s] for s in node.inputs)
        needs = bool(params.trainable) or any(grad_in)
        info = NodeInfo(node.name, node.op, rule, attrs, node.inputs, ins, out, rule.cost(ctx), params,
                        rule.saves(ctx), grad_in, needs, root[node.inputs[0]] if rule.alias else node.name, idx)
        _check_work(info)
        infos.append(info)
        shapes[node.name] = out
        carries[node.name] = needs
        root[node.name] = info.root
    for o in network.outputs:
        if o not in shapes:
            raise NetworkError(f"output '{o}' is not a node of the network", node=network.name, field="outputs",
                               value=shown(o))
    outputs = network.outputs or (infos[-1].name,)
    infos = _with_gradient_accumulation(infos)
    peak, peak_at = _inference_peak(infos, network, outputs)
    return Compiled(
        network=network, nodes=tuple(infos), by_name={n.name: n for n in infos}, input_shapes=network.input_shapes,
        outputs=outputs,
        macs=sum(n.cost.macs for n in infos), flops=sum(n.cost.flops for n in infos),
        bwd_flops=sum(n.bwd_flops for n in infos),
        trainable=sum(n.params.trainable for n in infos), frozen=sum(n.params.frozen for n in infos),
        buffers=sum(n.params.buffers for n in infos),
        peak_live=peak, peak_at=peak_at, saved=_saved_for_backward(infos, network),
        saved_extra_bytes=sum(n.saves.extra_bytes for n in infos if n.needs_grad),
        saved_fixed_bytes=sum(n.saves.fixed_bytes for n in infos if n.needs_grad),
        input_elems=sum(prod(s) for s in network.input_shapes.values()),
        output_elems=sum(prod(shapes[o]) for o in outputs),
        weight_elems_read=sum(n.params.trainable + n.params.frozen + n.params.buffers for n in infos),
        moved_elems=sum(n.in_elems + n.out_elems for n in infos if n.moves_data),
    )


def _inference_peak(infos: list[NodeInfo], network: Network, outputs) -> tuple[int, str]:
    """Walk the nodes in order: a tensor is live from its producer to its last consumer (views share their base);
    the peak is the largest sum of live elements, counted while each node runs (its inputs and output coexist)."""
    size = {name: prod(s) for name, s in network.input_shapes.items()}
    last_use: dict[str, int] = {}
    roots = {name: name for name in size}
    for n in infos:
        roots[n.name] = n.root
        for s in n.inputs:
            last_use[roots[s]] = n.index
    keep = {roots[o] for o in outputs}
    live = sum(size.values())
    peak, peak_at = live, next(iter(size))
    for n in infos:
        if n.moves_data:
            size[n.name] = n.out_elems
            live += n.out_elems
        if live > peak:
            peak, peak_at = live, n.name
        for r in {roots[s] for s in n.inputs}:
            if last_use.get(r) == n.index and r not in keep:
                live -= size.get(r, 0)
        if n.moves_data and n.name not in last_use and n.name not in keep:
            live -= n.out_elems        # a dead end: nothing reads it, so it is freed at once
    return peak, peak_at


def _saved_for_backward(infos: list[NodeInfo], network: Network) -> int:
    """Activation elements kept alive between forward and backward, per sample: the distinct tensors the
    backward-taking nodes save (a conv saving its input and the ReLU before it saving its output hold one tensor).
    Fixed-width buffers (indices, masks, statistics) are counted apart, in bytes."""
    roots = {name: name for name in network.input_shapes}
    size = {name: prod(s) for name, s in network.input_shapes.items()}
    for n in infos:
        view = n.rule.alias and not n.rule.copies_in_training
        roots[n.name] = roots[n.inputs[0]] if view else n.name
        size[n.name] = 0 if n.rule.stored else n.out_elems
    kept: set[str] = set()
    for n in infos:
        if not n.needs_grad:
            continue
        kept.update(roots[n.inputs[i]] for i in n.saves.inputs)
        if n.saves.output:
            kept.add(roots[n.name])
    return sum(size[r] for r in kept)


def _with_gradient_accumulation(infos: list[NodeInfo]) -> list[NodeInfo]:
    """A tensor read by k consumers that pass a gradient back receives k gradients: k − 1 adds per element."""
    from dataclasses import replace

    uses: dict[str, int] = {}
    for n in infos:
        for s, g in zip(n.inputs, n.grad_in):
            if g:
                uses[s] = uses.get(s, 0) + 1
    return [replace(n, bwd_accum=(uses[n.name] - 1) * n.out_elems) if uses.get(n.name, 0) > 1 else n for n in infos]
