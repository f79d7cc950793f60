"""Compare: several networks or variants side by side on the chosen device, batch and precision."""

import pandas as pd
import streamlit as st

import core
from ui.charts import bars_chart, show
from ui.compare import PRESETS, compare_rows
from ui.state import BATCH, CUSTOM, CUSTOM_NET, DTYPE, OPTIMIZER, page, time_settings
from ui.tables import dataframe
from ui.text import model_label

sel = page("Compare networks", tab="Compare")
options = core.builtin_names() + ([CUSTOM] if st.session_state.get(CUSTOM_NET) is not None else [])
st.session_state.setdefault("compare_models", PRESETS["VGG 11/13/19"])
cols = st.columns(len(PRESETS))
for col, (label, models) in zip(cols, PRESETS.items()):
    if col.button(label, key=f"preset_{label}"):
        st.session_state["compare_models"] = models
chosen = st.multiselect("Networks", options, key="compare_models")
if not chosen:
    st.info("Pick networks to compare.")
    st.stop()
models = [st.session_state[CUSTOM_NET] if m == CUSTOM else m for m in chosen]
rows = compare_rows(models, int(st.session_state[BATCH]), st.session_state[DTYPE], st.session_state[OPTIMIZER],
                    sel.device, **time_settings())
df = pd.DataFrame(rows)
dataframe(df, width="stretch", key="compare_table",
          column_config={"params": st.column_config.NumberColumn(format="localized"),
                         "GMACs": st.column_config.NumberColumn(format="%.3f"),
                         "GFLOPs": st.column_config.NumberColumn(format="%.3f"),
                         "inference MiB": st.column_config.NumberColumn(format="%.1f"),
                         "training MiB": st.column_config.NumberColumn(format="%.1f"),
                         "FLOP/byte": st.column_config.NumberColumn(format="%.2f"),
                         "forward ms": st.column_config.NumberColumn(format="%.3f"),
                         "training step ms": st.column_config.NumberColumn(format="%.3f")})
st.caption(f"batch {st.session_state[BATCH]}, {st.session_state[DTYPE]}, on {sel.device.name}"
           + (f", times {model_label(sel.estimate)}" if sel.estimate is not None else "") + f"; {core.CONVENTION}")
show(bars_chart(df, "network", "GMACs", unit="MACs", scale=1e9, title="forward MACs"), "compare_chart",
     "compare_gmacs")
st.download_button("Download CSV", df.to_csv(index=False), "compare.csv", "text/csv", key="compare_csv")
