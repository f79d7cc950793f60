"""The error types the engine raises for bad input, and for a measurement run that did not run to its end.

Every message names what is wrong and where: the node (layer), the field, the value and the reason, e.g.
``conv2: kernel_size 5×5 is larger than its padded input 3×3``. Callers (CLI, app) print ``str(err)`` and keep
whatever the user had; nothing in ``core`` lets a raw traceback through for bad input. A caller that must tell one
outcome from another catches a subclass; no code reads the message text to decide what happened.
"""

from __future__ import annotations

MAX_SHOWN = 200     # characters of a text value a message shows; a longer one is cut, saying its length
MAX_REPR = 1000     # characters of any other value's repr
MAX_MESSAGE = 2000  # characters of a whole message (a reason that quotes a huge user text is cut)


def digits(v: int) -> int:
    """Decimal digits of ``v`` without converting it to text (Python refuses 4,300+ digits): 2^(b−1) has d0 digits,
    so ``v`` has d0 or d0 + 1."""
    v = abs(v)
    d0 = int((v.bit_length() - 1) * 0.30102999566398120) + 1
    return d0 + (v >= 10 ** d0)


def show(value) -> str:
    """``repr(value)`` for a message: one line, short, and never an error itself (a 5,000-digit integer, whose
    ``repr`` Python refuses, shows its size; a megabyte of text its first ``MAX_SHOWN`` characters and length)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 512:
        return f"<an integer of {digits(value):,} digits>"
    if isinstance(value, str) and len(value) > MAX_SHOWN:
        return one_line(repr(value[:MAX_SHOWN]) + f"… ({len(value):,} characters)")
    try:
        text = repr(value)
    except Exception:   # noqa: BLE001 — a value whose repr fails still gets a message
        text = f"<{type(value).__name__}>"
    return one_line(text if len(text) <= MAX_REPR else text[:MAX_REPR] + f"… ({len(text):,} characters)")


def one_line(text: str) -> str:
    """``text`` with line breaks written as ``\\n``: every message the CLI and the app print is one line."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


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
            where.append(str(self.node)[:MAX_SHOWN])
        if self.field is not None:
            shown = "" if self.value is None else f" = {show(self.value)}"
            where.append(f"field '{str(self.field)[:MAX_SHOWN]}'{shown}")
        prefix = ", ".join(where)
        text = one_line(f"{prefix}: {self.reason}" if prefix else str(self.reason))
        return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


class NetworkError(CalcError):
    """An invalid network, attribute, input shape, batch size or JSON document."""


class DeviceError(CalcError):
    """An invalid or unknown device or interconnect, or a precision the device does not have."""


class Cancelled(CalcError):
    """A timing or calibration run stopped because its ``cancel`` flag was set (the user pressed Stop)."""


class WontFit(CalcError):
    """A run refused before it starts: the memory model says it needs more memory than may be used here."""
