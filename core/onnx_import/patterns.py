"""Fused patterns, found before the graph is converted: x·sigmoid(x) is SiLU, x·hardsigmoid(x) Hardswish and the
erf form x·½(1 + erf(x/√2)) GELU, each one IR op in place of the ONNX nodes it absorbs. (Linear's bias, a MatMul
then an Add, is joined by the Add's mapping: ``mapping.elementwise._bias_add``.)"""

from __future__ import annotations

from math import prod

from .base import STANDARD_DOMAINS, _attr, _np
from .fold import _evaluate


class _Patterns:
    """The part of the converter that finds fused patterns: the nodes they absorb and the op each becomes."""

    def _only_user(self, t: str):
        uses = self.consumers.get(t, [])
        graph_out = t in {o.name for o in self.graph.output}
        return uses[0][0] if len(uses) == 1 and not graph_out else None

    def _find_patterns(self) -> None:
        np = _np()
        for node in self.order:
            if node.domain not in STANDARD_DOMAINS:
                continue
            if node.op_type in ("Sigmoid", "HardSigmoid") and len(node.input) == 1:
                if node.op_type == "HardSigmoid" and not (abs(_attr(node, "alpha", 0.2) - 1 / 6) < 1e-6
                                                          and abs(_attr(node, "beta", 0.5) - 0.5) < 1e-6):
                    continue
                mul = self._only_user(node.output[0])
                x = node.input[0]
                if mul is not None and mul.op_type == "Mul" and sorted(mul.input) == sorted([x, node.output[0]]):
                    self.absorbed.add(id(node))
                    self.patterns[id(mul)] = ("silu" if node.op_type == "Sigmoid" else "hardswish", x)
            elif node.op_type == "Erf":
                div = self.producer.get(node.input[0])
                if div is None or div.op_type != "Div" or self._only_user(div.output[0]) is not node:
                    continue
                x, c = div.input[0], self._const_scalar(div.input[1])
                add = self._only_user(node.output[0])
                if c is None or abs(c - np.sqrt(2)) > 1e-3 or add is None or add.op_type != "Add":
                    continue
                one = [t for t in add.input if t != node.output[0]]
                mul = self._only_user(add.output[0])
                if len(one) != 1 or self._const_scalar(one[0]) != 1.0 or mul is None or mul.op_type != "Mul":
                    continue
                half = self._only_user(mul.output[0])
                if x in mul.input and half is not None and half.op_type == "Mul":
                    other = [t for t in half.input if t != mul.output[0]]
                    if len(other) == 1 and self._const_scalar(other[0]) == 0.5:
                        self.absorbed.update({id(div), id(node), id(add), id(mul)})
                        self.as_values.update({div.input[1], one[0], other[0]})     # √2, 1 and 0.5
                        self.patterns[id(half)] = ("gelu", x)

    def _const_scalar(self, t: str) -> float | None:
        """The value of a one-element constant made by an initializer or a Constant node (before folding)."""
        for init in self.graph.initializer:
            if init.name == t and prod(init.dims) == 1:
                return float(self.onnx.numpy_helper.to_array(init).reshape(-1)[0])
        node = self.producer.get(t)
        if node is not None and node.op_type == "Constant":
            try:
                v = _evaluate(node, [], self.opset)[0]
            except Exception:  # noqa: BLE001
                return None
            return float(v.reshape(-1)[0]) if v.size == 1 else None
        return None
