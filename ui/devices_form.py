"""Data shaping and spec building for the Devices page: tables, the roofline overlay, the custom-device form
(units as typed ↔ the database's SI units) and a safe import of an uploaded JSON file.

Pure functions over ``core.devices``; nothing here touches streamlit. Uploads are parsed with ``json.loads`` only:
never unpickled, evaluated or executed.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pandas as pd

from core.devices import KINDS, PRECISION_KEYS, DeviceDB, parse_devices, read_devices_document, save_user_devices
from core.errors import DeviceError
from core.roofline import ridge
from ui.charts import cached_spec, roofline_chart, roofline_frame
from ui.memo import memo
from ui.shared_cache import device_digest

TERA, GIGA, GIB = 1e12, 1e9, 2 ** 30
MAX_IMPORT_BYTES = 2 ** 20          # 1 MB: far more than any real device list (the whole database is ~40 kB)
MAX_IMPORT_ENTRIES = 1000
MAX_PROBLEM_CHARS = 300             # a hostile entry can make a schema message as long as the entry itself
NOTE_MAX_CHARS = 20_000             # the Note box cuts longer notes on save; calibration's (~2,000) grows by dtype

# The devices of the course survey figure ("GeForce 256 to TPU v3"), plus the V100 the app defaults to.
SURVEY = ("geforce-256", "titan-xp", "k80", "core-i7-920", "ryzen-9-3900x", "radeon-rx-6800", "apple-a14",
          "apple-m1-max", "tpu-v3", "a100-40gb-sxm", "v100-sxm2")
FASTEST = "fastest"                 # overlay option: each device at its fastest floating-point precision
FLOAT_KEYS = tuple(k for k in PRECISION_KEYS if k != "int8")


# -- tables ---------------------------------------------------------------------------------------------------

def _num(x) -> float:
    """A float column value; missing is NaN, so the table shows an empty cell rather than "None"."""
    return float("nan") if x is None else float(x)


def source_link(source: str) -> str | None:
    """Only http(s) addresses become links (a typed or imported ``javascript:`` source stays text)."""
    s = (source or "").strip()
    return s if s.lower().startswith(("https://", "http://")) else None


def device_table(db: DeviceDB) -> pd.DataFrame:
    rows = []
    for d in db.devices.values():
        rows.append({"id": d.id, "name": d.name, "vendor": d.vendor, "kind": d.kind, "year": d.year,
                     **{f"{k} TFLOP/s": _num(d.peak_flops[k] / TERA if k in d.peak_flops else None)
                        for k in PRECISION_KEYS},
                     "bandwidth GB/s": d.memory_bandwidth / GIGA,
                     "memory GiB": _num(d.memory_capacity / GIB if d.memory_capacity else None),
                     "source": source_link(d.source), "reference": "" if source_link(d.source) else d.source,
                     "calibration": calibration_cell(d), "yours": d.user, "note": d.note})
    df = pd.DataFrame(rows)
    for col in ("reference", "calibration"):    # every source a link, no device calibrated: no such column
        if not df.empty and not df[col].astype(bool).any():
            df = df.drop(columns=col)
    return df


def calibration_cell(device) -> str:
    """A calibrated device's quality in a few words (``calibration``): "2 threads · held-out ±36 % · 2026-05-01",
    "noisy" added where it was kept with --force; "" for datasheet figures."""
    cal = device.calibration or {}
    if not cal:
        return ""
    parts = [f"{cal['threads']} thread{'s' if cal['threads'] != 1 else ''}"] \
        if cal.get("threads") and device.kind == "CPU" else []
    if "held_out_error" in cal:
        parts.append(f"held-out ±{cal['held_out_error'] * 100:.0f} %")
    parts += [cal["date"][:10]] if cal.get("date") else []
    parts += ["noisy"] if cal.get("noisy") else []
    return " · ".join(parts)


def calibrated(db: DeviceDB) -> list:
    """The devices with a calibration record (``python -m core calibrate``, the Benchmark page)."""
    return [d for d in db.devices.values() if d.calibration]


def link_table(db: DeviceDB) -> pd.DataFrame:
    return pd.DataFrame([{"id": i.id, "name": i.name, "GB/s per direction": i.bandwidth / GIGA,
                          "latency µs": _num(i.latency * 1e6 if i.latency else None),
                          "source": source_link(i.source), "yours": i.user, "note": i.note}
                         for i in db.interconnects.values()])


# -- roofline overlay -----------------------------------------------------------------------------------------

def fastest(device) -> str | None:
    """The floating-point precision with the highest dense peak (int8 counts ops, not FLOPs: left out)."""
    have = [k for k in FLOAT_KEYS if k in device.peak_flops]
    return max(have, key=lambda k: device.peak_flops[k]) if have else None


def overlay(db: DeviceDB, ids, compute: str):
    """(roofs frame with a ``device`` label per line, label order by year, ridge table, [(device, why left out)]);
    made once per set of devices (by their figures) and precision: the frames are shared, never to be changed."""
    chosen = [db.devices[i] for i in ids if i in db.devices]
    return memo(("overlay", tuple(device_digest(d) for d in chosen), compute), lambda: _overlay(chosen, compute))


def overlay_chart(db: DeviceDB, ids, compute: str, order: bool = True) -> dict:
    """The overlay's rooflines as a Vega-Lite spec (``order``: the legend by year), built once per input."""
    chosen = tuple(device_digest(db.devices[i]) for i in ids if i in db.devices)

    def build():
        roofs, by_year, _, _ = overlay(db, ids, compute)
        return roofline_chart(roofs, pd.DataFrame(), order=by_year if order else None)
    return cached_spec(("overlay", chosen, compute, order), build)


def _overlay(chosen, compute: str):
    names = [d.name for d in chosen]
    frames, order, ridges, left_out = [], [], [], []
    for d in sorted(chosen, key=lambda d: (d.year, d.name)):
        prec = fastest(d) if compute == FASTEST else compute
        if prec is None or prec not in d.peak_flops:
            left_out.append((d, f"has {', '.join(d.precisions)}"))
            continue
        label = f"{d.name} ({d.year})" if names.count(d.name) == 1 else f"{d.name} [{d.id}] ({d.year})"
        if compute == FASTEST:
            label += f" {prec}"
        frames.append(roofline_frame([d], prec).assign(device=label))
        order.append(label)
        ridges.append({"device": d.name, "id": d.id, "year": d.year, "precision": prec,
                       "peak TFLOP/s": d.peak_flops[prec] / TERA, "bandwidth GB/s": d.memory_bandwidth / GIGA,
                       "ridge FLOP/byte": round(ridge(d.peak_flops[prec], d.memory_bandwidth), 2)})
    roofs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["device", "intensity", "flops"])
    return roofs, order, pd.DataFrame(ridges), left_out


# -- the custom-device form -----------------------------------------------------------------------------------

# form widget keys → the spec field they fill (tests and the page use the keys); the unit a number is typed in
F_ID, F_NAME, F_VENDOR, F_KIND, F_YEAR = "dev_id", "dev_name", "dev_vendor", "dev_kind", "dev_year"
F_BW, F_MEM, F_SOURCE, F_NOTE = "dev_bandwidth", "dev_memory", "dev_source", "dev_note"
F_PEAK = {k: f"dev_{k}" for k in PRECISION_KEYS}
FIELD_OF_KEY = {F_ID: "id", F_NAME: "name", F_VENDOR: "vendor", F_KIND: "kind", F_YEAR: "year",
                F_BW: "memory_bandwidth", F_MEM: "memory_capacity", F_SOURCE: "source", F_NOTE: "note",
                **{v: f"peak_flops.{k}" for k, v in F_PEAK.items()}}
UNIT_OF_KEY = {F_BW: GIGA, F_MEM: GIB, **{v: TERA for v in F_PEAK.values()}}     # GB/s, GiB, TFLOP/s
SHOWN = frozenset(path.split(".")[0] for path in FIELD_OF_KEY.values())       # spec fields the form has widgets for
LABELS = {"id": "Id", "name": "Name", "vendor": "Vendor", "kind": "Kind", "year": "Year",
          "memory_bandwidth": "Memory bandwidth (GB/s)", "memory_capacity": "Memory (GiB)", "source": "Source",
          "note": "Note", "peak_flops": "Peak TFLOP/s", **{f"peak_flops.{k}": f"{k} TFLOP/s" for k in PRECISION_KEYS}}
HINTS = {"id": "use lower-case letters, digits and hyphens, starting with a letter or digit (e.g. my-gpu-2024)",
         "peak_flops": "give at least one precision's peak (0 = not supported)",
         "memory_bandwidth": "give the memory bandwidth in GB/s; it must be more than 0",
         "name": "give the device a name", "vendor": "name the vendor",
         "source": "say where the figures come from (a datasheet address, or a note such as 'measured')"}


def blank_form() -> dict:
    return {F_ID: "", F_NAME: "", F_VENDOR: "", F_KIND: "GPU", F_YEAR: min(datetime.date.today().year, 2100),
            **{v: 0.0 for v in F_PEAK.values()}, F_BW: 0.0, F_MEM: 0.0, F_SOURCE: "", F_NOTE: ""}


def _stored(spec: dict, path: str):
    """A spec's value at a form field's path ("name", "peak_flops.fp32"); None where it has none."""
    top, _, sub = path.partition(".")
    value = spec.get(top)
    return (value.get(sub) if isinstance(value, dict) else None) if sub else value


def _shown(spec: dict) -> dict:
    """The form's widget values for a spec: numbers in the units they are typed in, a missing number as 0, and a
    kind or year the widgets cannot show as the form's default."""
    out = blank_form()
    for key, path in FIELD_OF_KEY.items():
        value = _stored(spec, path)
        if key in UNIT_OF_KEY:
            out[key] = float(value or 0.0) / UNIT_OF_KEY[key]
        elif value is not None:
            out[key] = value
    out[F_KIND] = out[F_KIND] if out[F_KIND] in KINDS else "GPU"
    out[F_YEAR] = min(max(int(out[F_YEAR]), 1990), 2100)
    return out


def form_values(device) -> dict:
    """The form's widget values for an existing device (the inverse of ``build_spec``)."""
    return _shown(device.to_dict())


def _typed(values: dict, key: str):
    """A widget's value as the spec holds it: TFLOP/s → FLOP/s, GB/s → bytes/s, GiB → bytes; text trimmed."""
    value = values.get(key)
    if key in UNIT_OF_KEY:
        return float(value or 0.0) * UNIT_OF_KEY[key]
    if key == F_YEAR:
        return int(value or 0)
    return value if key == F_KIND else str(values.get(key, "")).strip()


def build_spec(values: dict, keep: dict | None = None) -> dict:
    """A device spec from the form's values; precisions at 0 and a memory of 0 are left out. ``keep``: the spec of
    the device being edited. Every field the form does not show (efficiency, per-layer overhead, the allocator's
    figures, sparse peaks, …) is carried through unchanged, and so is every shown value left as the form showed it
    (no unit conversion touches it). Validation is ``DeviceDB.add``'s."""
    keep = keep or {}
    shown = _shown(keep)
    spec = {k: v for k, v in keep.items() if k not in SHOWN}
    for key, path in FIELD_OF_KEY.items():
        stored = _stored(keep, path)
        value = stored if stored is not None and values.get(key) == shown[key] else _typed(values, key)
        top, _, sub = path.partition(".")
        if sub:                                             # a peak: 0 is "not supported"
            spec.setdefault(top, {})
            if value:
                spec[top][sub] = value
        elif value or top != "memory_capacity":            # a memory of 0 is "not given"
            spec[top] = value
    return spec


def explain(err: DeviceError, hint: bool = True) -> tuple[str, str]:
    """(field, message for the user): the form's label, the schema field, the reason and (``hint``) what the field
    takes."""
    field = err.field or "entry"
    top = field.split(".")[0]
    label = LABELS.get(field) or LABELS.get(top) or field
    text = (HINTS.get(field) or HINTS.get(top)) if hint else None
    message = f"{label} — field '{field}': {err.reason.rstrip('.')}."
    return field, message + (f" {text[0].upper()}{text[1:]}." if text else "")


def check_new(db: DeviceDB, spec: dict, editing: str | None) -> None:
    """Refuse what ``add`` would silently do wrong: shadow a built-in device, or overwrite another of the user's
    devices when adding a new one (editing a device may keep its id or take a free one)."""
    ident = spec.get("id")
    current = db.devices.get(ident) if isinstance(ident, str) else None
    if current is None:
        return
    if not current.user:
        raise DeviceError("is a built-in device; choose another id (built-in devices cannot be replaced)",
                          node=ident, field="id")
    if ident != editing:
        raise DeviceError("is already one of your devices; pick it under 'Edit' to change it, or choose another id",
                          node=ident, field="id")


def save(db: DeviceDB, path) -> None:
    """Write the user's own entries, creating the folder (``~/.cnn_calc`` may not exist yet)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_user_devices(db, path)


# -- import ---------------------------------------------------------------------------------------------------

def _short(text: str) -> str:
    return text if len(text) <= MAX_PROBLEM_CHARS else text[:MAX_PROBLEM_CHARS] + "…"


def parse_import(raw: bytes, name: str = "upload", builtin_ids=()) -> tuple[DeviceDB | None, list[str], str | None]:
    """An uploaded device file → (entries that loaded, problems "id: field: reason" for those left out, None), or
    (None, [], message) when the whole file is refused: too large, not UTF-8, not JSON, nested too deeply, or not
    a ``cnn-calc/devices`` document. ``builtin_ids``: ids an import may not replace (listed as problems)."""
    if not isinstance(raw, (bytes, bytearray)):
        return None, [], f"{name}: expected the file's bytes"
    if len(raw) > MAX_IMPORT_BYTES:
        return None, [], f"{name}: {len(raw):,} bytes is over the {MAX_IMPORT_BYTES // 2 ** 20} MB limit"
    try:
        data = read_devices_document(raw, where=name)     # decoded and parsed as core reads a devices file
    except DeviceError as e:
        return None, [], _short(str(e))
    if isinstance(data, dict):
        count = sum(len(v) for k in ("devices", "interconnects") if isinstance(v := data.get(k), list))
        if count > MAX_IMPORT_ENTRIES:
            return None, [], f"{name}: {count:,} entries is over the limit of {MAX_IMPORT_ENTRIES:,}"
    try:
        parsed = parse_devices(data, where=name, user=True)
    except DeviceError as e:
        return None, [], _short(str(e))
    except RecursionError:
        return None, [], f"{name}: nested too deeply to be a device file"
    # untrusted input: whatever slips past the schema is a message, never a traceback
    except Exception as e:  # noqa: BLE001
        return None, [], f"{name}: could not be read ({type(e).__name__}: {_short(str(e))})"
    builtin = set(builtin_ids)
    problems = [_short(p) for p in parsed.problems]
    problems += [f"{i}: id: is a built-in id; rename it to import it" for i in
                 [*parsed.devices, *parsed.interconnects] if i in builtin]
    kept = DeviceDB({k: v for k, v in parsed.devices.items() if k not in builtin},
                    {k: v for k, v in parsed.interconnects.items() if k not in builtin})
    return kept, problems, None


def builtin_ids(db: DeviceDB) -> list[str]:
    """Ids of the built-in devices and interconnects: an import may not replace them."""
    return [i for i, d in db.devices.items() if not d.user] + [i for i, x in db.interconnects.items() if not x.user]


def problem_table(problems: list[str]) -> pd.DataFrame:
    """``parse_import``'s problems ("id: field: reason") as a table; a missing part is empty."""
    return pd.DataFrame([(p.split(": ", 2) + ["", ""])[:3] for p in problems], columns=["id", "field", "reason"])


def merge(db: DeviceDB, imported: DeviceDB) -> DeviceDB:
    """Add every imported entry through ``add`` (validated again); same ids replace the user's own."""
    for entry in [*imported.devices.values(), *imported.interconnects.values()]:
        db = db.add(entry.to_dict())
    return db


def user_count(db: DeviceDB) -> tuple[int, int]:
    return sum(d.user for d in db.devices.values()), sum(i.user for i in db.interconnects.values())
