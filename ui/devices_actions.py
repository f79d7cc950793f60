"""The Devices page's session state: its widget callbacks (pick a device to edit, save the form, remove a device,
add an import) and the one-shot message saying how the last of them went.

The callbacks run before the page's script, so the sidebar drawn next already sees the changed database. Data
shaping and spec building are ``ui.devices_form``'s (pure functions); this module is what touches streamlit. Where
the user's devices are kept is ``store``'s: their file, or in classroom server mode their session only.
"""

from __future__ import annotations

import streamlit as st

from core.devices import USER_PATH, DeviceDB
from core.errors import DeviceError
from ui.devices_form import FIELD_OF_KEY, blank_form, build_spec, check_new, explain, form_values, merge, save
from ui.state import DEFAULTS, DEVICE, devices, keep_session_devices, server_mode

EDIT, MSG, NEW = "device_edit", "device_message", ""   # the "Edit" pick ("" = a new device); the last outcome


def say(kind: str, text: str, field: str | None = None, where: str = "form") -> None:
    """Keep an outcome (``kind``: an ``st`` call such as "error") for ``show_message`` at ``where`` / ``field``."""
    st.session_state[MSG] = {"kind": kind, "text": text, "field": field, "where": where}


def _select_device(old: str, new: str | None) -> None:
    """Keep the sidebar's device valid when one of the user's devices is renamed or removed."""
    if st.session_state.get(DEVICE) == old:
        st.session_state[DEVICE] = new or DEFAULTS[DEVICE]


def prepare_form(db: DeviceDB) -> list[str]:
    """The user's device ids, for the "Edit" pick; before the form is drawn, a pick that is gone goes back to a new
    device and every form widget without a value gets the blank form's."""
    mine = [d.id for d in db.devices.values() if d.user]
    if st.session_state.get(EDIT, NEW) not in [NEW, *mine]:
        st.session_state[EDIT] = NEW
    for k, v in blank_form().items():
        if k not in st.session_state:
            st.session_state[k] = v
    return mine


def store(db: DeviceDB) -> None:
    """Keep the user's entries of ``db``: in server mode in this session only (nothing is written); else in their
    file (``OSError`` when it cannot be written), re-read by the next ``devices()``."""
    if server_mode():
        keep_session_devices(db)
        return
    save(db, USER_PATH)
    devices.clear()


def kept_where() -> str:
    """Where ``store`` keeps the user's devices, as a message says it ("Saved X to …")."""
    return "in this session only (Export below keeps a copy)" if server_mode() else f"to {USER_PATH}"


# -- callbacks ------------------------------------------------------------------------------------------------

def on_pick() -> None:
    d = devices().devices.get(st.session_state.get(EDIT))
    st.session_state.update(form_values(d) if d is not None and d.user else blank_form())
    st.session_state.pop(MSG, None)


def on_submit() -> None:
    db = devices()
    editing = st.session_state.get(EDIT) or None
    old = db.devices.get(editing) if editing else None
    spec = build_spec({k: st.session_state.get(k) for k in blank_form()}, keep=old.to_dict() if old else None)
    try:
        check_new(db, spec, editing)
    except DeviceError as e:
        field, text = explain(e, hint=False)
        say("error", f"Not saved. {text}", field)
        return
    try:
        new = db.add(spec)
        if old is not None and spec["id"] != editing:      # renamed: the old entry goes
            new = new.remove(editing)
        store(new)
    except DeviceError as e:
        field, text = explain(e)
        say("error", f"Not saved. {text}", field)
        return
    except OSError as e:
        say("error", f"Not saved: cannot write {USER_PATH} ({e.strerror}).")
        return
    if old is not None and spec["id"] != editing:
        _select_device(editing, spec["id"])
    st.session_state[EDIT] = spec["id"]
    say("success", f"Saved {spec['name']} ({spec['id']}) {kept_where()}. It is in the sidebar's Device list and "
                   f"on every page." if old is None else f"Updated {spec['name']} ({spec['id']}).")


def on_remove() -> None:
    db = devices()
    pick = st.session_state.get(EDIT)
    d = db.devices.get(pick)
    if d is None or not d.user:
        say("error", "Pick one of your own devices to remove; built-in devices cannot be removed.")
        return
    try:
        store(db.remove(pick))
    except OSError as e:
        say("error", f"Not removed: cannot write {USER_PATH} ({e.strerror}).")
        return
    _select_device(pick, None)
    st.session_state[EDIT] = NEW
    st.session_state.update(blank_form())
    say("success", f"Removed {d.name} ({d.id}).")


def add_imported(imported: DeviceDB, name: str) -> str | None:
    """Add an import's entries to the user's devices (``store``): None once kept (the success message is kept for
    the next run), else why nothing was imported."""
    try:
        store(merge(devices(), imported))
    except DeviceError as e:
        return f"Nothing was imported: {e}"
    except OSError as e:
        return f"Nothing was imported: cannot write {USER_PATH} ({e.strerror})."
    n = len(imported.devices) + len(imported.interconnects)
    say("success", f"Imported {n} entr{'y' if n == 1 else 'ies'} from {name}.", where="import")
    return None


# -- the last outcome -----------------------------------------------------------------------------------------

def show_message(where: str, field: str | None = None) -> None:
    """The last outcome, shown once: an invalid field's message under that field, the rest where they belong."""
    m = st.session_state.get(MSG)
    if not m or m["where"] != where or m["field"] != field:
        return
    getattr(st, m["kind"])(m["text"])
    st.session_state.pop(MSG)


def inline(key: str) -> None:
    """The form's error for the field this widget fills (``peak_flops`` as a whole shows under the peaks)."""
    m = st.session_state.get(MSG)
    if m and m["where"] == "form" and m["field"] == FIELD_OF_KEY[key]:
        show_message("form", m["field"])


def show_unplaced() -> None:
    """A form error for a field the form has no place for (kind, year, …), under the form."""
    if (m := st.session_state.get(MSG)) and m["where"] == "form":
        show_message("form", m["field"])
