"""The Graph page's helpers: its widget keys, the DOT drawing cached per network and setting, the chosen layer's row of
the layer table, and the SVG (or DOT) download. The highlight another page asks for (the Network page's what-if
edit: the edited layer and its coupled channel group) travels in ``HIGHLIGHT``."""

from __future__ import annotations

import shutil
import threading
from collections import OrderedDict

import streamlit as st

import core
from core import netviz
from core.netgroups import find_groups

MEASURE, BLOCKS, EXPAND, LAYER = "graph_measure", "graph_blocks", "graph_expand", "graph_layer"
HIGHLIGHT = "graph_highlight"        # {"names": [...], "why": text}, set by the Network page
MEASURE_LABELS = {"time": "share of time", "flops": "FLOPs", "params": "parameters", "activation": "activation bytes",
                  "bound": "bound"}
BLOCK_CHOICES = {"auto": "auto", "collapse": "collapse", "all": "every layer"}
NONE = ""                             # the layer and expand boxes' "none chosen"
_CACHE: OrderedDict = OrderedDict()   # key → Drawing; the last 32 drawings
_CACHE_SIZE = 32


def collapse_flag(blocks: str) -> bool | None:
    return {"auto": None, "collapse": True, "all": False}[blocks]


def collapsed(report: core.Report, blocks: str) -> bool:
    flag = collapse_flag(blocks)
    return len(report.compiled.nodes) > netviz.COLLAPSE_ABOVE if flag is None else flag


def expandable(report: core.Report, blocks: str) -> list[str]:
    """The ids of the runs the graph draws collapsed (what the expand box offers)."""
    return [g.gid for g in find_groups(report.compiled)] if collapsed(report, blocks) else []


def drawing(report: core.Report, estimate, measure: str, blocks: str, expand: str | None,
            highlight: tuple[str, ...]) -> netviz.Drawing:
    """``netviz.draw``, cached: FLOPs, parameter and activation shares do not depend on the batch or precision, so
    those drawings are keyed by the network alone; time and bound by the estimate's per-layer times too."""
    times = None
    if measure in netviz.NEEDS_ESTIMATE:
        times = tuple((r["forward_s"], r["limited_by"]) for r in estimate.layers)
    key = (report.compiled, measure, blocks, expand, highlight, times)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    d = netviz.draw(report, measure, estimate=estimate, collapse=collapse_flag(blocks),
                    expand=(expand,) if expand else (), highlight=highlight)
    _CACHE[key] = d
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return d


def highlight_asked(report: core.Report) -> tuple[tuple[str, ...], str | None]:
    """The layers another page asked to outline (that exist in this network), and why."""
    asked = st.session_state.get(HIGHLIGHT)
    if not asked:
        return (), None
    names = tuple(n for n in asked["names"] if n in report.compiled.by_name)
    return names, (asked["why"] if names else None)


def ask_highlight(names, why: str) -> None:
    """Another page (Network's what-if edit) asks the Graph page to outline ``names`` (kept for the session; layers
    the current network lacks are left out)."""
    st.session_state[HIGHLIGHT] = {"names": list(names), "why": why}


def group_of(report: core.Report, name: str, blocks: str, expand: str | None) -> str | None:
    """The collapsed run a layer is drawn inside, if any."""
    if not collapsed(report, blocks):
        return None
    return next((g.gid for g in find_groups(report.compiled) if g.gid != expand and name in g.nodes), None)


def layer_row(sel, name: str) -> dict:
    """The layer table's row of one layer (Layers page columns), with its time where there is an estimate."""
    layer = sel.report.layer(name)
    row = {"layer": layer.name, "op": layer.op, "output shape": "×".join(map(str, layer.output_shape)),
           "params": layer.params, "MACs": layer.macs, "FLOPs fwd": layer.flops, "FLOPs bwd": layer.backward_flops,
           "output bytes": layer.activation_bytes, "FLOP/byte": layer.arithmetic_intensity}
    if sel.estimate is not None:
        r = next(r for r in sel.estimate.layers if r["name"] == name)
        row.update({"bound": r["bound"], "limited by": r["limited_by"], "time ms": r["forward_s"] * 1e3,
                    "% of time": r["share"] * 100})
    return row


def has_graphviz() -> bool:
    return shutil.which("dot") is not None


_SVGS: OrderedDict = OrderedDict()    # DOT text → its SVG (or the error), the last 8: Graphviz takes ~80 ms a graph
_SVGS_LOCK = threading.Lock()


def _svg(dot_text: str) -> str | core.CalcError:
    with _SVGS_LOCK:
        if dot_text in _SVGS:
            _SVGS.move_to_end(dot_text)
            return _SVGS[dot_text]
    try:
        made = netviz.svg(dot_text)
    except core.CalcError as e:
        made = e
    with _SVGS_LOCK:
        _SVGS[dot_text] = made
        while len(_SVGS) > 8:
            _SVGS.popitem(last=False)
    return made


def downloads(container, dot_text: str, name: str) -> None:
    """An SVG download where Graphviz's ``dot`` is installed here; otherwise the DOT text, saying so."""
    if has_graphviz():
        data = _svg(dot_text)
        if isinstance(data, core.CalcError):
            container.warning(str(data))
        else:
            container.download_button("Download SVG", data, f"{name}_graph.svg", "image/svg+xml", key="graph_svg")
            return
    container.download_button("Download DOT", dot_text, f"{name}_graph.dot", "text/vnd.graphviz", key="graph_dot",
                              help="Graphviz is not installed on this server, so no SVG: render the DOT with "
                                   "`dot -Tsvg graph.dot > graph.svg` or an online Graphviz viewer.")
