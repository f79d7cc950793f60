"""The error types the engine raises for bad input, and for a measurement run that did not run to its end.

Every message names what is wrong and where: the node (layer), the field, the value and the reason, e.g.
``conv2: kernel_size 5×5 is larger than its padded input 3×3``. Callers (CLI, app) print ``str(err)`` and keep
whatever the user had; nothing in ``core`` lets a raw traceback through for bad input. A caller that must tell one
outcome from another catches a subclass; no code reads the message text to decide what happened.
"""

from __future__ import annotations


class CalcError(ValueError):
    """Base of every input error the calculator reports (bad network, bad device, bad estimate settings)."""

    def __init__(self, reason: str, *, node: str | None = None, field: str | None = None, value=None):
        self.node = node
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(self._message())

    def _message(self) -> str:
        where = []
        if self.node is not None:
            where.append(str(self.node))
        if self.field is not None:
            where.append(f"field '{self.field}'" + ("" if self.value is None else f" = {self.value!r}"))
        prefix = ", ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class NetworkError(CalcError):
    """An invalid network, attribute, input shape, batch size or JSON document."""


class DeviceError(CalcError):
    """An invalid or unknown device or interconnect, or a precision the device does not have."""


class Cancelled(CalcError):
    """A timing or calibration run stopped because its ``cancel`` flag was set (the user pressed Stop)."""


class WontFit(CalcError):
    """A run refused before it starts: the memory model says it needs more memory than may be used here."""
