"""The layer table of the Network page: a sequential network as editable rows, and the rows back as a network.

A row is one layer: its position, name, op, the four fields students edit most (channels, kernel, stride, padding)
and every other attribute as ``key=value`` text. ``network_from_rows`` checks each row and then compiles the whole
chain, so an error names the row, the layer, the field and the value, and the caller keeps its last valid network.
"""

from __future__ import annotations

import math
import re
from typing import Any

import core
from core.errors import NetworkError
from core.ir import Network, Node
from core.registry import REGISTRY, get_rule

# ops offered in a new row, in the order a CNN usually uses them
BUILD_OPS = ("conv2d", "batch_norm", "relu", "relu6", "silu", "gelu", "sigmoid", "tanh", "hardswish", "max_pool2d",
             "avg_pool2d", "adaptive_avg_pool2d", "dropout", "flatten", "linear", "softmax", "log_softmax",
             "conv_transpose2d", "group_norm", "layer_norm", "identity")
COLUMNS = ("#", "layer", "op", "channels", "kernel", "stride", "padding", "other")
SHOWN = ("output", "params", "MACs")               # read-only columns filled from the current analysis
COLUMN_FIELD = {"kernel": "kernel_size", "stride": "stride", "padding": "padding"}
# attributes a new row of this op starts with when the user gives none (so a new row compiles as typed)
STARTER = {"conv2d": {"out_channels": 16, "kernel_size": 3}, "conv_transpose2d": {"out_channels": 16, "kernel_size": 2},
           "linear": {"out_features": 10}, "max_pool2d": {"kernel_size": 2}, "avg_pool2d": {"kernel_size": 2},
           "adaptive_avg_pool2d": {"output_size": 1}, "group_norm": {"num_groups": 1}, "log_softmax": {"dim": 1},
           "softmax": {"dim": 1}, "flatten": {"start_dim": 1}}
NEW_NETWORK = Network.make("my_cnn", {"x": (1, 28, 28)}, [
    Node.make("conv1", "conv2d", "x", out_channels=8, kernel_size=3),
    Node.make("relu1", "relu", "conv1"),
    Node.make("pool1", "max_pool2d", "relu1", kernel_size=2),
    Node.make("flatten", "flatten", "pool1", start_dim=1),
    Node.make("fc", "linear", "flatten", out_features=10),
], ["fc"])


def channel_field(op: str) -> str | None:
    """The attribute that sets an op's output channels (its rule's ``channel_field``); None for other ops."""
    rule = REGISTRY.get(op)
    return rule.channel_field if rule else None


def is_chain(net: Network) -> bool:
    """One input, each layer fed by the one before, the last one the only output: what the table can rebuild."""
    if len(net.inputs) != 1 or len(net.outputs) != 1 or not net.nodes or net.outputs[0] != net.nodes[-1].name:
        return False
    prev = net.inputs[0][0]
    for n in net.nodes:
        if n.inputs != (prev,):
            return False
        prev = n.name
    return True


def int_cell(v: Any) -> int | None:
    """An attribute as one integer cell: 3 and (3, 3) are 3; anything else goes to the 'other' text."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, tuple) and len(v) == 2 and v[0] == v[1] and isinstance(v[0], int):
        return v[0]
    return None


def _text(v: Any) -> str:
    if isinstance(v, tuple):
        return "×".join(map(str, v))
    return str(v).lower() if isinstance(v, bool) or v is None else str(v)


def rows(net: Network, report: core.Report | None = None) -> list[dict]:
    """The network as table rows; with ``report`` (an analysis of ``net``) also each layer's output shape, params
    and MACs per sample."""
    layers = {r.name: r for r in report.layers} if report is not None else {}
    out = []
    for i, n in enumerate(net.nodes, 1):
        attrs = dict(n.attrs)
        row = {"#": i, "layer": n.name, "op": n.op, "channels": None, "kernel": None, "stride": None,
               "padding": None}
        fields = {channel_field(n.op): "channels", **{f: c for c, f in COLUMN_FIELD.items()}}
        for field, column in fields.items():
            if field in attrs and int_cell(attrs[field]) is not None:
                row[column] = int_cell(attrs.pop(field))
        row["other"] = ", ".join(f"{k}={_text(v)}" for k, v in attrs.items())
        if n.name in layers:
            r = layers[n.name]
            row.update({"output": "×".join(map(str, r.output_shape[1:])), "params": r.params,
                        "MACs": r.macs // max(report.batch_size, 1)})
        out.append(row)
    return out


_PAIR = re.compile(r"^\s*(-?\d+)\s*[x×*,]\s*(-?\d+)\s*$")


def _value(text: str) -> Any:
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    if m := _PAIR.match(t):
        return (int(m.group(1)), int(m.group(2)))
    for cast in (int, float):
        try:
            return cast(t)
        except ValueError:
            pass
    return t


def parse_other(text: Any, where: str) -> dict:
    """'p=0.25, kernel_size=1×7' → {'p': 0.25, 'kernel_size': (1, 7)}; a malformed piece names itself."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        return {}
    out = {}
    for piece in str(text).split(","):
        if not piece.strip():
            continue
        key, eq, val = piece.partition("=")
        if not eq or not key.strip().isidentifier():
            raise NetworkError(f"'{piece.strip()}' is not name=value (e.g. p=0.25, dim=1)", node=where,
                               field="other", value=str(text))
        out[key.strip()] = _value(val)
    return out


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def network_from_rows(table: list[dict], base: Network) -> Network:
    """Rows (as edited: reordered by '#', added, removed) → a sequential network with ``base``'s name and input.
    Raises NetworkError naming 'row N · layer' and the field; the caller keeps ``base``."""
    order = sorted(range(len(table)), key=lambda i: (math.inf if _blank(table[i].get("#")) else
                                                      float(table[i]["#"]), i))
    nodes: list[Node] = []
    seen: dict[str, str] = {}
    before = {n.name: n for n in base.nodes}
    prev = base.inputs[0][0]
    for pos, i in enumerate(order, 1):
        r = table[i]
        op = None if _blank(r.get("op")) else str(r["op"]).strip()
        name = f"{op or 'layer'}_{pos}" if _blank(r.get("layer")) else str(r["layer"]).strip()
        where = f"row {pos} · {name}"
        if op is None:
            raise NetworkError("choose an op for this row", node=where, field="op", value=None)
        if name in seen or name == base.inputs[0][0]:
            raise NetworkError(f"the name is already used by {seen.get(name, 'the input')}; names must be unique",
                               node=where, field="layer", value=name)
        attrs = parse_other(r.get("other"), where)
        if _blank(r.get("other")) and all(_blank(r.get(c)) for c in ("channels", *COLUMN_FIELD)):
            attrs = dict(STARTER.get(op, {}))
        for column, field in (("channels", channel_field(op)), *((c, f) for c, f in COLUMN_FIELD.items())):
            v = r.get(column)
            if _blank(v):
                continue
            if field is None or field not in {a.name for a in get_rule(op, where).attrs}:
                raise NetworkError(f"{op} has no {column}; clear this cell", node=where, field=column, value=v)
            if float(v) != int(float(v)):
                raise NetworkError("must be a whole number", node=where, field=column, value=v)
            old = before[name].get(field) if name in before and before[name].op == op else None
            attrs[field] = old if int_cell(old) == int(float(v)) else int(float(v))   # keeps (3, 3) as it was
        nodes.append(Node.make(name, op, prev, **attrs))
        seen[name] = where
        prev = name
    if not nodes:
        raise NetworkError("the network has no layers; add a row", node="table", field="rows", value=0)
    net = Network.make(base.name, dict(base.inputs), nodes, [prev], base.description)
    try:
        core.compile_network(net)
    except NetworkError as e:
        raise NetworkError(e.reason, node=seen.get(e.node, e.node), field=e.field, value=e.value) from None
    return net


def changed(table: list[dict], original: list[dict]) -> bool:
    """Whether the user edited, added, removed or reordered rows (the read-only columns do not count)."""
    def key(rs):
        return [tuple(None if _blank(r.get(c)) else r.get(c) for c in COLUMNS) for r in rs]
    return key(table) != key(original)


def edit_effect(sel: Any, new: Network, input_shape: str, settings: dict) -> str:
    """What an edit does to the parameters and to the forward time on the sidebar's device ("parameters a → b
    (+x %), forward time … ms; "), for the message after it; empty where the edited network cannot be analysed.
    ``sel``: the page's selection (its report and estimate); ``settings``: the sidebar's time-model settings."""
    def change(a: float, b: float) -> str:
        return f" ({(b - a) / a * 100:+.1f} %)" if a else ""

    r = sel.report
    try:
        after = core.analyze(new, input_shape=input_shape or None, batch_size=r.batch_size, dtype=r.dtype,
                             optimizer=r.optimizer)
    except core.CalcError:
        return ""
    a, b = r.totals["params"], after.totals["params"]
    said = f"parameters {a:,} → {b:,}{change(a, b)}"
    if sel.estimate is not None:
        try:
            e = core.estimate(after, sel.device, batch_size=r.batch_size, dtype=r.dtype, optimizer=r.optimizer,
                              **settings)
        except core.CalcError:
            return said + "; "
        t0, t1 = sel.estimate.totals["forward_s"], e.totals["forward_s"]
        said += f", forward time {t0 * 1e3:,.3f} → {t1 * 1e3:,.3f} ms{change(t0, t1)}"
    return said + "; "
