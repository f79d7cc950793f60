"""The Network page's ONNX upload: read once per file, kept in the session with its warnings, and made the custom
network; a model with symbolic sizes asks for its per-sample input shape."""

import streamlit as st

import core
from ui.state import current_network, set_custom

ONNX_DONE = "onnx_imported"   # the last ONNX upload read: its file id, the input shape used, the result or error
ONNX_SHAPE = "onnx_input_shape"   # the per-sample input shape a model with symbolic sizes is read with


def import_onnx_upload(upload) -> None:
    """An uploaded ONNX model becomes the custom network, once per file (the uploader keeps the file across
    reruns); its warnings and opaque nodes stay shown below the uploader. A model with symbolic sizes asks for its
    per-sample input shape here (the sidebar's applies to the current network) and is read again with it."""
    from core.onnx_import import import_onnx

    shape = st.session_state.get(ONNX_SHAPE, "").strip()
    done = st.session_state.get(ONNX_DONE)
    if done is None or done["file"] != upload.file_id or (done["error"] and done["shape"] != shape):
        done = {"file": upload.file_id, "shape": shape, "error": None}
        try:
            result = import_onnx(upload.getvalue(), shape or None, name=upload.name)
        except core.CalcError as e:
            done["error"] = str(e)
            st.session_state[ONNX_DONE] = done
        else:
            done.update(network=result.network, warnings=result.warnings, unsupported=result.unsupported)
            st.session_state[ONNX_DONE] = done
            set_custom(result.network)
            st.session_state.pop("edit_message", None)
            st.rerun()
    if done["error"]:
        st.error(f"{done['error']}. Nothing was imported.")
        # the box stays while a shape was typed (a wrong one fails at a layer, not at input_shape) so it can be
        # corrected, not lost
        if "input_shape" in done["error"] or done["shape"]:
            st.text_input(f"Per-sample input shape for {upload.name}", key=ONNX_SHAPE, placeholder="3x224x224",
                          help="C×H×W without the batch; the model is read again with it.")
        return
    imported = done["network"]
    st.success(f"Imported {upload.name}: {imported.name}, {len(imported.nodes)} layers, input "
               f"{'×'.join(map(str, imported.inputs[0][1]))}" + ("" if current_network() is imported else
                                                                  " (no longer the current network: an edit, "
                                                                  "Undo or another choice replaced it)"))
    if done["unsupported"]:
        kinds = sorted(set(done["unsupported"]))
        st.warning(f"{len(done['unsupported'])} node(s) have no cost rule and count no FLOPs ({', '.join(kinds)}): "
                   "their shapes come from the ONNX file. The totals are lower bounds.")
    if done["warnings"]:
        with st.expander(f"Import warnings ({len(done['warnings'])})"):
            for w in done["warnings"]:
                st.markdown(f"- {w}")
