"""Products of two tensors: ``matmul`` ([N, …, M, K] @ [N, …, K, P], the batch dims broadcast; ``torch.matmul``,
``torch.bmm``, ``@``) and ``sdpa`` (scaled dot-product attention, softmax(Q·Kᵀ/√E)·V). The composite attention
blocks, with their projections, are in ``attention``.

FLOPs: 1 MAC = 2 FLOPs. matmul's backward, dA = dY·Bᵀ and dB = Aᵀ·dY, takes the forward's MACs for each. sdpa
counts Q·Kᵀ and P·V as MACs, plus per score 5 FLOPs of softmax (max, subtract, exp, sum, divide) and 1 of scaling;
its backward one product per input gradient, and dP = dO·Vᵀ with the softmax backward (4 per score), which dQ and
dK share, counted once. Causal masking is counted as full (no skipped work).
"""

from __future__ import annotations

from ..registry import FLOPS_PER_MAC, Attr, Cost, Ctx, FormulaLine, OpRule, Saves, TorchExpr, numel, register
from ._common import _SDPA_SOFTMAX_BWD, _SDPA_SOFTMAX_FLOPS, _broadcast, _calls, _macs_flops_lines, _mul_formula, _n


def _matmul_shape(ctx: Ctx):
    a, b = ctx.ins
    if len(a) < 2 or len(b) < 2:
        raise ctx.fail("each input needs at least 2 dims besides the batch ([N, …, M, K] @ [N, …, K, P])")
    if a[-1] != b[-2]:
        raise ctx.fail(f"inner dimensions differ: [.., {a[-2]}, {a[-1]}] @ [.., {b[-2]}, {b[-1]}]")
    return _broadcast(ctx, a[:-2], b[:-2], "batch dims") + (a[-2], b[-1])


def _matmul_cost(ctx: Ctx) -> Cost:
    a, b = ctx.ins
    macs = numel(ctx.out[:-2]) * a[-2] * a[-1] * b[-1]
    f = FLOPS_PER_MAC * macs
    return Cost(macs=macs, flops=f, bwd_input=(f, f))   # dA = dY·Bᵀ, dB = Aᵀ·dY: same MACs each


def _matmul_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    a, b = ctx.ins
    return _macs_flops_lines(["batch dims", "M", "K", "P"], [numel(ctx.out[:-2]), a[-2], a[-1], b[-1]], batch)


def _same_rank(n, xs: list[str]) -> list[str]:
    """Insert singleton dims after the batch so every input has the same rank (the engine broadcasts per sample;
    ``torch.matmul`` alone would align the batch of one input with a per-sample dim of the other)."""
    rank = max(len(s) for s in n.in_shapes)
    return [x if len(s) == rank else f"{x}[:, {', '.join(['None'] * (rank - len(s)))}]"
            for x, s in zip(xs, n.in_shapes)]


def _matmul_import(c, n):
    return c.emit(c.scoped(n), "matmul", [c.ref(n.args[0]), c.ref(n.args[1])])


register(OpRule(
    "matmul", "matmul", (), _matmul_shape, _matmul_cost, _matmul_formula,
    saves=lambda ctx: Saves(inputs=(0, 1)), arity=(2, 2),
    doc="batched matrix product [N, …, M, K] @ [N, …, K, P] (torch.matmul / bmm)", torch="torch.matmul",
    work="linear", to_torch=lambda n, xs: TorchExpr(f"torch.matmul({', '.join(_same_rank(n, xs))})"),
    imports=_calls(_matmul_import, "operator.matmul", "torch.matmul", "torch.bmm", "matmul")))


def _sdpa_shape(ctx: Ctx):
    q, k, v = ctx.ins
    if len(q) < 2 or len(k) < 2 or len(v) < 2:
        raise ctx.fail("query, key and value need at least [N, L, E]")
    if q[-1] != k[-1]:
        raise ctx.fail(f"query and key embedding sizes differ: {q[-1]} vs {k[-1]}")
    if k[-2] != v[-2]:
        raise ctx.fail(f"key and value sequence lengths differ: {k[-2]} vs {v[-2]}")
    lead = _broadcast(ctx, _broadcast(ctx, q[:-2], k[:-2], "query/key"), v[:-2], "value")
    return lead + (q[-2], v[-1])


def _sdpa_cost(ctx: Ctx) -> Cost:
    q, k, v = ctx.ins
    b = numel(ctx.out[:-2])
    scores = b * q[-2] * k[-2]
    macs = scores * q[-1] + scores * v[-1]          # Q·Kᵀ, then P·V
    f = FLOPS_PER_MAC * macs + _SDPA_SOFTMAX_FLOPS * scores
    # dV = Pᵀ·dO (scores·Ev MACs), dP = dO·Vᵀ (scores·Ev), dQ = dS·K (scores·E), dK = dSᵀ·Q (scores·E)
    soft = _SDPA_SOFTMAX_BWD * scores
    # dP = dO·Vᵀ and the softmax backward give dS, which both dQ and dK need: counted once if either needs it
    dq = FLOPS_PER_MAC * scores * q[-1]
    dk = FLOPS_PER_MAC * scores * k[-1]
    dv = FLOPS_PER_MAC * scores * v[-1]
    return Cost(macs=macs, flops=f, bwd_input=(dq, dk, dv), bwd_shared=FLOPS_PER_MAC * scores * v[-1] + soft,
                bwd_shared_inputs=(0, 1))


def _sdpa_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    q, k, v = ctx.ins
    b = numel(ctx.out[:-2])
    macs = _mul_formula("MACs (Q·Kᵀ)", ["N", "heads", "L_q", "L_k", "E"], [batch, b, q[-2], k[-2], q[-1]])
    macs2 = _mul_formula("MACs (P·V)", ["N", "heads", "L_q", "L_k", "E_v"], [batch, b, q[-2], k[-2], v[-1]])
    sm = _mul_formula("softmax+scale FLOPs", ["N", "heads", "L_q", "L_k"], [batch, b, q[-2], k[-2]],
                      _SDPA_SOFTMAX_FLOPS, "6")
    total = FLOPS_PER_MAC * (macs.value + macs2.value) + sm.value
    return [macs, macs2, sm, FormulaLine("FLOPs", "2 × MACs + softmax",
                                         f"2 × {_n(macs.value + macs2.value)} + {_n(sm.value)}", total)]


def _sdpa_torch(n, xs):
    causal = ", is_causal=True" if n.attrs["is_causal"] else ""
    return TorchExpr(f"F.scaled_dot_product_attention({', '.join(_same_rank(n, xs))}{causal})")


def _sdpa_import(c, n):
    if c.value(n.kwargs.get("attn_mask")) is not None:
        c.warn(f"{n.name}: the attention mask is not costed")
    return c.emit(c.scoped(n), "sdpa", [c.ref(a) for a in n.args[:3]], is_causal=bool(n.kwargs.get("is_causal", False)))


register(OpRule(
    "sdpa", "attention", (Attr("is_causal", "bool", False),), _sdpa_shape, _sdpa_cost, _sdpa_formula,
    saves=lambda ctx: Saves(inputs=(0, 1, 2), output=True), arity=(3, 3),
    doc="scaled dot-product attention softmax(Q·Kᵀ/√E)·V; causal masking is counted as full (no skipped work)",
    torch="F.scaled_dot_product_attention", work="linear", to_torch=_sdpa_torch,
    imports=_calls(_sdpa_import, "torch.nn.functional.scaled_dot_product_attention")))
