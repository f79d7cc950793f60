"""Human-readable units, one place for the CLI, the app and the timing report."""

from __future__ import annotations


def format_bytes(b: float, digits: int = 2) -> str:
    """1536 → '1.50 KiB' (binary prefixes; whole bytes below 1 KiB)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:,.0f} {unit}" if unit == "B" else f"{b:,.{digits}f} {unit}"
        b /= 1024
    return f"{b} B"
