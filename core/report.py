"""An analysis at one batch size, precision and optimizer: totals and one row per node.

Built from a ``Compiled`` network by arithmetic alone: totals are O(1) (the training step's memory walk,
``core.timeline``, runs once per network), the per-layer rows are built on first use.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, NamedTuple

from .errors import CalcError, NetworkError
from .graph import Compiled, NodeInfo, compile_network
from .ir import Network
from .precision import Precision, optimizer_states, precision
from .registry import FLOPS_PER_MAC, MAX_DIM, FormulaLine
from .timeline import PART_LABELS, Timeline

CONVENTION = "1 multiply-add (MAC) = 2 FLOPs; MACs count conv, linear, matmul and attention multiply-adds."

MAX_BATCH = MAX_DIM   # 16,777,216 samples; a batch of 10^9 is rejected as absurd


def check_batch(batch_size) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise NetworkError("batch size must be an integer", field="batch_size", value=batch_size)
    if batch_size < 1:
        raise NetworkError("batch size must be at least 1", field="batch_size", value=batch_size)
    if batch_size > MAX_BATCH:
        raise NetworkError(f"batch size is absurdly large (limit {MAX_BATCH:,})", field="batch_size", value=batch_size)
    return batch_size


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


class Layer(NamedTuple):
    """One node's numbers at the report's batch size and precision (a NamedTuple: a ResNet-152 table is 500 rows)."""

    name: str
    op: str
    category: str
    inputs: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]     # batch first
    params: int
    trainable_params: int
    buffers: int
    macs: int
    flops: int
    backward_flops: int
    backward_input_flops: int
    backward_weight_flops: int
    weight_bytes: int                 # parameters and buffers read
    input_bytes: int
    output_bytes: int
    activation_bytes: int             # memory the output takes (0 for a view)
    backward_bytes: int               # bytes the backward pass moves: gradients in/out, saved tensors, weights

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.input_bytes + self.output_bytes

    @property
    def arithmetic_intensity(self) -> float | None:
        """Forward FLOPs per byte moved (weights + inputs + outputs); None for a layer that moves nothing."""
        return _ratio(self.flops, self.bytes)

    def as_dict(self) -> dict:
        d = self._asdict()
        d["output_shape"] = list(self.output_shape)
        d["input_shapes"] = [list(s) for s in self.input_shapes]
        d["inputs"] = list(self.inputs)
        d["bytes"] = self.bytes
        d["arithmetic_intensity"] = self.arithmetic_intensity
        return d


class Report:
    """``analyze()``'s result. ``totals`` is a dict; ``layers`` a list of ``Layer``; ``to_pandas()`` a DataFrame."""

    def __init__(self, compiled: Compiled, batch_size: int = 1, dtype: str = "fp32", optimizer: str = "sgd_momentum"):
        if not isinstance(compiled, Compiled):
            raise NetworkError("a Report is made from a compiled network (core.compile_network)", field="compiled",
                               value=type(compiled).__name__)
        for field, v in (("dtype", dtype), ("optimizer", optimizer)):
            if not isinstance(v, str):
                raise NetworkError(f"expected a name, not {type(v).__name__}", field=field, value=v)
        self.compiled = compiled
        self.batch_size = check_batch(batch_size)
        self.precision: Precision = precision(dtype)
        self.dtype = self.precision.name
        self.optimizer = optimizer
        self._states = optimizer_states(optimizer)

    @property
    def name(self) -> str:
        return self.compiled.network.name

    @property
    def input_shape(self) -> tuple[int, ...]:
        return next(iter(self.compiled.input_shapes.values()))

    @cached_property
    def totals(self) -> dict:
        c, n, p = self.compiled, self.batch_size, self.precision
        params = c.trainable + c.frozen
        param_bytes = params * p.weight
        buffer_bytes = c.buffers * p.weight
        activation_bytes = c.peak_live * n * p.activation
        saved = c.saved * n * p.activation + c.saved_extra_bytes * n + c.saved_fixed_bytes
        grads = c.trainable * p.grad
        master = c.trainable * p.master       # frozen parameters need no fp32 master copy
        opt = c.trainable * self._states * p.state
        traffic = c.weight_elems_read * p.weight + c.moved_elems * n * p.activation
        flops = c.flops * n
        step = self.timeline
        return {
            "params": params,
            "trainable_params": c.trainable,
            "non_trainable_params": c.frozen,
            "buffers": c.buffers,
            "macs": c.macs * n,
            "flops": flops,
            "backward_flops": c.bwd_flops * n,
            "training_flops": (c.flops + c.bwd_flops) * n,
            "param_bytes": param_bytes,
            "buffer_bytes": buffer_bytes,
            "input_bytes": c.input_elems * n * p.activation,
            "output_bytes": c.output_elems * n * p.activation,
            "activation_bytes": activation_bytes,          # inference: peak of live activations
            "activation_peak_at": c.peak_at,
            "inference_bytes": param_bytes + buffer_bytes + activation_bytes,
            "saved_activation_bytes": saved,               # training: kept from forward for backward
            "gradient_bytes": grads,
            "master_weight_bytes": master,
            "optimizer_bytes": opt,
            "training_bytes": step.peak,                   # training: the peak of a step's memory timeline
            "training_peak_at": step.peak_where,
            "memory_traffic_bytes": traffic,
            "arithmetic_intensity": _ratio(flops, traffic),
        }

    @cached_property
    def timeline(self) -> Timeline:
        """Memory over one training step (``core.timeline``); its peak is ``totals["training_bytes"]``."""
        return Timeline(self.compiled, self.batch_size, self.precision, self._states)

    def memory_timeline(self) -> list[dict]:
        """The bytes alive at each step of a training step, by part: one dict per step (``core.timeline``)."""
        return self.timeline.rows()

    @cached_property
    def layers(self) -> list[Layer]:
        return [self._layer(info) for info in self.compiled.nodes]

    def _layer(self, i: NodeInfo) -> Layer:
        n, p = self.batch_size, self.precision
        (params, trainable, buffers, macs, flops, bwd, bwd_in, bwd_w, weights, in_e, out_e, bwd_a, bwd_x,
         bwd_we) = i.per_sample
        return Layer(i.name, i.op, i.rule.category, i.inputs, i.in_shapes, (n,) + i.out_shape,
                     params, trainable, buffers, macs * n, flops * n, bwd * n, bwd_in * n, bwd_w * n,
                     weights * p.weight, in_e * n * p.activation, out_e * n * p.activation, out_e * n * p.activation,
                     (bwd_a * p.activation + bwd_x) * n + bwd_we * p.weight)

    def _info(self, name: str) -> NodeInfo:
        if not isinstance(name, str):
            raise NetworkError(f"a layer is named by a string, not {type(name).__name__}", field="layer", value=name)
        info = self.compiled.by_name.get(name)
        if info is None:
            raise NetworkError("no such layer", node=name)
        return info

    def layer(self, name: str) -> Layer:
        return self._layer(self._info(name))

    def explain(self, name: str) -> list[FormulaLine]:
        """The pen-and-paper arithmetic of one layer at this batch size, numbers substituted."""
        info = self._info(name)
        return info.rule.formula(info.ctx, self.batch_size)

    def with_batch(self, batch_size: int) -> "Report":
        return Report(self.compiled, batch_size, self.dtype, self.optimizer)

    def flops_by_op(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for layer in self.layers:
            out[layer.op] = out.get(layer.op, 0) + layer.flops
        return out

    def to_dict(self) -> dict:
        return {
            "model": self.name,
            "input_shape": list(self.input_shape),
            "batch_size": self.batch_size,
            "dtype": self.dtype,
            "optimizer": self.optimizer,
            "convention": CONVENTION,
            "totals": self.totals,
            "layers": [layer.as_dict() for layer in self.layers],
        }

    def to_pandas(self):
        import pandas as pd  # lazily: core itself needs no pandas

        rows = [layer.as_dict() for layer in self.layers]
        df = pd.DataFrame(rows)
        df["output_shape"] = df["output_shape"].map(lambda s: "×".join(map(str, s)))
        return df.drop(columns=["input_shapes"])

    def __repr__(self) -> str:
        t = self.totals
        return (f"<Report {self.name} batch={self.batch_size} {self.dtype}: {t['params']:,} params, "
                f"{t['macs']:,} MACs = {t['flops']:,} FLOPs>")


__all__ = ["Report", "Layer", "CONVENTION", "FLOPS_PER_MAC", "PART_LABELS", "check_batch"]


def as_report(model: Any, batch_size: int, dtype: str, optimizer: str) -> Report:
    """The analysis an estimate works on: a ``Report`` (re-batched as asked) or a ``Network``. Names, files and
    PyTorch modules are loaded by ``core.api`` (``core.estimate``), which calls ``core.paleo``."""
    if isinstance(model, Report):
        if (model.batch_size, model.dtype, model.optimizer) == (batch_size, dtype, optimizer):
            return model
        return Report(model.compiled, batch_size, dtype, optimizer)
    if isinstance(model, Network):
        return Report(compile_network(model), batch_size, dtype, optimizer)
    raise CalcError("an estimate works on a Report or a Network; load names, files and modules with "
                    "core.estimate (core.api)", field="model", value=type(model).__name__)
