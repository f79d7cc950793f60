"""The answer first (issue 43 item 3): a page shows its numbers with a caption of one sentence at most; a longer
explanation sits behind a help icon (``help=`` on the widget, metric or caption it concerns) or, placed after the
numbers it explains, in a closed "How is this computed?" expander that ``how`` writes. The text is the one the page
showed before, moved, not shortened. tests/test_app_captions.py holds every page to the rule."""

from __future__ import annotations

import streamlit as st

HOW = "How is this computed?"


def how(*texts: str | None, container=None, label: str = HOW) -> None:
    """A closed expander (in ``container``, default the page) holding each of ``texts`` as a caption, in order; empty
    ones are left out, and nothing is drawn when all are."""
    texts = tuple(t for t in texts if t)
    if not texts:
        return
    with (container if container is not None else st).expander(label):
        for text in texts:
            st.caption(text)
