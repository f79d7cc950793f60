"""Human-readable units, one place for the CLI, the app and the timing report."""

from __future__ import annotations

from numbers import Real

from .errors import CalcError


def format_bytes(b: float | None, digits: int = 2) -> str:
    """1536 → '1.50 KiB' (binary prefixes; whole bytes below 1 KiB); None → '—' (not known)."""
    if b is None:
        return "—"
    if isinstance(b, bool) or not isinstance(b, Real):
        raise CalcError(f"expected a number of bytes, not {type(b).__name__}", field="bytes", value=b)
    if b != b:
        return "nan B"
    if abs(b) > 1e300:                  # an integer no float holds, or ±inf
        return f"{'-' if b < 0 else ''}more than 1e300 B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:,.0f} {unit}" if unit == "B" else f"{b:,.{digits}f} {unit}"
        b /= 1024
    return f"{b} B"
