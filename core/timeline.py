"""Memory over one training step: the bytes alive at each step, forward layer by layer, backward in reverse, then the
optimizer update. Its peak is the calculator's training memory (``Report.totals["training_bytes"]``).

The step is PyTorch's steady state: ``zero_grad(set_to_none=True)`` (no gradients before the backward), forward, the
backward of a loss on the outputs, ``optimizer.step()`` (its state already exists). The parts:

- parameters (with buffers and any fp32 master copy) and optimizer state: alive throughout;
- the input batch: held by the caller throughout;
- saved activations: each tensor a backward reads lives from its forward until the backward of its earliest reader,
  with the fixed-width buffers (indices, masks, statistics) of the node that saved them;
- layer outputs: in the forward, a tensor still to be read by a later layer; in the backward, the gradients in flight
  (the output's gradient, and each input's gradient, made while the node runs; gradients of one tensor from several
  readers are summed into one);
- gradients: each weight's gradient, made at its layer's backward.

A view (reshape, flatten) shares its input's memory and passes its gradient through. Counts are per sample (element
counts, byte counts for fixed-width buffers) and do not depend on precision; ``Timeline`` turns them into bytes.
Not modelled: convolution workspace, allocator caching, the optimizer's temporaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import NamedTuple

from .graph import Compiled

PARTS = ("parameters", "optimizer", "input", "saved", "outputs", "gradients")
PART_LABELS = {"parameters": "parameters", "optimizer": "optimizer state", "input": "input batch",
               "saved": "activations saved for backward", "outputs": "layer outputs and gradients in flight",
               "gradients": "weight gradients"}


class Counts(NamedTuple):
    """One step, precision-free: what is alive while ``layer`` runs in ``phase``."""

    phase: str          # "forward", "backward" or "optimizer"
    layer: str
    saved: int          # activation elements per sample kept for the backward
    outputs: int        # other activation elements per sample: outputs still to be read, gradients in flight
    extra: int          # bytes per sample of fixed-width saved buffers (indices, masks)
    fixed: int          # bytes per batch of fixed-width saved buffers (BatchNorm statistics)
    grads: int          # weight-gradient elements made so far


@dataclass(frozen=True)
class Alive:
    """One tensor alive at a step, for 'what is alive at the peak'."""

    layer: str          # the layer that made it (for a gradient: the layer whose output it is the gradient of)
    part: str           # "input", "saved" or "outputs"
    elems: int          # per sample
    gradient: bool = False


def _roots(c: Compiled) -> tuple[dict, dict]:
    """The tensor (root) holding each name's memory in training, and each root's elements per sample."""
    root = {name: name for name in c.input_shapes}
    size = {name: prod(s) for name, s in c.input_shapes.items()}
    for n in c.nodes:
        view = n.rule.alias and not n.rule.copies_in_training
        root[n.name] = root[n.inputs[0]] if view else n.name
        if not view:
            size[n.name] = 0 if n.rule.stored else n.out_elems
    return root, size


def _reaches_an_output(c: Compiled) -> set[str]:
    """The nodes some output depends on: only they take part in the backward (an unused parameter gets no
    gradient, as Inception v3's auxiliary classifier when its output is left out)."""
    seen, todo = set(c.outputs), list(c.outputs)
    while todo:
        info = c.by_name.get(todo.pop())
        for s in info.inputs if info is not None else ():
            if s not in seen:
                seen.add(s)
                todo.append(s)
    return seen


def _walk(c: Compiled, capture: int | None = None):
    """Yield ``Counts`` for every step; with ``capture`` = a step index, return the tensors alive at that step."""
    root, size = _roots(c)
    by_index = {n.index: n for n in c.nodes}
    used = _reaches_an_output(c)                       # others get no gradient and keep nothing for a backward
    kept: dict[str, int] = {}                          # saved root -> forward index of its earliest saver
    for n in c.nodes:
        if n.needs_grad and n.name in used:
            for r in [root[n.inputs[i]] for i in n.saves.inputs] + ([root[n.name]] if n.saves.output else []):
                kept[r] = min(kept.get(r, n.index), n.index)
    last_read: dict[str, int] = {}
    for n in c.nodes:
        for s in n.inputs:
            last_read[root[s]] = n.index
    held = {root[o] for o in c.outputs}                # the outputs live until the loss has read them
    inputs = set(c.input_shapes)
    live: dict[str, str] = {}                          # root -> "saved" | "outputs" (inputs are apart)
    sums = {"saved": 0, "outputs": 0}
    extra = fixed = grads = 0
    step = 0

    def add(r: str, part: str) -> None:
        live[r] = part
        sums[part] += size[r]

    def drop(r: str) -> None:
        sums[live.pop(r)] -= size[r]

    def snapshot() -> list[Alive]:
        alive = [Alive(r, "input", size[r]) for r in c.input_shapes]
        return alive + [Alive(r.split("\0")[2], p, size[r], True) if r.startswith("\0") else Alive(r, p, size[r])
                        for r, p in live.items()]

    for name in c.input_shapes:
        if name in kept:
            kept.pop(name)                             # the input is held anyway: it is counted as the input
    for n in c.nodes:                                  # forward
        r = root[n.name]
        if r == n.name and size[r]:
            add(r, "saved" if r in kept else "outputs")
        if n.needs_grad and n.name in used:
            extra += n.saves.extra_bytes
            fixed += n.saves.fixed_bytes
        if capture == step:
            return snapshot()
        yield Counts("forward", n.name, sums["saved"], sums["outputs"], extra, fixed, grads)
        step += 1
        for s in {root[s] for s in n.inputs} | {r}:
            if s in live and live[s] == "outputs" and last_read.get(s, -1) <= n.index and s not in held:
                drop(s)
    for r in [r for r, p in live.items() if p == "outputs"]:
        drop(r)                                        # the loss has read the outputs
    grad: dict[str, str] = {}                          # tensor -> the key of its gradient's buffer in ``live``
    for o in c.outputs:
        info = c.by_name.get(o)
        if info is not None and info.needs_grad:
            key = "\0grad\0" + o
            size[key] = info.out_elems
            add(key, "outputs")
            grad[o] = key
    free_after: dict[int, list[str]] = {}
    for r, i in kept.items():
        free_after.setdefault(i, []).append(r)
    for i in sorted(by_index, reverse=True):           # backward
        n = by_index[i]
        if not n.needs_grad or n.name not in used:
            continue
        out_grad = grad.pop(n.name, None)
        view = n.rule.alias and not n.rule.copies_in_training
        made = []
        for j, (s, g) in enumerate(zip(n.inputs, n.grad_in)):
            if not g or s in inputs or c.by_name[s].rule.stored:
                continue
            if out_grad is None:
                break                                  # no gradient reaches this node: none flows from it
            if view and s not in grad:
                grad[s] = out_grad                     # a view's gradient is a view of its output's
                out_grad = None
                break
            key = f"\0grad\0{s}\0{i}\0{j}"
            size[key] = c.by_name[s].out_elems
            add(key, "outputs")
            made.append((s, key))
        grads += n.params.trainable
        if capture == step:
            return snapshot()
        yield Counts("backward", n.name, sums["saved"], sums["outputs"], extra, fixed, grads)
        step += 1
        if out_grad is not None and out_grad in live:
            drop(out_grad)
        for s, key in made:
            if s in grad:
                drop(key)                              # summed into the buffer a later reader made
            else:
                grad[s] = key
        for r in free_after.get(i, ()):
            if r in live:
                drop(r)
        extra -= n.saves.extra_bytes
        fixed -= n.saves.fixed_bytes
    for key in list(live):
        drop(key)
    if capture == step:
        return snapshot()
    yield Counts("optimizer", "step", 0, 0, 0, 0, grads)


@lru_cache(maxsize=256)
def counts(c: Compiled) -> tuple[Counts, ...]:
    """The steps of ``c``'s training step, precision-free (computed once per compiled network)."""
    return tuple(_walk(c))


def alive_at(c: Compiled, step: int) -> list[Alive]:
    """The tensors alive at step ``step`` of ``counts(c)``, the input batch first."""
    gen = _walk(c, capture=step)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value or []


@lru_cache(maxsize=1024)
def _frontier(c: Compiled, act: int, grad: int) -> tuple[tuple[int, int, int], ...]:
    """The steps that can be the peak at some batch: bytes = intercept + batch × slope, with (intercept, slope, step)
    kept only where no other step has both at least as large (the earliest step of equal ones)."""
    best: dict[tuple[int, int], int] = {}
    for k, s in enumerate(counts(c)):
        line = (s.grads * grad + s.fixed, (s.saved + s.outputs) * act + s.extra)
        best.setdefault(line, k)
    frontier, top = [], -1
    for (a, b), k in sorted(best.items(), key=lambda item: (-item[0][1], -item[0][0])):
        if a > top:
            frontier.append((a, b, k))
            top = a
    return tuple(frontier)


class Timeline:
    """A training step's memory at one batch size and precision, in bytes: ``rows()`` one per step, ``peak`` its
    largest total and ``peak_step`` the first step that reaches it."""

    def __init__(self, compiled: Compiled, batch: int, prec, optimizer_states: int):
        self.compiled, self.batch, self.precision = compiled, batch, prec
        c, p = compiled, prec
        self.parameters = (c.trainable + c.frozen + c.buffers) * p.weight + c.trainable * p.master
        self.optimizer = c.trainable * optimizer_states * p.state
        self.input = c.input_elems * batch * p.activation
        best = max(((a + batch * b, -k) for a, b, k in _frontier(c, p.activation, p.grad)))
        self.peak = self.parameters + self.optimizer + self.input + best[0]
        self.peak_step = -best[1]

    def parts(self, s: Counts) -> dict[str, int]:
        n, p = self.batch, self.precision
        return {"parameters": self.parameters, "optimizer": self.optimizer, "input": self.input,
                "saved": s.saved * n * p.activation + s.extra * n + s.fixed, "outputs": s.outputs * n * p.activation,
                "gradients": s.grads * p.grad}

    def rows(self) -> list[dict]:
        """One dict per step: step, phase, layer, each part's bytes, total."""
        out = []
        for k, s in enumerate(counts(self.compiled)):
            parts = self.parts(s)
            out.append({"step": k, "phase": s.phase, "layer": s.layer, **parts, "total": sum(parts.values())})
        return out

    @property
    def steps(self) -> int:
        return len(counts(self.compiled))

    @property
    def forward_steps(self) -> int:
        return sum(1 for s in counts(self.compiled) if s.phase == "forward")

    @property
    def peak_counts(self) -> Counts:
        return counts(self.compiled)[self.peak_step]

    @property
    def peak_where(self) -> str:
        s = self.peak_counts
        return "the optimizer step" if s.phase == "optimizer" else f"the {s.phase} of {s.layer}"

    def alive_at_peak(self) -> list[tuple[str, int]]:
        """(what, bytes) for each activation tensor alive at the peak, largest first; input batch included."""
        n, a = self.batch, self.precision.activation
        items = [(f"gradient of {t.layer}'s output" if t.gradient else
                  "the input batch" if t.part == "input" else f"{t.layer}'s output", t.elems * n * a)
                 for t in alive_at(self.compiled, self.peak_step)]
        return sorted(items, key=lambda item: -item[1])
