"""Devices: the hardware database with each figure's source."""

import pandas as pd
import streamlit as st

from ui.state import devices, sidebar

st.set_page_config(page_title="Devices · CNN calculator", layout="wide")
sidebar()
st.title("Devices")
db = devices()
rows = [{"id": d.id, "name": d.name, "kind": d.kind, "year": d.year,
         **{f"{k} TFLOP/s": d.peak_flops.get(k, None) and d.peak_flops[k] / 1e12 for k in ("fp64", "fp32", "tf32",
                                                                                         "fp16", "bf16", "int8")},
         "bandwidth GB/s": d.memory_bandwidth / 1e9,
         "memory GiB": d.memory_capacity / 2 ** 30 if d.memory_capacity else None,
         "source": d.source, "note": d.note} for d in db.devices.values()]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="device_table",
             column_config={"source": st.column_config.LinkColumn("source")})
if db.problems:
    st.warning("Entries left out: " + "; ".join(db.problems))
st.subheader("Interconnects")
st.dataframe(pd.DataFrame([{"id": i.id, "name": i.name, "GB/s per direction": i.bandwidth / 1e9, "source": i.source,
                            "note": i.note} for i in db.interconnects.values()]), hide_index=True, width="stretch",
             key="link_table", column_config={"source": st.column_config.LinkColumn("source")})
