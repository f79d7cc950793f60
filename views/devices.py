"""Devices: the hardware database with each figure's source, an overlay of chosen devices' rooflines, the user's own
devices (add, edit, remove in a validated form) and their import / export as JSON."""

import json

import altair as alt
import pandas as pd
import streamlit as st

from core.devices import KINDS, PRECISION_KEYS, USER_PATH
from core.errors import DeviceError
from ui.charts import roofline_chart, show
from ui.devices_form import (F_BW, F_ID, F_KIND, F_MEM, F_NAME, F_NOTE, F_PEAK, F_SOURCE, F_VENDOR, F_YEAR,
                             FASTEST, FIELD_OF_KEY, MAX_IMPORT_BYTES, SURVEY, blank_form, build_spec, check_new,
                             device_table, explain, form_values, link_table, merge, overlay, parse_import, save,
                             user_count)
from ui.state import DEFAULTS, DEVICE, devices, page

EDIT, MSG, NEW = "device_edit", "device_message", ""   # the "Edit" pick ("" = a new device); the last outcome


def _say(kind: str, text: str, field: str | None = None, where: str = "form") -> None:
    st.session_state[MSG] = {"kind": kind, "text": text, "field": field, "where": where}


def _select_device(old: str, new: str | None) -> None:
    """Keep the sidebar's device valid when one of the user's devices is renamed or removed."""
    if st.session_state.get(DEVICE) == old:
        st.session_state[DEVICE] = new or DEFAULTS[DEVICE]


# -- callbacks: run before the script, so the sidebar drawn next already sees the changed database ----------------

def _on_pick() -> None:
    d = devices().devices.get(st.session_state.get(EDIT))
    st.session_state.update(form_values(d) if d is not None and d.user else blank_form())
    st.session_state.pop(MSG, None)


def _on_submit() -> None:
    db = devices()
    editing = st.session_state.get(EDIT) or None
    old = db.devices.get(editing) if editing else None
    spec = build_spec({k: st.session_state.get(k) for k in blank_form()}, keep=old.to_dict() if old else None)
    try:
        check_new(db, spec, editing)
    except DeviceError as e:
        field, text = explain(e, hint=False)
        _say("error", f"Not saved. {text}", field)
        return
    try:
        new = db.add(spec)
        if old is not None and spec["id"] != editing:      # renamed: the old entry goes
            new = new.remove(editing)
        save(new, USER_PATH)
    except DeviceError as e:
        field, text = explain(e)
        _say("error", f"Not saved. {text}", field)
        return
    except OSError as e:
        _say("error", f"Not saved: cannot write {USER_PATH} ({e.strerror}).")
        return
    devices.clear()
    if old is not None and spec["id"] != editing:
        _select_device(editing, spec["id"])
    st.session_state[EDIT] = spec["id"]
    _say("success", f"Saved {spec['name']} ({spec['id']}) to {USER_PATH}. It is in the sidebar's Device list and "
                    f"on every page." if old is None else f"Updated {spec['name']} ({spec['id']}).")


def _on_remove() -> None:
    db = devices()
    pick = st.session_state.get(EDIT)
    d = db.devices.get(pick)
    if d is None or not d.user:
        _say("error", "Pick one of your own devices to remove; built-in devices cannot be removed.")
        return
    try:
        save(db.remove(pick), USER_PATH)
    except OSError as e:
        _say("error", f"Not removed: cannot write {USER_PATH} ({e.strerror}).")
        return
    devices.clear()
    _select_device(pick, None)
    st.session_state[EDIT] = NEW
    st.session_state.update(blank_form())
    _say("success", f"Removed {d.name} ({d.id}).")


def _show_message(where: str, field: str | None = None) -> None:
    """The last outcome, shown once: an invalid field's message under that field, the rest where they belong."""
    m = st.session_state.get(MSG)
    if not m or m["where"] != where or m["field"] != field:
        return
    getattr(st, m["kind"])(m["text"])
    st.session_state.pop(MSG)


def _inline(key: str) -> None:
    """The form's error for the field this widget fills (``peak_flops`` as a whole shows under the peaks)."""
    m = st.session_state.get(MSG)
    if m and m["where"] == "form" and m["field"] == FIELD_OF_KEY[key]:
        _show_message("form", m["field"])


# -- the page -------------------------------------------------------------------------------------------------

page("Devices")
db = devices()

st.dataframe(device_table(db), hide_index=True, placeholder="", width="stretch", key="device_table",
             column_config={"source": st.column_config.LinkColumn("source", display_text=r"https?://([^/]+)",
                                                                 help="The datasheet or page each figure is from"),
                            "year": st.column_config.NumberColumn("year", format="%d"),
                            "yours": st.column_config.CheckboxColumn("yours", help="Added by you (editable below)")})
st.caption("Dense peaks (int8 in ops/s); an empty cell means the device has no such precision. Click a column "
           "header to sort.")
if db.problems:
    st.warning("Entries left out: " + "; ".join(db.problems))

# -- roofline overlay -----------------------------------------------------------------------------------------
st.subheader("Rooflines compared")
# the widget's state, set before it is drawn: the survey by default, and never an id that is gone (removed)
st.session_state["device_overlay"] = [i for i in st.session_state.get("device_overlay", SURVEY) if i in db.devices]
o1, o2 = st.columns([4, 1])
chosen = o1.multiselect("Devices", list(db.devices), key="device_overlay", format_func=lambda i: db.devices[i].name,
                        help="Default: the devices of the course survey, GeForce 256 to TPU v3, and the V100.")
compute = o2.selectbox("Precision", [*PRECISION_KEYS, FASTEST], index=PRECISION_KEYS.index("fp32"),
                       key="overlay_precision", format_func=lambda p: "fastest each has" if p == FASTEST else p,
                       help="'fastest each has': every device at its fastest floating-point peak, as in a survey "
                            "figure (the label names the precision).")
roofs, order, ridges, left_out = overlay(db, chosen, compute)
if left_out:
    st.info(f"Left out (no {compute} peak): " + "; ".join(f"{d.name} ({why})" for d, why in left_out) +
            ". Pick their precision, or 'fastest each has'.")
if roofs.empty:
    st.info("Choose one or more devices that have this precision to draw their rooflines.")
else:
    chart = roofline_chart(roofs, pd.DataFrame()).encode(
        color=alt.Color("device:N", title="device", sort=order),
        tooltip=["device", alt.Tooltip("intensity:Q", format=".3g"), alt.Tooltip("flops:Q", format=".3s")])
    show(chart, "overlay_chart", f"rooflines_{compute}")
    st.dataframe(ridges, hide_index=True, width="stretch", key="ridge_table",
                 column_config={"ridge FLOP/byte": st.column_config.NumberColumn(format="%.2f"),
                                "year": st.column_config.NumberColumn(format="%d")})
    st.caption("Ridge point = peak ÷ memory bandwidth: work with fewer FLOPs per byte than this is memory-bound on "
               "that device.")

# -- the user's own devices -----------------------------------------------------------------------------------
st.subheader("Your devices")
mine = [d.id for d in db.devices.values() if d.user]
if st.session_state.get(EDIT, NEW) not in [NEW, *mine]:
    st.session_state[EDIT] = NEW
for k, v in blank_form().items():
    if k not in st.session_state:
        st.session_state[k] = v
p1, p2 = st.columns([3, 1], vertical_alignment="bottom")
pick = p1.selectbox("Edit", [NEW, *mine], key=EDIT, on_change=_on_pick,
                    format_func=lambda i: "— a new device —" if i == NEW else f"{db.devices[i].name} ({i})",
                    help="Your own devices; choosing one fills the form below.")
p2.button("Remove" if pick == NEW else f"Remove {pick}", key="device_remove", on_click=_on_remove,
          disabled=pick == NEW, help="Removes the device picked under 'Edit' from your devices file.")
st.caption(f"Your devices are kept in {USER_PATH}. Built-in devices (device_specs.json) cannot be edited or "
           "removed here: add your own with another id instead, e.g. a measured variant.")
_show_message("form")

with st.form("device_form"):
    c1, c2, c3, c4, c5 = st.columns([2, 3, 2, 1, 1])
    c1.text_input("Id", key=F_ID, max_chars=64, placeholder="my-gpu",
                  help="Lower-case letters, digits and hyphens; used on the command line (--device).")
    c2.text_input("Name", key=F_NAME, max_chars=120, placeholder="My GPU (measured)")
    c3.text_input("Vendor", key=F_VENDOR, max_chars=60)
    c4.selectbox("Kind", KINDS, key=F_KIND)
    c5.number_input("Year", min_value=1990, max_value=2100, step=1, key=F_YEAR)
    for key in (F_ID, F_NAME, F_VENDOR):        # under the row, full width: the id's message is long
        _inline(key)
    st.markdown("**Peak TFLOP/s** per precision (dense; int8 in TOP/s; 0 = not supported)")
    for col, (k, key) in zip(st.columns(len(PRECISION_KEYS)), F_PEAK.items()):
        with col:
            st.number_input(f"{k} TFLOP/s", min_value=0.0, max_value=1e6, step=0.1, format="%g", key=key)
            _inline(key)
    _show_message("form", "peak_flops")
    m1, m2 = st.columns(2)
    with m1:
        st.number_input("Memory bandwidth (GB/s)", min_value=0.0, max_value=1e6, step=10.0, format="%g", key=F_BW)
        _inline(F_BW)
    with m2:
        st.number_input("Memory (GiB, 0 = not given)", min_value=0.0, max_value=1e6, step=1.0, format="%g",
                        key=F_MEM)
        _inline(F_MEM)
    st.text_input("Source", key=F_SOURCE, max_chars=500, placeholder="https://… datasheet, or 'measured'")
    _inline(F_SOURCE)
    st.text_area("Note", key=F_NOTE, max_chars=2000, height=68)
    st.form_submit_button("Save device", key="device_save", on_click=_on_submit, type="primary")
if (m := st.session_state.get(MSG)) and m["where"] == "form":  # a field the form has no place for (kind, year, …)
    _show_message("form", m["field"])

# -- import / export ------------------------------------------------------------------------------------------
st.subheader("Import and export")
n_dev, n_link = user_count(db)
e1, e2 = st.columns(2)
e1.download_button("Export your devices (JSON)", json.dumps(db.user_entries(), indent=1), "cnn_calc_devices.json",
                   "application/json", key="device_export", disabled=not (n_dev or n_link))
e1.caption(f"{n_dev} device(s) and {n_link} interconnect(s) of yours. The file imports here or goes in "
           f"{USER_PATH.name} under $CNN_CALC_HOME.")
upload = e2.file_uploader(f"Import devices (JSON, max {MAX_IMPORT_BYTES // 2 ** 20} MB)", type=["json"],
                          key="device_import")
_show_message("import")
if upload is not None:
    builtin = [i for i, d in db.devices.items() if not d.user] + [i for i, x in db.interconnects.items() if not x.user]
    imported, problems, error = parse_import(upload.getvalue(), upload.name, builtin)
    if error:
        st.error(f"{error}. Nothing was imported.")
    else:
        if problems:
            st.warning(f"{upload.name}: {len(problems)} entr{'y' if len(problems) == 1 else 'ies'} left out "
                       "(by id and field):")
            parts = [(p.split(": ", 2) + ["", ""])[:3] for p in problems]
            st.dataframe(pd.DataFrame(parts, columns=["id", "field", "reason"]), hide_index=True, width="stretch",
                         key="import_problems")
        ids = [*imported.devices, *imported.interconnects]
        if not ids:
            st.info(f"{upload.name}: no valid entries to add.")
        else:
            again = [i for i in ids if i in db.devices or i in db.interconnects]
            if again:
                st.caption("Replaces your entries: " + ", ".join(again))
            if st.button(f"Add {len(imported.devices)} device(s) and {len(imported.interconnects)} interconnect(s)",
                         key="device_import_add"):
                try:
                    save(merge(devices(), imported), USER_PATH)
                except DeviceError as e:
                    st.error(f"Nothing was imported: {e}")
                except OSError as e:
                    st.error(f"Nothing was imported: cannot write {USER_PATH} ({e.strerror}).")
                else:
                    devices.clear()
                    _say("success", f"Imported {len(ids)} entr{'y' if len(ids) == 1 else 'ies'} from {upload.name}.",
                         where="import")
                    st.rerun()

# -- interconnects --------------------------------------------------------------------------------------------
st.subheader("Interconnects")
st.dataframe(link_table(db), hide_index=True, placeholder="", width="stretch", key="link_table",
             column_config={"source": st.column_config.LinkColumn("source", display_text=r"https?://([^/]+)"),
                            "yours": st.column_config.CheckboxColumn("yours")})
