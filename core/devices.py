"""The hardware database: ``device_specs.json`` at the top of the repository, validated against a JSON Schema.

A bad entry is reported by id and field and left out; the rest still load (``DeviceDB.problems``). Users add and edit
their own devices without touching the file: ``db.add(spec)`` returns a new database (validated the same way), and
``save_user_devices`` / ``load_devices(user_path=...)`` keep them in a file of their own.

Units: FLOP/s (ops/s for int8), bytes/s, bytes, seconds.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import DeviceError

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "device_specs.json"
SCHEMA_NAME = "cnn-calc/devices"
SCHEMA_VERSION = 1
PRECISION_KEYS = ("fp64", "fp32", "tf32", "fp16", "bf16", "int8")
KINDS = ("GPU", "CPU", "TPU", "SoC", "accelerator")
# Classes of work a calibrated device states its own efficiency for (fraction of the peak it reaches).
OP_CLASSES = ("conv", "grouped_conv", "linear", "pool", "elementwise")
USER_PATH = Path(os.environ.get("CNN_CALC_HOME", "~/.cnn_calc")).expanduser() / "devices.json"

_FLOPS = {"type": "object", "additionalProperties": False,
          "properties": {k: {"type": "number", "exclusiveMinimum": 0} for k in PRECISION_KEYS}}
DEVICE_SCHEMA: dict = {
    "type": "object",
    "required": ["id", "name", "vendor", "kind", "year", "peak_flops", "memory_bandwidth", "source", "note"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
        "name": {"type": "string", "minLength": 1},
        "vendor": {"type": "string", "minLength": 1},
        "kind": {"enum": list(KINDS)},
        "year": {"type": "integer", "minimum": 1990, "maximum": 2100},
        "peak_flops": {**_FLOPS, "minProperties": 1},
        "sparse_flops": _FLOPS,
        "memory_bandwidth": {"type": "number", "exclusiveMinimum": 0},
        "memory_capacity": {"type": "number", "exclusiveMinimum": 0},
        "source": {"type": "string", "minLength": 1},
        "note": {"type": "string"},
        "gpus_per_board": {"type": "integer", "minimum": 1},
        "compute_notes": {"type": "object", "additionalProperties": {"type": "string"}},
        "efficiency": {"type": "object", "additionalProperties": False,
                       "properties": {k: {"type": "number", "exclusiveMinimum": 0, "maximum": 1} for k in OP_CLASSES}},
        "alloc_threshold": {"type": "number", "exclusiveMinimum": 0},
        "alloc_bandwidth": {"type": "number", "exclusiveMinimum": 0},
        "layer_overhead": {"type": "object", "additionalProperties": False,
                           "properties": {k: {"type": "number", "minimum": 0, "maximum": 1} for k in OP_CLASSES}},
        "user": {"type": "boolean"},
    },
}
INTERCONNECT_SCHEMA: dict = {
    "type": "object",
    "required": ["id", "name", "bandwidth", "source", "note"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
        "name": {"type": "string", "minLength": 1},
        "bandwidth": {"type": "number", "exclusiveMinimum": 0},
        "latency": {"type": "number", "minimum": 0},
        "source": {"type": "string", "minLength": 1},
        "note": {"type": "string"},
        "user": {"type": "boolean"},
    },
}


@dataclass(frozen=True)
class Device:
    id: str
    name: str
    vendor: str
    kind: str
    year: int
    peak_flops: dict
    memory_bandwidth: float
    source: str
    note: str = ""
    memory_capacity: float | None = None
    sparse_flops: dict = field(default_factory=dict)
    gpus_per_board: int = 1
    compute_notes: dict = field(default_factory=dict)
    efficiency: dict = field(default_factory=dict)   # op class → fraction of peak (calibrated devices)
    layer_overhead: dict = field(default_factory=dict)   # op class → seconds each layer call costs on top of its work
    # a Linux CPU's malloc (glibc): alloc_threshold is its largest mmap threshold (32 MiB on 64-bit); bytes a forward
    # pass writes to fresh pages (core.cpu_heap replays its allocations) run at alloc_bandwidth, the page-fault rate
    alloc_threshold: float | None = None
    alloc_bandwidth: float | None = None
    user: bool = False

    def peak(self, compute: str) -> float:
        """Dense peak at a precision; a device without that precision is an error naming the ones it has."""
        value = self.peak_flops.get(compute)
        if value is None:
            raise DeviceError(f"{self.name} has no {compute} peak; it has {', '.join(self.precisions)}",
                              node=self.id, field="precision", value=compute)
        return float(value)

    @property
    def precisions(self) -> list[str]:
        return [k for k in PRECISION_KEYS if k in self.peak_flops]

    def ridge(self, compute: str) -> float:
        """FLOP per byte at which the roofline's slope meets its flat top."""
        return self.peak(compute) / self.memory_bandwidth

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {k: v for k, v in d.items() if v not in (None, {}) and not (k == "gpus_per_board" and v == 1)
                and not (k == "user" and not v)}


@dataclass(frozen=True)
class Interconnect:
    id: str
    name: str
    bandwidth: float        # bytes/s, per direction
    source: str
    note: str = ""
    latency: float = 0.0    # seconds per message
    user: bool = False

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {k: v for k, v in d.items() if not (k == "user" and not v)}


def _validator(schema: dict):
    import jsonschema   # lazily: only loading the database needs it

    return jsonschema.Draft202012Validator(schema)


def _non_finite(value: Any, path: str = "") -> str | None:
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return path or "entry"
    if isinstance(value, dict):
        for k, v in value.items():
            bad = _non_finite(v, f"{path}.{k}" if path else str(k))
            if bad:
                return bad
    return None


def _first_problem(validator, entry: Any) -> tuple[str, str] | None:
    bad = _non_finite(entry)
    if bad:
        return bad, "must be a finite number"
    errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]
    path = ".".join(str(p) for p in e.absolute_path) or (e.validator == "required" and
                                                         e.message.split("'")[1]) or "entry"
    return path, e.message


def _entry_id(entry: Any, i: int, what: str) -> str:
    return entry.get("id") if isinstance(entry, dict) and isinstance(entry.get("id"), str) else f"{what}[{i}]"


def _make_device(entry: dict) -> Device:
    return Device(**{k: v for k, v in entry.items()})


def _make_link(entry: dict) -> Interconnect:
    return Interconnect(**entry)


@dataclass(frozen=True)
class DeviceDB:
    devices: dict          # id → Device, in file order
    interconnects: dict    # id → Interconnect
    problems: tuple = ()   # "id: field: message" for each entry left out

    # -- lookup -----------------------------------------------------------------------------------------------
    def device(self, query: str) -> Device:
        return self._find(query, self.devices, "device")

    def link(self, query: str) -> Interconnect:
        return self._find(query, self.interconnects, "interconnect")

    @staticmethod
    def _find(query: str, table: dict, what: str):
        q = str(query).strip().lower()
        if q in table:
            return table[q]
        for item in table.values():
            if item.name.lower() == q:
                return item
        partial = [item for item in table.values() if q and (q in item.name.lower() or q in item.id)]
        if len(partial) == 1:
            return partial[0]
        keys = {**{i.id: i for i in table.values()}, **{i.name.lower(): i for i in table.values()}}
        close = difflib.get_close_matches(q, list(keys), n=5, cutoff=0.4)
        ids = list(dict.fromkeys(keys[c].id for c in close)) or [i.id for i in partial[:5]]
        hint = f"; closest: {', '.join(ids)}" if ids else ""
        if len(partial) > 1:
            hint = f"; it matches several: {', '.join(i.id for i in partial[:8])}"
        raise DeviceError(f"unknown {what} '{query}'{hint}", field=what, value=query)

    # -- user devices -----------------------------------------------------------------------------------------
    def add(self, spec: dict) -> "DeviceDB":
        """A new database with ``spec`` added (or replacing the entry with the same id); raises DeviceError naming
        the field if the spec is invalid. The file on disk is not touched."""
        spec = {**spec, "user": True}
        is_link = "bandwidth" in spec and "peak_flops" not in spec
        problem = _first_problem(_validator(INTERCONNECT_SCHEMA if is_link else DEVICE_SCHEMA), spec)
        if problem:
            raise DeviceError(problem[1], node=spec.get("id") if isinstance(spec.get("id"), str) else "new device",
                              field=problem[0])
        if is_link:
            return DeviceDB(self.devices, {**self.interconnects, spec["id"]: _make_link(spec)}, self.problems)
        return DeviceDB({**self.devices, spec["id"]: _make_device(spec)}, self.interconnects, self.problems)

    def remove(self, id_: str) -> "DeviceDB":
        if id_ in self.devices:
            return DeviceDB({k: v for k, v in self.devices.items() if k != id_}, self.interconnects, self.problems)
        if id_ in self.interconnects:
            return DeviceDB(self.devices, {k: v for k, v in self.interconnects.items() if k != id_}, self.problems)
        raise DeviceError("no such device or interconnect", field="id", value=id_)

    def user_entries(self) -> dict:
        return {"schema": SCHEMA_NAME, "version": SCHEMA_VERSION,
                "devices": [d.to_dict() for d in self.devices.values() if d.user],
                "interconnects": [i.to_dict() for i in self.interconnects.values() if i.user]}


def parse_devices(data: Any, *, where: str = "device_specs.json", user: bool = False) -> DeviceDB:
    """Validate a parsed document entry by entry; bad entries go to ``problems``, the rest load."""
    if not isinstance(data, dict):
        raise DeviceError(f"expected a JSON object, got {type(data).__name__}", node=where)
    if data.get("schema") != SCHEMA_NAME or data.get("version") != SCHEMA_VERSION:
        raise DeviceError(f"expected schema '{SCHEMA_NAME}' version {SCHEMA_VERSION}", node=where, field="schema",
                          value=f"{data.get('schema')} v{data.get('version')}")
    problems: list[str] = []
    out = []
    for key, schema, make in (("devices", DEVICE_SCHEMA, _make_device), ("interconnects", INTERCONNECT_SCHEMA, _make_link)):
        entries = data.get(key, [])
        if not isinstance(entries, list):
            raise DeviceError("must be a list", node=where, field=key)
        validator = _validator(schema)
        table: dict = {}
        for i, entry in enumerate(entries):
            ident = _entry_id(entry, i, key)
            problem = _first_problem(validator, entry)
            if problem is None and entry["id"] in table:
                problem = ("id", "duplicate id")
            if problem:
                problems.append(f"{ident}: {problem[0]}: {problem[1]}")
                continue
            table[entry["id"]] = make({**entry, "user": user or entry.get("user", False)})
        out.append(table)
    return DeviceDB(out[0], out[1], tuple(problems))


def _read(path: Path) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise DeviceError(f"cannot read: {e.strerror}", node=str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DeviceError(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})", node=str(path)) from None


@lru_cache(maxsize=8)
def _load_cached(path: str, mtime: float) -> DeviceDB:
    return parse_devices(_read(Path(path)), where=Path(path).name)


def load_devices(path: str | Path | None = None, user_path: str | Path | None = USER_PATH) -> DeviceDB:
    """The database (default: ``device_specs.json`` beside ``core/``) plus the user's own entries (default
    ``~/.cnn_calc/devices.json``, or ``$CNN_CALC_HOME/devices.json``; ``user_path=None`` leaves them out)."""
    p = Path(path or DEFAULT_PATH)
    try:
        mtime = p.stat().st_mtime
    except OSError as e:
        raise DeviceError(f"cannot read: {e.strerror}", node=str(p)) from None
    db = _load_cached(str(p), mtime)
    if user_path is not None and Path(user_path).exists():
        extra = parse_devices(_read(Path(user_path)), where=Path(user_path).name, user=True)
        db = DeviceDB({**db.devices, **extra.devices}, {**db.interconnects, **extra.interconnects},
                      db.problems + extra.problems)
    return db


def save_user_devices(db: DeviceDB, path: str | Path) -> None:
    Path(path).write_text(json.dumps(db.user_entries(), indent=1), encoding="utf-8")
