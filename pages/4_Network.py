"""Network: what-if edits layer by layer (coupled channels follow), undo and reset, IR JSON in and out, PyTorch code."""

import streamlit as st

import core
from ui.state import CUSTOM_NET, DEFAULTS, HISTORY, MODEL, choose_model, current_network, set_custom, sidebar
from ui.tables import editable_layers

st.set_page_config(page_title="Network · CNN calculator", layout="wide")
sel = sidebar()
st.title("Network")
net = current_network()
st.caption(f"{net.name}: {len(net.nodes)} layers, {sel.report.totals['params']:,} parameters. Edits make a custom "
           "copy; the built-in network is never changed.")

rows = editable_layers(sel.report)
names = [r["layer"] for r in rows]
st.dataframe(rows, hide_index=True, width="stretch", key="edit_table")
c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
layer = c1.selectbox("Layer", names, key="edit_layer")
fields = next(r["editable"] for r in rows if r["layer"] == layer).split(", ")
field = c2.selectbox("Field", fields, key="edit_field")
current = net.node(layer).get(field)
value = c3.number_input("New value", min_value=0, max_value=2 ** 24, step=1, key="edit_value",
                        value=int(current[0] if isinstance(current, tuple) else current or 1))
if c4.button("Apply", key="edit_apply", type="primary"):
    try:
        result = core.edit(net, layer, field, int(value))
    except core.CalcError as e:
        st.error(f"Not applied — {e}. The network is unchanged.")
    else:
        set_custom(core.Network(f"{net.name.split(' (edited)')[0]} (edited)", result.network.inputs,
                                result.network.nodes, result.network.outputs, result.network.description))
        st.session_state["edit_message"] = (f"{layer}.{field} = {int(value)}: changed "
                                            f"{', '.join(result.changed)}; shapes followed in "
                                            f"{len(result.reshaped)} layers")
        st.rerun()
if st.session_state.get("edit_message") and st.session_state[MODEL] == "custom":
    st.success(st.session_state["edit_message"])

u1, u2, _ = st.columns([1, 1, 6])
if u1.button("Undo", key="edit_undo", disabled=not st.session_state.get(HISTORY)):
    st.session_state[CUSTOM_NET] = st.session_state[HISTORY].pop()
    st.session_state.pop("edit_message", None)
    st.rerun()
if u2.button("Reset", key="edit_reset", disabled=st.session_state.get(CUSTOM_NET) is None):
    st.session_state[CUSTOM_NET] = None
    st.session_state[HISTORY] = []
    choose_model(DEFAULTS[MODEL])
    st.session_state.pop("edit_message", None)
    st.rerun()

st.subheader("Import and export")
e1, e2 = st.columns(2)
e1.download_button("Export IR JSON", net.to_json(), f"{net.name}.json", "application/json", key="export_json")
upload = e2.file_uploader("Import IR JSON (max 2 MB)", type=["json"], key="import_json")
if upload is not None:
    data = upload.getvalue()
    if len(data) > 2 * 2 ** 20:
        st.error(f"{upload.name}: {len(data):,} bytes is over the 2 MB limit; nothing was imported.")
    else:
        try:
            imported = core.Network.from_json(data.decode("utf-8", errors="strict"))
            core.compile_network(imported)
        except UnicodeDecodeError:
            st.error(f"{upload.name}: not UTF-8 text; nothing was imported.")
        except core.CalcError as e:
            st.error(f"{upload.name}: {e}. Nothing was imported.")
        else:
            if st.button(f"Use {imported.name} ({len(imported.nodes)} layers)", key="import_use"):
                set_custom(imported)
                st.rerun()
if st.button("Show PyTorch code", key="show_code", help="Loads torch the first time."):
    from core.bridge.to_torch import to_source
    try:
        st.code(to_source(net), language="python")
    except core.CalcError as e:
        st.error(str(e))
