"""Repeated blocks of a network, found by module path, for drawing large graphs collapsed (``core.netviz``).

Node names are module paths (``layer3.4.conv2``). A *block* is a module path with at least ``MIN_BLOCK`` nodes under
it. Under one parent, a *run* is two or more consecutive sibling blocks that

  * form a chain: each block reads a tensor some node of the block before it wrote, and
  * are alike: their sets of (path inside the block, op) differ by at most ``max(2, ¼ of the larger)`` entries
    (ResNet's first bottleneck adds a downsample; EfficientNet's first MBConv of a stage has no residual add).

Runs are found deepest first, and a block that already holds a run joins none (so ResNet-18's ``layer1`` …
``layer4`` stay four runs of two blocks, not one run of four stages). Each run becomes a ``Group``; its id is the
parent's path when the run holds every block of the parent (``layer3``), else ``parent.first…last``
(``Mixed_5b…Mixed_5d``). Found once per compiled network (cached).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from .graph import Compiled

MIN_BLOCK = 4            # nodes a module needs to count as a block (a conv-bn-relu triple is not one)
SHORT_OPS = {"conv2d": "conv", "batch_norm": "bn", "conv_transpose2d": "deconv", "layer_norm": "ln",
             "group_norm": "gn", "adaptive_avg_pool2d": "avgpool", "max_pool2d": "maxpool", "avg_pool2d": "avgpool",
             "multihead_attention": "attention", "window_attention": "attention"}


@dataclass(frozen=True)
class Group:
    """A run of alike blocks drawn as one node."""

    gid: str                        # "layer3", or "parent.first…last": the name that expands it
    parent: str                     # the module path the blocks sit in ("" at the top)
    blocks: tuple[str, ...]         # module paths of the blocks, in order
    nodes: tuple[str, ...]          # every node inside, in the network's order
    kind: str                       # what a block is called: "block", "denselayer", "encoder_layer"
    ops: tuple[tuple[str, int], ...]   # one typical block's ops and how often each occurs, most frequent first
    varies: int                     # blocks whose ops differ from the typical one

    @property
    def count(self) -> int:
        return len(self.blocks)

    def summary(self, most: int = 5) -> str:
        """"conv ×3, bn ×3, relu ×3, add" (the ``most`` most frequent ops, then "…")."""
        parts = [f"{SHORT_OPS.get(op, op)}{f' ×{k}' if k > 1 else ''}" for op, k in self.ops[:most]]
        return ", ".join(parts) + (", …" if len(self.ops) > most else "")


def _child(name: str, parent: str) -> str | None:
    """The path one level below ``parent`` that ``name`` lies in (``layer3.4`` for ``layer3.4.conv2`` under
    ``layer3``); None where ``name`` is ``parent`` itself or not under it."""
    if parent:
        if not name.startswith(parent + "."):
            return None
        rest = name[len(parent) + 1:]
    else:
        rest = name
    head = rest.split(".", 1)[0]
    return f"{parent}.{head}" if parent else head


def _alike(a: frozenset, b: frozenset) -> bool:
    return a == b or len(a ^ b) <= max(2, max(len(a), len(b)) // 4)


def _kind(path: str) -> str:
    key = path.rsplit(".", 1)[-1]
    stem = re.sub(r"[\d_\-]+$", "", key)
    return stem if stem and stem != key else "block"


@lru_cache(maxsize=32)
def find_groups(compiled: Compiled) -> tuple[Group, ...]:
    """Every run of alike, chained blocks in ``compiled``, deepest first (see the module docstring)."""
    names = [info.name for info in compiled.nodes]
    inputs = {info.name: info.inputs for info in compiled.nodes}
    ops = {info.name: info.op for info in compiled.nodes}
    # members[path]: the nodes under a module path, in network order; kids[path]: its child paths, in first-seen order
    members: dict[str, list[str]] = {}
    kids: dict[str, dict[str, None]] = {"": {}}
    for name in names:
        parts = name.split(".")
        parent = ""
        for i in range(1, len(parts) + 1):
            path = ".".join(parts[:i])
            members.setdefault(path, []).append(name)
            kids.setdefault(parent, {})[path] = None
            parent = path
    groups: list[Group] = []
    holds_group: set[str] = set()

    def visit(path: str) -> None:
        for c in kids.get(path, ()):
            visit(c)
        blocks = [c for c in kids.get(path, ()) if len(members[c]) >= MIN_BLOCK and c not in holds_group]
        order = {c: i for i, c in enumerate(kids.get(path, ()))}
        runs, run = [], []
        for c in blocks:
            if run and order[c] == order[run[-1]] + 1 and _chained(run[-1], c) and _alike(sig(run[-1]), sig(c)):
                run.append(c)
                continue
            if len(run) >= 2:
                runs.append(run)
            run = [c]
        if len(run) >= 2:
            runs.append(run)
        every = len(runs) == 1 and len(runs[0]) == len(blocks) and len(blocks) == sum(
            1 for c in kids.get(path, ()) if len(members[c]) >= MIN_BLOCK)
        for run in runs:
            groups.append(_group(path, run, every and path != ""))
            holds_group.add(path)
        if path in holds_group and path:
            holds_group.update(p for p in _ancestors(path))

    sigs: dict[str, frozenset] = {}

    def sig(block: str) -> frozenset:
        if block not in sigs:
            cut = len(block) + 1
            sigs[block] = frozenset((n[cut:], ops[n]) for n in members[block])
        return sigs[block]

    def _chained(prev: str, block: str) -> bool:
        before = set(members[prev])
        return any(src in before for n in members[block] for src in inputs[n])

    def _group(parent: str, run: list[str], whole: bool) -> Group:
        counted = Counter(sig(b) for b in run)
        typical = counted.most_common(1)[0][0]
        example = next(b for b in run if sig(b) == typical)
        seen = Counter(ops[n] for n in members[example])         # insertion order: first appearance in the block
        op_counts = sorted(seen.items(), key=lambda kv: -kv[1])   # stable: ties keep that order
        first, last = run[0].rsplit(".", 1)[-1], run[-1].rsplit(".", 1)[-1]
        gid = parent if whole else (f"{parent}.{first}…{last}" if parent else f"{first}…{last}")
        nodes = tuple(n for b in run for n in members[b])
        return Group(gid, parent, tuple(run), nodes, _kind(run[0]), tuple(op_counts),
                     sum(k for s, k in counted.items() if s != typical))

    visit("")
    return tuple(groups)


def _ancestors(path: str):
    parts = path.split(".")
    for i in range(1, len(parts)):
        yield ".".join(parts[:i])


__all__ = ["Group", "find_groups", "MIN_BLOCK", "SHORT_OPS"]
