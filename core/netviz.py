"""A network's graph as Graphviz DOT text, its nodes coloured by a cost the user picks (issue 41).

``draw(report, measure, estimate=None, collapse=None, expand=(), highlight=())`` → ``Drawing`` (``.dot``, the text).

* A node shows its name, its op and its per-sample output shape (C×H×W, the batch left out); a network input is an
  oval. Edges follow each node's inputs. A *join* (``add``, ``sub``, ``mul``, ``div``, ``concat`` on two or more
  tensors) is a small circle marked ⊕ ⊖ ⊗ ⊘ ‖, so skip connections and Inception's branches show.
* ``measure`` (``MEASURES``): ``flops`` (forward FLOPs), ``params``, ``activation`` (output bytes, 0 for a view),
  ``time`` (predicted forward time, ``Estimate.layers``' ``forward_s``) colour by a node's share of the network's
  total, in the fixed bins ``BINS`` (% of the total) of a sequential palette; ``bound`` by the term that sets the
  layer's predicted time (``limited_by``: compute, memory or overhead). ``time`` and ``bound`` need ``estimate``.
* ``collapse``: runs of alike blocks (``core.netgroups``) become one node, "layer3: 36 × block (…) / 61.3 % of
  FLOPs", coloured by the run's sum (``bound``: the term that limits most of its time). None = automatic: collapse
  a network of more than ``COLLAPSE_ABOVE`` nodes. ``expand`` names runs drawn in full (by id, ``layer3``, or by one
  of their blocks). Edges into and out of a run are kept, once each.
* ``highlight``: node names drawn with a thick blue outline (a run holding one is outlined).
* A legend node gives the bins and their colours. ``svg(dot)`` renders with Graphviz's ``dot`` where installed.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape

from .errors import CalcError
from .netgroups import Group, find_groups

MEASURES = ("time", "flops", "params", "activation", "bound")
NEEDS_ESTIMATE = ("time", "bound")
COLLAPSE_ABOVE = 200        # nodes: ResNet-50 (175) is drawn whole, with its skip connections; ResNet-152 collapses
BINS = (0.1, 0.3, 1, 3, 10, 30)     # % of the total: the edges of the 7 colour bins
PALETTE = ("#ffffb2", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#b10026")   # ColorBrewer YlOrRd-7
ZERO = "#ffffff"            # a node that costs nothing under the measure (a view has no activation bytes)
BOUND_COLOURS = {"compute": "#4e79a7", "memory": "#f28e2b", "overhead": "#e15759", "none": "#e0e0e0"}
JOINS = {"add": "⊕", "sub": "⊖", "mul": "⊗", "div": "⊘", "concat": "‖"}
HIGHLIGHT = "#1f3fff"
TITLES = {"time": "predicted forward time", "flops": "FLOPs", "params": "parameters",
          "activation": "activation bytes", "bound": "limited by"}


@dataclass(frozen=True)
class Drawing:
    dot: str
    groups: tuple[Group, ...]       # the runs drawn collapsed
    shares: dict                    # drawn id → share of the total (a category for ``bound``)
    nodes: int                      # nodes drawn (inputs, layers, runs; not the legend)
    edges: tuple[tuple[str, str], ...]


def check_measure(measure, estimate=None) -> str:
    if not isinstance(measure, str) or measure not in MEASURES:
        raise CalcError(f"choose one of {', '.join(MEASURES)}", field="measure", value=measure)
    if measure in NEEDS_ESTIMATE and estimate is None:
        raise CalcError("colouring by time or bound needs a time estimate on a device", field="measure",
                        value=measure)
    return measure


def layer_values(report, measure: str, estimate=None) -> dict:
    """Each layer's value under ``measure``: a number (FLOPs, parameters, bytes, seconds) or, for ``bound``, the term
    that sets its predicted time."""
    check_measure(measure, estimate)
    if measure == "time":
        return {r["name"]: r["forward_s"] for r in estimate.layers}
    if measure == "bound":
        return {r["name"]: r["limited_by"] for r in estimate.layers}
    field = {"flops": "flops", "params": "params", "activation": "activation_bytes"}[measure]
    return {layer.name: getattr(layer, field) for layer in report.layers}


def bin_of(share: float) -> int:
    """The colour bin of a share (a fraction of the total): 0 … 6, -1 for exactly nothing."""
    if share <= 0:
        return -1
    pct = share * 100
    return sum(1 for edge in BINS if pct >= edge)


def bin_labels() -> list[str]:
    """The legend's ranges: "< 0.1 %", "0.1–0.3 %", …, "≥ 30 %"."""
    edges = [f"{e:g}" for e in BINS]
    return ([f"< {edges[0]} %"] + [f"{a}–{b} %" for a, b in zip(edges, edges[1:])] + [f"≥ {edges[-1]} %"])


def text_colour(fill: str) -> str:
    """Black on light fills, white on dark ones (relative luminance below 0.4)."""
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return "#ffffff" if 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] < 0.4 else "#000000"


def _q(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(shape) -> str:
    return "×".join(map(str, shape)) or "scalar"


def _pct(share: float) -> str:
    """61.3 %, 0.52 %, 0.0028 %: one decimal from 1 %, two significant digits below."""
    pct = share * 100
    return f"{pct:.1f} %" if pct >= 1 or pct == 0 else f"{pct:.2g} %"


def _expanded(groups: tuple[Group, ...], expand) -> set[str]:
    """The ids of the runs ``expand`` names (by id, parent path or one of their blocks); an unknown name is an error
    that lists the runs there are."""
    wanted = [expand] if isinstance(expand, str) else list(expand or ())
    out = set()
    for name in wanted:
        hit = [g.gid for g in groups if name in (g.gid, g.parent) or name in g.blocks]
        hit = hit if len(hit) <= 1 else [g.gid for g in groups if name in (g.gid, *g.blocks)] or hit
        if not hit:
            listed = ", ".join(g.gid for g in groups[:20]) + (" …" if len(groups) > 20 else "")
            raise CalcError(f"no collapsed block of that name; the collapsed blocks are: {listed or 'none'}",
                            field="expand", value=name)
        out.update(hit)
    return out


def draw(report, measure: str = "flops", *, estimate=None, collapse: bool | None = None,
         expand: str | Iterable[str] | None = (), highlight: Iterable[str] = ()) -> Drawing:
    """The DOT drawing of ``report``'s network (see the module docstring for the arguments)."""
    check_measure(measure, estimate)
    compiled = report.compiled
    values = layer_values(report, measure, estimate)
    if collapse is None:
        collapse = len(compiled.nodes) > COLLAPSE_ABOVE
    groups = find_groups(compiled) if collapse else ()
    if expand and not isinstance(expand, str) and not all(isinstance(e, str) for e in expand):
        raise CalcError("name collapsed blocks by their paths (text)", field="expand", value=expand)
    if expand and not collapse:
        raise CalcError("only a collapsed graph has blocks to expand", field="expand", value=expand)
    keep = _expanded(groups, expand)
    groups = tuple(g for g in groups if g.gid not in keep)
    where = {n: "group::" + g.gid for g in groups for n in g.nodes}     # node → the run that draws it
    lit = set(highlight or ())

    categorical = measure == "bound"
    total = 0.0 if categorical else float(sum(values.values()))
    lines = [f"digraph {_q(report.name)} {{",
             '  graph [rankdir=TB, nodesep=0.25, ranksep=0.3, fontname="Helvetica", bgcolor="white"];',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, penwidth=1, '
             'color="#555555"];',
             '  edge [color="#666666", arrowsize=0.6];']
    shares: dict = {}
    lines.append("  " + _legend(measure, total))
    for name, shape in compiled.input_shapes.items():
        lines.append(f"  {_q(name)} [label={_q(f'{name}{chr(10)}input · {_shape(shape)}')}, shape=oval, "
                     f'fillcolor="#eeeeee"{_lit(name in lit)}];')
    drawn_groups: set[str] = set()
    outputs = set(compiled.outputs)
    for info in compiled.nodes:
        gid = where.get(info.name)
        if gid is not None:
            if gid not in drawn_groups:
                drawn_groups.add(gid)
                g = next(x for x in groups if "group::" + x.gid == gid)
                lines.append("  " + _group_node(g, gid, values, total, measure, estimate, lit, shares))
            continue
        v = values.get(info.name, 0)
        share = v if categorical else (v / total if total else 0.0)
        shares[info.name] = share
        fill = _fill(share, categorical)
        shown = f"{info.op} · {_shape(info.out_shape)}"
        tip = f"{info.name} · {shown} · {_value_text(share, measure)}"
        extra = ", peripheries=2" if info.name in outputs else ""
        symbol = JOINS.get(info.op) if len(info.inputs) >= 2 else None
        if symbol:
            short = info.name.rsplit(".", 1)[-1]
            lines.append(f"  {_q(info.name)} [label={_q(symbol)}, shape=circle, fixedsize=true, width=0.42, "
                         f"fontsize=12, xlabel={_q(f'{short} {_shape(info.out_shape)}')}, "
                         f'fillcolor="{fill}", fontcolor="{text_colour(fill)}", tooltip={_q(tip)}'
                         f"{extra}{_lit(info.name in lit)}];")
        else:
            lines.append(f"  {_q(info.name)} [label={_q(info.name + chr(10) + shown)}, fillcolor=\"{fill}\", "
                         f'fontcolor="{text_colour(fill)}", tooltip={_q(tip)}{extra}{_lit(info.name in lit)}];')
    edges: dict[tuple[str, str], None] = {}
    for info in compiled.nodes:
        dst = where.get(info.name, info.name)
        for src in info.inputs:
            s = where.get(src, src)
            if s != dst:
                edges[(s, dst)] = None
    lines += [f"  {_q(s)} -> {_q(d)};" for s, d in edges]
    lines.append("}")
    nodes = len(compiled.input_shapes) + len(compiled.nodes) - sum(len(g.nodes) for g in groups) + len(groups)
    return Drawing("\n".join(lines) + "\n", groups, shares, nodes, tuple(edges))


def dot(report, measure: str = "flops", **kw) -> str:
    """``draw(...).dot``."""
    return draw(report, measure, **kw).dot


def _lit(on: bool) -> str:
    return f', penwidth=4, color="{HIGHLIGHT}"' if on else ""


def _fill(share, categorical: bool) -> str:
    if categorical:
        return BOUND_COLOURS.get(share, BOUND_COLOURS["none"])
    b = bin_of(share)
    return ZERO if b < 0 else PALETTE[b]


def _value_text(share, measure: str) -> str:
    if measure == "bound":
        return f"limited by {share}"
    return f"{_pct(share)} of {TITLES[measure]}"


def _group_node(g: Group, gid: str, values: dict, total: float, measure: str, estimate, lit: set,
                shares: dict) -> str:
    if measure == "bound":          # the term that limits most of the run's forward time
        secs = {r["name"]: r["forward_s"] for r in estimate.layers}
        by: dict[str, float] = {}
        for n in g.nodes:
            by[values.get(n, "none")] = by.get(values.get(n, "none"), 0.0) + secs.get(n, 0.0)
        share = max(by, key=by.get) if any(by.values()) else "none"
    else:
        share = (sum(values.get(n, 0) for n in g.nodes) / total) if total else 0.0
    shares[gid] = share
    fill = _fill(share, measure == "bound")
    varies = f"; {g.varies} differ{'s' if g.varies == 1 else ''}" if g.varies else ""
    label = f"{g.gid}: {g.count} × {g.kind}\n({g.summary()}{varies})\n{_value_text(share, measure)}"
    tip = f"{label.replace(chr(10), ' ')} · {len(g.nodes)} layers; expand it to see them"
    on = any(n in lit for n in g.nodes)
    return (f"{_q(gid)} [label={_q(label)}, shape=box3d, style=filled, fillcolor=\"{fill}\", "
            f'fontcolor="{text_colour(fill)}", tooltip={_q(tip)}{_lit(on)}];')


def _legend(measure: str, total: float) -> str:
    """A table node: the colour of each bin and its range (or each category for ``bound``)."""
    if measure == "bound":
        title = "colour: the term that limits<BR/>each layer's predicted time"
        rows = [(c, k) for k, c in BOUND_COLOURS.items()]
    else:
        title = f"colour: share of {TITLES[measure]}"
        rows = [(ZERO, "0")] + list(zip(PALETTE, bin_labels()))
    cells = "".join(f'<TR><TD BGCOLOR="{c}" WIDTH="18"> </TD><TD ALIGN="LEFT">{escape(t)}</TD></TR>'
                    for c, t in rows)
    note = "shapes per sample (C×H×W)"
    return (f'"legend::" [shape=plaintext, style="", fontsize=9, label=<<TABLE BORDER="0" CELLBORDER="1" '
            f'CELLSPACING="0" CELLPADDING="3"><TR><TD COLSPAN="2"><B>{title}</B></TD></TR>{cells}'
            f'<TR><TD COLSPAN="2">{note}</TD></TR></TABLE>>];')


GRAPHVIZ_MISSING = ("Graphviz is not installed: the 'dot' program is needed for SVG (apt install graphviz, brew "
                    "install graphviz, or conda install graphviz); the DOT text can be rendered elsewhere")


def svg(dot_text: str, timeout_s: float = 60) -> str:
    """``dot_text`` rendered to SVG by Graphviz's ``dot``; a ``CalcError`` saying so where it is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        raise CalcError(GRAPHVIZ_MISSING)
    try:
        done = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise CalcError(f"Graphviz took more than {timeout_s:g} s to lay the graph out; collapse it") from None
    if done.returncode != 0:
        raise CalcError(f"Graphviz failed: {(done.stderr.strip().splitlines() or ['no message'])[-1]}")
    return done.stdout


__all__ = ["draw", "dot", "svg", "Drawing", "MEASURES", "BINS", "PALETTE", "BOUND_COLOURS", "JOINS",
           "COLLAPSE_ABOVE", "GRAPHVIZ_MISSING", "layer_values", "bin_of", "bin_labels", "check_measure"]
