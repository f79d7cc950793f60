"""What every lab shares: the question, the how-to-read bullets, the button that opens a network in the calculator,
and a few formatting helpers. Each lab's numbers stay in its own module."""

from __future__ import annotations

import streamlit as st

from core.api import estimate
from ui.state import choose_model

MIB = 2 ** 20
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")


def shape(dims) -> str:
    return "×".join(map(str, dims))


def in_words(n: int) -> str:
    """A count as prose writes it: 11 → "eleven"; above twenty, digits."""
    return WORDS[n] if 0 <= n < len(WORDS) else f"{n:,}"


def number(x: float, digits: int = 3) -> str:
    return f"{x:,.{digits}f}"


def preferred(options: list, value) -> int:
    """The position of ``value`` among ``options`` (the first one if it is not there)."""
    return options.index(value) if value in options else 0


def question(text: str) -> None:
    st.markdown(f"**Question.** {text}")


def reading(*lines: str) -> None:
    """How to read the numbers: one bullet per line, in a closed "How to read it" expander after them (the lab answers
    first: ``ui.explain``)."""
    with st.expander("How to read it"):
        st.markdown("\n".join(f"- {line}" for line in lines))


def open_button(name: str, key: str) -> None:
    """Make ``name`` the sidebar's network (the sidebar is already drawn: it takes effect on the rerun)."""
    if st.button(f"Open {name} in the calculator", key=key, help="Sets the sidebar's network; every page follows."):
        choose_model(name)
        st.rerun()


def predicted_beside_bound(report, device, dtype: str = "fp32") -> dict:
    """The forward pass of ``report`` on ``device``: the fitted prediction where the time model applies (``None``
    and the reason where it does not) beside the PALEO bound at PPP 1 (the datasheet peak)."""
    auto = estimate(report, device, batch_size=report.batch_size, dtype=dtype)
    bound = auto.bound if auto.bound is not None else auto
    if auto.variant != "predicted":
        return {"predicted ms": None, "typical ±%": None, "PALEO bound ms": bound.totals["forward_s"] * 1e3,
                "predicted ÷ bound": None, "why": auto.variant_reason}
    p, b = auto.totals["forward_s"], bound.totals["forward_s"]
    return {"predicted ms": p * 1e3, "typical ±%": auto.typical_error["median"] * 100,
            "PALEO bound ms": b * 1e3, "predicted ÷ bound": p / b if b else None, "why": auto.variant_reason}
