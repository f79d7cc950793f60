"""Devices: the hardware database with each figure's source, an overlay of chosen devices' rooflines, the user's own
devices (add, edit, remove in a validated form) and their import / export as JSON. The numbers, tables and specs
are ``ui.devices_form``'s; the save / remove / import callbacks and their messages, ``ui.devices_actions``'s."""

import json

import streamlit as st

from core.cli_text import calibration_line
from core.cpu_threads import calibrated_threads
from core.devices import KINDS, PRECISION_KEYS, USER_PATH
from ui import devices_actions as act
from ui import devices_form as df
from ui.charts import show
from ui.explain import how
from ui.state import devices, page, server_mode
from ui.tables import dataframe

page("Devices")
db = devices()

dataframe(df.device_table(db), width="stretch", key="device_table",
          column_config={"source": st.column_config.LinkColumn("source", display_text=r"https?://([^/]+)",
                                                              help="The datasheet or page each figure is from"),
                         "year": st.column_config.NumberColumn("year", format="%d"),
                         "calibration": st.column_config.TextColumn(
                             "calibration", help="A calibrated device: the torch threads it was measured at and "
                             "the median error predicting held-out networks"),
                         "yours": st.column_config.CheckboxColumn("yours", help="Added by you (editable below)")})
st.caption("Dense peaks (int8 in ops/s); an empty cell means the device has no such precision.",
           help="Click a column header to sort.")
how(*(f"**{d.name}** ('{d.id}'): {calibration_line(d)}"       # how far to trust a calibrated device's estimates
      + ("; its estimates are for that thread count." if calibrated_threads(d) else ".") for d in df.calibrated(db)))
if db.problems:
    st.warning("Entries left out: " + "; ".join(db.problems))

# -- roofline overlay -----------------------------------------------------------------------------------------
st.subheader("Rooflines compared")
# the widget's state, set before it is drawn: the survey by default, and never an id that is gone (removed)
st.session_state["device_overlay"] = [i for i in st.session_state.get("device_overlay", df.SURVEY) if i in db.devices]
o1, o2 = st.columns([4, 1])
chosen = o1.multiselect("Devices", list(db.devices), key="device_overlay", format_func=lambda i: db.devices[i].name,
                        help="Default: the devices of the course survey, GeForce 256 to TPU v3, and the V100.")
compute = o2.selectbox("Precision", [*PRECISION_KEYS, df.FASTEST], index=PRECISION_KEYS.index("fp32"),
                       key="overlay_precision", format_func=lambda p: "fastest each has" if p == df.FASTEST else p,
                       help="'fastest each has': every device at its fastest floating-point peak, as in a survey "
                            "figure (the label names the precision).")
roofs, _, ridges, left_out = df.overlay(db, chosen, compute)
if left_out:
    st.info(f"Left out (no {compute} peak): " + "; ".join(f"{d.name} ({why})" for d, why in left_out) +
            ". Pick their precision, or 'fastest each has'.")
if roofs.empty:
    st.info("Choose one or more devices that have this precision to draw their rooflines.")
else:
    show(df.overlay_chart(db, chosen, compute), "overlay_chart", f"rooflines_{compute}")
    dataframe(ridges, width="stretch", key="ridge_table",
              column_config={"ridge FLOP/byte": st.column_config.NumberColumn(format="%.2f"),
                             "year": st.column_config.NumberColumn(format="%d")})
    st.caption("Ridge point = peak ÷ memory bandwidth: work with fewer FLOPs per byte than this is memory-bound on "
               "that device.")

# -- the user's own devices -----------------------------------------------------------------------------------
st.subheader("Your devices")
mine = act.prepare_form(db)
p1, p2 = st.columns([3, 1], vertical_alignment="bottom")
pick = p1.selectbox("Edit", [act.NEW, *mine], key=act.EDIT, on_change=act.on_pick,
                    format_func=lambda i: "— a new device —" if i == act.NEW else f"{db.devices[i].name} ({i})",
                    help="Your own devices; choosing one fills the form below.")
p2.button("Remove" if pick == act.NEW else f"Remove {pick}", key="device_remove", on_click=act.on_remove,
          disabled=pick == act.NEW, help="Removes the device picked under 'Edit' from your devices" +
          (" (this session's)." if server_mode() else " file."))
kept = ("only in this browser session: this server saves nothing, and no one else sees them." if server_mode() else
        f"in {USER_PATH}.")
st.caption(f"Your devices are kept {kept}",
           help=("Export them below to keep them, and import the file next time. " if server_mode() else "")
           + "Built-in devices (device_specs.json) cannot be edited or removed here: add your own with another id "
             "instead, e.g. a measured variant.")
act.show_message("form")

with st.form("device_form"):
    c1, c2, c3, c4, c5 = st.columns([2, 3, 2, 1, 1])
    c1.text_input("Id", key=df.F_ID, max_chars=64, placeholder="my-gpu",
                  help="Lower-case letters, digits and hyphens; used on the command line (--device).")
    c2.text_input("Name", key=df.F_NAME, max_chars=120, placeholder="My GPU (measured)")
    c3.text_input("Vendor", key=df.F_VENDOR, max_chars=60)
    c4.selectbox("Kind", KINDS, key=df.F_KIND)
    c5.number_input("Year", min_value=1990, max_value=2100, step=1, key=df.F_YEAR)
    for key in (df.F_ID, df.F_NAME, df.F_VENDOR):        # under the row, full width: the id's message is long
        act.inline(key)
    st.markdown("**Peak TFLOP/s** per precision (dense; int8 in TOP/s; 0 = not supported)")
    for col, (k, key) in zip(st.columns(len(PRECISION_KEYS)), df.F_PEAK.items()):
        with col:
            st.number_input(f"{k} TFLOP/s", min_value=0.0, max_value=1e6, step=0.1, format="%g", key=key)
            act.inline(key)
    act.show_message("form", "peak_flops")
    m1, m2 = st.columns(2)
    with m1:
        st.number_input("Memory bandwidth (GB/s)", min_value=0.0, max_value=1e6, step=10.0, format="%g", key=df.F_BW)
        act.inline(df.F_BW)
    with m2:
        st.number_input("Memory (GiB, 0 = not given)", min_value=0.0, max_value=1e6, step=1.0, format="%g",
                        key=df.F_MEM)
        act.inline(df.F_MEM)
    st.text_input("Source", key=df.F_SOURCE, max_chars=500, placeholder="https://… datasheet, or 'measured'")
    act.inline(df.F_SOURCE)
    st.text_area("Note", key=df.F_NOTE, max_chars=df.NOTE_MAX_CHARS, height=68)
    st.form_submit_button("Save device", key="device_save", on_click=act.on_submit, type="primary")
act.show_unplaced()

# -- import / export ------------------------------------------------------------------------------------------
st.subheader("Import and export")
n_dev, n_link = df.user_count(db)
e1, e2 = st.columns(2)
e1.download_button("Export your devices (JSON)", json.dumps(db.user_entries(), indent=1), "cnn_calc_devices.json",
                   "application/json", key="device_export", disabled=not (n_dev or n_link))
e1.caption(f"{n_dev} device(s) and {n_link} interconnect(s) of yours.",
           help="The file imports here" + (" (in this session or a later one)." if server_mode() else
                                           f" or goes in {USER_PATH.name} under $CNN_CALC_HOME."))
upload = e2.file_uploader(f"Import devices (JSON, max {df.MAX_IMPORT_BYTES // 2 ** 20} MB)", type=["json"],
                          key="device_import",         # the browser refuses a larger file before it is sent
                          max_upload_size=max(1, -(-df.MAX_IMPORT_BYTES // 2 ** 20)))
act.show_message("import")
if upload is not None:
    imported, problems, error = df.parse_import(upload.getvalue(), upload.name, df.builtin_ids(db))
    if error:
        st.error(f"{error}. Nothing was imported.")
    else:
        if problems:
            st.warning(f"{upload.name}: {len(problems)} entr{'y' if len(problems) == 1 else 'ies'} left out "
                       "(by id and field):")
            dataframe(df.problem_table(problems), width="stretch", key="import_problems")
        ids = [*imported.devices, *imported.interconnects]
        if not ids:
            st.info(f"{upload.name}: no valid entries to add.")
        else:
            again = [i for i in ids if i in db.devices or i in db.interconnects]
            if again:
                st.caption("Replaces your entries: " + ", ".join(again))
            if st.button(f"Add {len(imported.devices)} device(s) and {len(imported.interconnects)} interconnect(s)",
                         key="device_import_add"):
                if failed := act.add_imported(imported, upload.name):
                    st.error(failed)
                else:
                    st.rerun()

# -- interconnects --------------------------------------------------------------------------------------------
st.subheader("Interconnects")
dataframe(df.link_table(db), width="stretch", key="link_table",
          column_config={"source": st.column_config.LinkColumn("source", display_text=r"https?://([^/]+)"),
                         "yours": st.column_config.CheckboxColumn("yours")})
