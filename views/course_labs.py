"""Course labs: the questions of five ML-systems course reports, each with its own controls, the engine's answer, and
a few lines on how to read it (and where a report went wrong, one line each). Only the chosen lab runs.

Each lab is a module of ``ui.labs`` (its numbers, then its layout); torch loads only when lab 2's timing button is
pressed.
"""

import streamlit as st

import core
from ui.labs import LABS, MODULES, NEEDS
from ui.state import devices, page

page("Course labs")
db = devices()
st.caption(core.CONVENTION, help="Each lab has its own controls; the sidebar is for the other pages.")
asked = st.query_params.get("lab", "")             # ?lab=3 opens lab 3: a link a teacher can hand out
if "lab" not in st.session_state and asked.isdigit() and int(asked) in LABS:
    st.session_state["lab"] = int(asked)


def _lab_to_url() -> None:
    """Before the rerun, so the sidebar's link (drawn before this control) already names the new lab."""
    st.query_params["lab"] = str(st.session_state.get("lab") or 1)


lab = st.segmented_control("Lab", list(LABS), format_func=LABS.get, default=1, required=True, key="lab",
                           on_change=_lab_to_url) or 1
st.query_params["lab"] = str(lab)

missing = [i for i in NEEDS[lab] if i not in db.devices]
if missing:                            # a built-in entry that did not load (the Devices page says why)
    st.error(f"This lab needs {', '.join(missing)} from device_specs.json, which did not load.")
    st.stop()
try:
    MODULES[lab].show(db)
except core.CalcError as e:
    st.error(f"This lab cannot compute that: {e}")
