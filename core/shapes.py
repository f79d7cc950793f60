"""The per-sample input shape a user types ('3x224x224', '3,224,224', (3, 224, 224), 784), read and checked."""

from __future__ import annotations

from typing import Any

from .errors import NetworkError
from .registry import MAX_DIM


def parse_shape(text: Any) -> tuple[int, ...]:
    """'3x224x224', '3,224,224', (3, 224, 224), 784 → (3, 224, 224): the per-sample input shape, batch excluded.
    Each dimension is a whole number from 1 to ``MAX_DIM``."""
    if isinstance(text, (tuple, list)):
        if not all(isinstance(p, int) and not isinstance(p, bool) for p in text):
            raise NetworkError("input shape must be whole numbers, like (3, 224, 224)", field="input_shape",
                               value=text)
        parts: list = list(text)
    elif isinstance(text, int) and not isinstance(text, bool):
        parts = [text]
    elif isinstance(text, str):
        parts = [p for p in text.lower().replace("×", "x").replace(",", "x").replace(" ", "").split("x") if p]
    else:
        raise NetworkError(f"input shape must be text like 3x224x224 or a tuple of whole numbers, not "
                           f"{type(text).__name__}", field="input_shape", value=text)
    try:
        shape = tuple(p if isinstance(p, int) else int(p) for p in parts)
    except (TypeError, ValueError):     # not digits, or more digits than Python converts
        raise NetworkError("input shape must look like 3x224x224 (batch excluded)", field="input_shape",
                           value=text) from None
    if not shape or any(d < 1 for d in shape):
        raise NetworkError("input shape needs positive dimensions, like 3x224x224", field="input_shape", value=text)
    if any(d > MAX_DIM for d in shape):
        raise NetworkError(f"input shape has an absurdly large dimension (limit {MAX_DIM:,})", field="input_shape",
                           value=text)
    return shape
