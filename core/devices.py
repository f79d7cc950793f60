"""The hardware database: ``device_specs.json`` at the top of the repository, validated against a JSON Schema.

A bad entry is reported by id and field and left out; the rest still load (``DeviceDB.problems``). Users add and edit
their own devices without touching the file: ``db.add(spec)`` returns a new database (validated the same way), and
``save_user_devices`` / ``load_devices(user_path=...)`` keep them in a file of their own.

Each field of an entry is declared once, in ``DEVICE_FIELDS`` / ``INTERCONNECT_FIELDS`` (name, type, constraint,
meaning, required or default): the ``Device`` and ``Interconnect`` dataclasses and the JSON Schemas are made from
them. Units: FLOP/s (ops/s for int8), bytes/s, bytes, seconds.
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
from .precision import PRECISIONS
from .registry import WORK_CLASSES

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "device_specs.json"
SCHEMA_NAME = "cnn-calc/devices"
SCHEMA_VERSION = 1
# The peaks a device states: the compute precision of each numeric format (core.precision), each once.
PRECISION_KEYS = tuple(dict.fromkeys(p.compute for p in PRECISIONS.values()))
KINDS = ("GPU", "CPU", "TPU", "SoC", "accelerator")
# Classes of work a calibrated device states its own efficiency and per-layer overhead for (core.registry; a class
# without a figure uses its WORK_FALLBACK's).
OP_CLASSES = WORK_CLASSES
USER_PATH = Path(os.environ.get("CNN_CALC_HOME", "~/.cnn_calc")).expanduser() / "devices.json"


# -- the fields of an entry, declared once: the dataclasses and the JSON Schemas are made from these ---------------

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


class _Needed:
    def __repr__(self) -> str:
        return "<needed>"


NEEDED = _Needed()      # a FieldSpec default: the dataclass must be given the field


@dataclass(frozen=True)
class FieldSpec:
    """One field of a database entry. ``type`` is the Python type (its JSON type follows: str → string, float →
    number, …); ``rule`` the JSON Schema keywords that constrain the value beyond its type (bounds, pattern,
    properties; ``enum`` stands instead of a type); ``required``: a file entry must give it; ``default``: what the
    dataclass holds when it is not given (``NEEDED``: the dataclass must be given it; a dict field defaults to an empty
    dict)."""

    name: str
    type: type
    doc: str
    rule: dict = field(default_factory=dict)
    required: bool = False
    default: Any = NEEDED

    def schema(self) -> dict:
        typed = {} if "enum" in self.rule else {"type": _JSON_TYPES[self.type]}
        return {**typed, **self.rule, "description": self.doc}

    def dataclass_field(self):
        if self.default is NEEDED:
            return field()
        if self.type is dict:
            return field(default_factory=dict)
        return field(default=self.default)

    @property
    def annotation(self):
        return self.type if self.default is not None else self.type | None


def _each(keys, value: dict) -> dict:
    """An object whose keys may only be ``keys``, each holding ``value``."""
    return {"additionalProperties": False, "properties": {k: {**value} for k in keys}}


_ID = FieldSpec("id", str, "short name: lower-case letters, digits and hyphens (the CLI's --device)", required=True,
                rule={"pattern": "^[a-z0-9][a-z0-9-]*$"})
_NAME = FieldSpec("name", str, "the name the app shows", required=True, rule={"minLength": 1})
_SOURCE = FieldSpec("source", str, "where the figures come from: a datasheet address, or how they were measured",
                    required=True, rule={"minLength": 1})
_NOTE = FieldSpec("note", str, "anything a reader should know about the figures", required=True, default="")
_USER = FieldSpec("user", bool, "one of the user's own entries (their file), not a built-in one", default=False)
_POSITIVE = {"exclusiveMinimum": 0}
_PEAKS = _each(PRECISION_KEYS, {"type": "number", **_POSITIVE})

DEVICE_FIELDS: tuple[FieldSpec, ...] = (
    _ID, _NAME,
    FieldSpec("vendor", str, "who makes it", required=True, rule={"minLength": 1}),
    FieldSpec("kind", str, "what it is: " + ", ".join(KINDS), required=True, rule={"enum": list(KINDS)}),
    FieldSpec("year", int, "year of release", required=True, rule={"minimum": 1990, "maximum": 2100}),
    FieldSpec("peak_flops", dict, "dense peak per precision, FLOP/s (int8: ops/s); at least one", required=True,
              rule={**_PEAKS, "minProperties": 1}),
    FieldSpec("memory_bandwidth", float, "main-memory bandwidth, bytes/s", required=True, rule=_POSITIVE),
    _SOURCE, _NOTE,
    FieldSpec("memory_capacity", float, "memory size, bytes", rule=_POSITIVE, default=None),
    FieldSpec("sparse_flops", dict, "peak per precision with structured sparsity, FLOP/s", rule=_PEAKS, default={}),
    FieldSpec("gpus_per_board", int, "GPUs on one board (a K80 board holds two)", rule={"minimum": 1}, default=1),
    FieldSpec("compute_notes", dict, "precision → a note on its peak",
              rule={"additionalProperties": {"type": "string"}}, default={}),
    FieldSpec("efficiency", dict, "class of work → fraction of the peak it reaches (calibrated devices)",
              rule=_each(OP_CLASSES, {"type": "number", "exclusiveMinimum": 0, "maximum": 1}), default={}),
    FieldSpec("layer_overhead", dict, "class of work → seconds each layer call costs on top of its work (calibrated "
              "devices)", rule=_each(OP_CLASSES, {"type": "number", "minimum": 0, "maximum": 1}), default={}),
    # a Linux CPU's malloc (glibc): bytes a forward pass writes to fresh pages (core.cpu_heap replays its
    # allocations) run at alloc_bandwidth, the page-fault rate
    FieldSpec("alloc_threshold", float, "the allocator's largest mmap threshold, bytes (glibc: 32 MiB on 64-bit)",
              rule=_POSITIVE, default=None),
    FieldSpec("alloc_bandwidth", float, "rate of writes to pages the process has not touched yet (page faults), "
              "bytes/s", rule=_POSITIVE, default=None),
    _USER,
)
INTERCONNECT_FIELDS: tuple[FieldSpec, ...] = (
    _ID, _NAME,
    FieldSpec("bandwidth", float, "bytes/s per direction", required=True, rule=_POSITIVE),
    _SOURCE, _NOTE,
    FieldSpec("latency", float, "seconds per message", rule={"minimum": 0}, default=0.0),
    _USER,
)


def entry_schema(fields: tuple[FieldSpec, ...]) -> dict:
    """The JSON Schema of one entry: an object with exactly these fields, the required ones required."""
    return {"type": "object", "required": [f.name for f in fields if f.required], "additionalProperties": False,
            "properties": {f.name: f.schema() for f in fields}}


def _entry(fields: tuple[FieldSpec, ...]):
    """Make the decorated class a frozen dataclass with ``fields``, in their order, and their docs in its own."""
    def make(cls):
        cls.__annotations__ = {f.name: f.annotation for f in fields}
        for f in fields:
            setattr(cls, f.name, f.dataclass_field())
        cls.__doc__ = (cls.__doc__ or "") + "\n\nFields:\n" + "\n".join(f"    {f.name}: {f.doc}" for f in fields)
        return dataclass(frozen=True)(cls)
    return make


DEVICE_SCHEMA: dict = entry_schema(DEVICE_FIELDS)
INTERCONNECT_SCHEMA: dict = entry_schema(INTERCONNECT_FIELDS)


@_entry(DEVICE_FIELDS)
class Device:
    """A device of the database (``DEVICE_FIELDS`` declares its fields and their JSON Schema). Units: FLOP/s,
    bytes/s, bytes, seconds."""

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


@_entry(INTERCONNECT_FIELDS)
class Interconnect:
    """A link between devices (``INTERCONNECT_FIELDS``)."""

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {k: v for k, v in d.items() if not (k == "user" and not v)}


def _validator(schema: dict):
    import jsonschema  # lazily: only loading the database needs it

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
    for key, schema, make in (("devices", DEVICE_SCHEMA, _make_device),
                              ("interconnects", INTERCONNECT_SCHEMA, _make_link)):
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
