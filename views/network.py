"""Network: build or edit a network layer by layer in a table (sequential networks: add, remove, reorder), what-if
edits on any network with the coupled channel group shown, undo and reset, IR JSON in and out, ONNX models in
(``core.onnx_import``), PyTorch code."""

import streamlit as st

import core
from core.edit import channel_groups
from ui import builder
from ui.graph_view import ask_highlight
from ui.onnx_upload import import_onnx_upload
from ui.state import (
    CUSTOM_NET,
    DEFAULTS,
    HISTORY,
    INPUT,
    MODEL,
    choose_model,
    current_network,
    page,
    set_custom,
    time_settings,
)
from ui.tables import editable_layers

ONNX_UPLOAD_MB = 256          # the uploader's cap, server.maxUploadSize in .streamlit/config.toml

sel = page("Network")
net = current_network()
st.caption(f"{net.name}: {len(net.nodes)} layers, {sel.report.totals['params']:,} parameters.",
           help="Edits make a custom copy; the built-in network is never changed.")


def _base_name(n: core.Network) -> str:
    return n.name.split(" (edited)")[0]


def _apply(new: core.Network, message: str) -> None:
    set_custom(core.Network(f"{_base_name(new)} (edited)", new.inputs, new.nodes, new.outputs, new.description))
    st.session_state["edit_message"] = message
    st.rerun()


if builder.is_chain(net):
    st.subheader("Layers")
    st.caption("Edit cells, add rows at the bottom, delete rows, or change **#** to reorder (2.5 goes between 2 "
               "and 3).", help="Blank numeric cells keep the op's defaults; other attributes are name=value text. "
               "Each change is checked at once; an invalid one is refused at its row and the last valid network stays.")
    original = builder.rows(net, sel.report)
    ops = list(builder.BUILD_OPS) + sorted({r["op"] for r in original} - set(builder.BUILD_OPS))
    whole = st.column_config.NumberColumn
    edited = st.data_editor(
        original, num_rows="dynamic", hide_index=True, width="stretch", placeholder="",   # blank cell, not "None"
        key=f"layer_editor_{st.session_state.get('editor_round', 0)}_{hash(net)}",
        disabled=builder.SHOWN,
        column_config={
            "#": whole("#", min_value=0, step=0.5, format="%g", help="position; change it to move the row"),
            "layer": st.column_config.TextColumn("layer", help="unique name"),
            "op": st.column_config.SelectboxColumn("op", options=ops, required=True),
            "channels": whole("channels", min_value=1, step=1, help="out_channels of a conv, out_features of linear"),
            "kernel": whole("kernel", min_value=1, step=1), "stride": whole("stride", min_value=1, step=1),
            "padding": whole("padding", min_value=0, step=1),
            "other": st.column_config.TextColumn("other attributes", help="name=value, comma separated: p=0.25"),
            "params": whole("params", format="localized"), "MACs": whole("MACs / sample", format="localized"),
        })
    if builder.changed(edited, original):
        try:
            rebuilt = builder.network_from_rows(edited, net)
        except core.CalcError as e:
            st.error(f"Not applied — {e}. The last valid network is kept; fix that row or discard the edits.")
            st.session_state.pop("edit_message", None)          # an older success would read as this edit's
            if st.button("Discard table edits", key="editor_discard"):
                st.session_state["editor_round"] = st.session_state.get("editor_round", 0) + 1
                st.rerun()
        else:
            _apply(rebuilt, f"Table edit applied: {len(rebuilt.nodes)} layers")
else:
    st.info("This network has branches (residual adds, concatenations), so layers cannot be added or reordered "
            "here; edit channels, kernel, stride or padding below — coupled layers follow.")
    st.dataframe(editable_layers(sel.report), hide_index=True, width="stretch", key="edit_table")
if st.button("New network from scratch", key="new_network", help="A small CNN for 1×28×28 inputs to build on"):
    _apply(builder.NEW_NETWORK, "Started a new network: edit its rows")

st.subheader("What-if edit")
rows = editable_layers(sel.report)
names = [r["layer"] for r in rows]
if names:
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    layer = c1.selectbox("Layer", names, key="edit_layer")
    fields = next(r["editable"] for r in rows if r["layer"] == layer).split(", ")
    field = c2.selectbox("Field", fields, key="edit_field")
    current = net.node(layer).get(field)
    start = builder.int_cell(current)
    value = c3.number_input("New value", min_value=0, max_value=2 ** 24, step=1, key="edit_value",
                            value=min(max(start if start is not None else 1, 0), 2 ** 24))
    if start is None and current is not None:
        st.caption(f"{field} is {current!r} now; a number sets it explicitly.")
    if field in ("out_channels", "out_features"):
        groups = channel_groups(net)
        coupled = [n for n, g in groups.items() if g == groups.get(layer) and n != layer
                   and builder.channel_field(net.node(n).op)]
        st.caption("Coupled group: " + (", ".join(coupled[:12]) + (" …" if len(coupled) > 12 else "")
                                         if coupled else "none — only this layer's output width changes")
                   + ".", help="Layers reading this output change shape with it.")
    else:
        coupled = []
    if st.button(f"See {layer} in the graph", key="edit_see_graph", icon=":material/account_tree:",
                 help="The Graph page outlines it" + (" and its coupled group" if coupled else "") + " in blue."):
        ask_highlight([layer, *coupled], f"the what-if edit's layer {layer}"
                      + (f" and its coupled channel group ({len(coupled)} more)" if coupled else ""))
        st.switch_page("views/graph.py")
    if c4.button("Apply", key="edit_apply", type="primary"):
        try:
            result = core.edit(net, layer, field, int(value))
        except core.CalcError as e:
            st.error(f"Not applied — {e}. The network is unchanged.")
        else:
            effect = builder.edit_effect(sel, result.network, st.session_state[INPUT], time_settings())
            ask_highlight(result.changed, f"the layers the edit of {layer}.{field} rewrote")
            _apply(result.network, f"{layer}.{field} = {int(value)}: {effect}changed "
                                   f"{', '.join(result.changed)}; shapes followed in {len(result.reshaped)} layers")
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
e1.download_button("Export IR JSON", lambda n=net: n.to_json(), f"{net.name}.json", "application/json",
                   key="export_json")                         # written when clicked, not on every run
upload = e2.file_uploader(
    f"Import IR JSON (max 2 MB) or an ONNX model (max {ONNX_UPLOAD_MB} MB)", type=["json", "onnx"], key="import_json",
    help="An ONNX model is read, never run, and its weights are not needed: torch.onnx.export(..., "
         "export_params=False) writes a file of a few hundred KB. Export with do_constant_folding=False to keep "
         "BatchNorm layers as they are in PyTorch (folded into the convolutions, they count fewer parameters).")
if upload is not None and upload.name.lower().endswith(".onnx"):
    import_onnx_upload(upload)
elif upload is not None:
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
