"""Numeric formats and optimizers: how many bytes each kind of tensor takes.

One table, one line per format, so a person can check a memory figure by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import NetworkError


@dataclass(frozen=True)
class Precision:
    name: str
    activation: int     # bytes per activation element (inputs, outputs, saved tensors)
    weight: int         # bytes per parameter as the forward pass reads it
    master: int         # extra bytes per parameter for an fp32 master copy (mixed precision), else 0
    grad: int           # bytes per gradient element
    state: int          # bytes per optimizer-state element
    compute: str        # which peak of a device this format runs at
    note: str


PRECISIONS: dict[str, Precision] = {p.name: p for p in (
    Precision("fp64", 8, 8, 0, 8, 8, "fp64", "IEEE double everywhere"),
    Precision("fp32", 4, 4, 0, 4, 4, "fp32", "IEEE single everywhere"),
    Precision("tf32", 4, 4, 0, 4, 4, "tf32", "stored as fp32; matrix math on tensor cores with a 10-bit mantissa"),
    Precision("bf16", 2, 2, 0, 2, 2, "bf16", "pure bfloat16: weights, activations, gradients and optimizer state"),
    Precision("fp16", 2, 2, 0, 2, 2, "fp16",
              "pure half precision: weights, activations, gradients and optimizer state"),
    Precision("int8", 1, 1, 0, 4, 4, "int8",
              "inference format; for training, gradients and optimizer state are assumed fp32 (quantisation-aware)"),
    Precision("mixed", 2, 2, 4, 2, 4, "fp16",
              "mixed precision (Micikevicius et al. 2018): fp16 weights, activations and gradients; "
              "fp32 master weights and optimizer state"),
)}

@dataclass(frozen=True)
class Optimizer:
    """An optimizer's cost per trainable parameter: the state it keeps, and one update step's FLOPs and accesses
    (weight-sized reads and writes, gradient reads, state reads and writes)."""

    name: str
    states: int           # state elements kept per parameter
    update_flops: int
    weight_accesses: int
    grad_accesses: int
    state_accesses: int
    how: str
    torch: tuple              # (torch.optim class, its keyword arguments) that live timing runs


OPTIMIZERS: dict[str, Optimizer] = {o.name: o for o in (
    Optimizer("sgd", 0, 2, 2, 1, 0, "w −= lr·g: multiply, subtract; read w, g; write w", ("SGD", (("lr", 1e-3),))),
    Optimizer("sgd_momentum", 1, 4, 2, 1, 2, "v = μv + g; w −= lr·v; read w, g, v; write w, v",
              ("SGD", (("lr", 1e-3), ("momentum", 0.9)))),
    Optimizer("adam", 2, 13, 2, 1, 4, "m, v moments (7), bias corrections (2), w −= lr·m̂/(√v̂+ε) (4); r/w m, v",
              ("Adam", (("lr", 1e-4),))),
    Optimizer("adamw", 2, 15, 2, 1, 4, "Adam + decoupled weight decay w −= lr·λ·w (2)", ("AdamW", (("lr", 1e-4),))),
)}


def precision(name: str) -> Precision:
    p = PRECISIONS.get(str(name).lower())
    if p is None:
        raise NetworkError(f"unknown precision; choose one of {', '.join(PRECISIONS)}", field="dtype", value=name)
    return p


def optimizer(name: str) -> Optimizer:
    o = OPTIMIZERS.get(str(name).lower())
    if o is None:
        raise NetworkError(f"unknown optimizer; choose one of {', '.join(OPTIMIZERS)}", field="optimizer", value=name)
    return o


def optimizer_states(name: str) -> int:
    """State elements per trainable parameter (0 for plain SGD, 2 for Adam's moments)."""
    return optimizer(name).states
