"""The hardware database: ``device_specs.json`` at the top of the repository, validated against a JSON Schema.

A bad entry is reported by id and field and left out; the rest still load (``DeviceDB.problems``). Users add and edit
their own devices without touching the file: ``db.add(spec)`` returns a new database (validated the same way), and
``save_user_devices`` / ``load_devices(user_path=...)`` keep them in a file of their own (a class server keeps each
user's ``DeviceDB`` in their session instead: ``ui.state``), and ``load_devices(user_data=...)`` reads entries held
elsewhere than in a file (an upload's bytes). A user file or document that cannot be read at all is left out whole
(``DeviceDB.left_out``, one line also in ``problems``); saving over it first moves it to ``<name>.bad``.

Numbers have physical bounds (``PEAK_RANGE``, ``BANDWIDTH_RANGE``, …) far outside any real device's, so every time
made from them is a finite float; an estimate still refuses a non-finite time from a ``Device`` made in code.

Each field of an entry is declared once, in ``DEVICE_FIELDS`` / ``INTERCONNECT_FIELDS`` (name, type, constraint,
meaning, required or default): the ``Device`` and ``Interconnect`` dataclasses and the JSON Schemas are made from
them. Units: FLOP/s (ops/s for int8), bytes/s, bytes, seconds.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from functools import lru_cache
from math import isfinite
from pathlib import Path
from typing import Any

from .errors import MAX_SHOWN, DeviceError, one_line, show
from .files import DEVICE_FILE_LIMIT, parse_json, read_text
from .precision import PRECISIONS
from .registry import WORK_CLASSES

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "device_specs.json"
SCHEMA_NAME = "cnn-calc/devices"
SCHEMA_VERSION = 1
# The peaks a device states: the compute precision of each numeric format (core.precision), each once.
PRECISION_KEYS = tuple(dict.fromkeys(p.compute for p in PRECISIONS.values()))
KINDS = ("GPU", "CPU", "TPU", "SoC", "accelerator")
OP_CLASSES = WORK_CLASSES      # a calibrated device's classes of work (one without a figure uses its WORK_FALLBACK's)
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


_ID = FieldSpec("id", str, "short name: lower-case letters, digits and hyphens (the CLI's --device)",
                required=True, rule={"pattern": "^[a-z0-9][a-z0-9-]*$"})
_NAME = FieldSpec("name", str, "the name the app shows", required=True, rule={"minLength": 1})
_SOURCE = FieldSpec("source", str, "where the figures come from: a datasheet address, or how they were measured",
                    required=True, rule={"minLength": 1})
_NOTE = FieldSpec("note", str, "anything a reader should know about the figures", required=True, default="")
_USER = FieldSpec("user", bool, "one of the user's own entries (their file), not a built-in one", default=False)
_POSITIVE = {"exclusiveMinimum": 0}
# Physical bounds on the numbers a file or a form gives, far outside any real device's yet tight enough that every
# time and throughput made from them is a finite float (a peak of 5e-324 FLOP/s, or 10^400, is not a device).
PEAK_RANGE = (1e3, 1e21)            # FLOP/s: a microcontroller's kFLOP/s to a zettaFLOP/s wafer
BANDWIDTH_RANGE = (1e3, 1e18)       # bytes/s: memory, page faults, links
CAPACITY_MAX = 2.0 ** 70            # bytes (1 ZiB)
EFFICIENCY_MIN = 1e-6               # a class of work at a millionth of the peak
LATENCY_MAX = 10.0                  # seconds per message
_PEAK = {"minimum": PEAK_RANGE[0], "maximum": PEAK_RANGE[1]}
_BANDWIDTH = {"minimum": BANDWIDTH_RANGE[0], "maximum": BANDWIDTH_RANGE[1]}
_SECONDS = {"type": "number", "minimum": 0, "maximum": 1}      # a per-call cost: under a second
_CAPACITY = {**_POSITIVE, "maximum": CAPACITY_MAX}
_PEAKS, _RATE = _each(PRECISION_KEYS, {"type": "number", **_PEAK}), {"type": "number", **_BANDWIDTH}
_EFFICIENCY = _each(OP_CLASSES, {"type": "number", "minimum": EFFICIENCY_MIN, "maximum": 1})   # class → its share

# GPU generations a device's ``architecture`` names (the GPU time model fits per generation), oldest first per
# vendor; "fixed-function": before programmable shaders (GeForce 256). "ampere": GA10x (RTX 30, A10, A40); the A100
# (GA100: tensor cores at twice GA10x's rate per SM, 64 FP32 lanes per SM) fitted apart (A100, GA102 whitepapers).
ARCHITECTURES = ("fixed-function", "tesla", "fermi", "kepler", "maxwell", "pascal", "volta", "turing", "ampere",
                 "ampere-ga100", "ada", "hopper", "blackwell", "gcn", "rdna", "rdna2", "rdna3", "cdna", "cdna2",
                 "cdna3")
# FP32 lanes (CUDA cores, AMD stream processors) per SM / compute unit, each generation's published values: fp32
# peak = 2 (FMA) x lanes x SMs x boost clock. Two values where the generation's data-centre chip differs from its
# graphics chips. Sources: NVIDIA Kepler GK110/GK210 whitepaper (192); GeForce GTX 980 (GM204) whitepaper (128);
# Tesla P100 (GP100) whitepaper (64) and GeForce GTX 1080 (GP104) whitepaper (128); Volta V100 whitepaper (64);
# Turing architecture whitepaper (64); A100 (GA100) whitepaper (64) and GA102 whitepaper (128); Ada architecture
# whitepaper (128); H100 (Hopper) whitepaper (128); AMD CDNA 2 whitepaper (64 per CU); AMD CDNA 3 whitepaper (128
# per CU, as AMD counts its fp32 vector peak: dual-issue); AMD RX 6800 product page (RDNA 2: 64 per CU).
FP32_LANES_PER_SM = {"kepler": (192,), "maxwell": (128,), "pascal": (64, 128), "volta": (64,), "turing": (64,),
                     "ampere": (64, 128), "ampere-ga100": (64,), "ada": (128,), "hopper": (128,), "rdna2": (64,),
                     "cdna2": (64,), "cdna3": (128,)}
CLOCK_RANGE = (1e6, 1e11)           # Hz: 1 MHz to 100 GHz
SM_MAX = 100_000                    # SMs / compute units on one GPU

DEVICE_FIELDS: tuple[FieldSpec, ...] = (
    _ID, _NAME, FieldSpec("vendor", str, "who makes it", required=True, rule={"minLength": 1}),
    FieldSpec("kind", str, "what it is: " + ", ".join(KINDS), required=True, rule={"enum": list(KINDS)}),
    FieldSpec("year", int, "year of release", required=True, rule={"minimum": 1990, "maximum": 2100}),
    FieldSpec("peak_flops", dict, "dense peak per precision, FLOP/s (int8: ops/s); at least one", required=True,
              rule={**_PEAKS, "minProperties": 1}),
    FieldSpec("memory_bandwidth", float, "main-memory bandwidth, bytes/s", required=True, rule=_BANDWIDTH),
    _SOURCE, _NOTE,
    FieldSpec("memory_capacity", float, "memory size, bytes", rule=_CAPACITY, default=None),
    FieldSpec("sparse_flops", dict, "peak per precision with structured sparsity, FLOP/s", rule=_PEAKS, default={}),
    FieldSpec("gpus_per_board", int, "GPUs on one board (a K80 board holds two)", rule={"minimum": 1, "maximum": 1024},
              default=1),
    FieldSpec("architecture", str, "GPU generation (the GPU time model fits per generation): "
              + ", ".join(ARCHITECTURES), rule={"enum": list(ARCHITECTURES)}, default=None),
    FieldSpec("sm_count", int, "streaming multiprocessors (NVIDIA) or compute units (AMD) per GPU",
              rule={"minimum": 1, "maximum": SM_MAX}, default=None),
    FieldSpec("boost_clock", float, "the boost clock the peaks are stated at, Hz",
              rule={"minimum": CLOCK_RANGE[0], "maximum": CLOCK_RANGE[1]}, default=None),
    FieldSpec("l2_bytes", int, "last-level on-chip cache of one GPU (L2), bytes",
              rule={"minimum": 1, "maximum": 2 ** 40}, default=None),
    FieldSpec("sources", dict, "field (\"sm_count\", \"peak_flops.fp16\", \"l2_bytes\") → its source, where it is not "
              "the entry's source", rule={"propertyNames": {"pattern": "^[a-z0-9_]+(\\.[a-z0-9_]+)?$"},
                                          "additionalProperties": {"type": "string", "minLength": 1}}, default={}),
    FieldSpec("compute_notes", dict, "precision → a note on its peak",
              rule={"additionalProperties": {"type": "string"}}, default={}),
    FieldSpec("efficiency", dict, "class of work → fraction of the peak it reaches (calibrated devices)",
              rule=_EFFICIENCY, default={}),
    FieldSpec("layer_overhead", dict, "class of work → seconds each layer call costs on top of its work (calibrated "
              "devices)", rule=_each(OP_CLASSES, _SECONDS), default={}),
    # the backward pass and the optimizer step on a calibrated CPU (core.bridge.calibrate): autograd's kernels and
    # per-node cost differ from the forward's; absent (older files, GPUs), the backward uses the forward's figures
    FieldSpec("backward_efficiency", dict, "class of work → fraction of the peak its backward pass reaches "
              "(calibrated CPUs)", rule=_EFFICIENCY, default={}),
    FieldSpec("backward_overhead", dict, "class of work → seconds each layer's backward (autograd node) costs on "
              "top of its work (calibrated CPUs)", rule=_each(OP_CLASSES, _SECONDS), default={}),
    FieldSpec("train_efficiency", dict, "class of work → fraction of the peak a training step's forward reaches "
              "(train mode, autograd recording; calibrated CPUs)", rule=_EFFICIENCY, default={}),
    FieldSpec("train_overhead", dict, "class of work → seconds each layer call of a training step's forward costs on "
              "top of its work (calibrated CPUs)", rule=_each(OP_CLASSES, _SECONDS), default={}),
    FieldSpec("update_overhead", float, "seconds the optimizer step costs per parameter tensor on top of its bytes "
              "(calibrated CPUs: torch.optim's per-parameter loop)", rule={"minimum": 0, "maximum": 1}, default=None),
    FieldSpec("parallel_grain", float, "seconds of a layer's work at one thread below which a CPU calibrated at "
              "several threads does not split it (it runs at one thread's speed; up to this, the split is paid)",
              rule={"minimum": 0, "maximum": 1}, default=None),
    FieldSpec("class_grain", dict, "class of work → its own parallel_grain, where it differs (a class without one "
              "uses its fallback's, then parallel_grain)", rule=_each(OP_CLASSES, _SECONDS), default={}),
    # glibc's malloc: a forward's bytes on fresh pages (core.cpu_heap) run at alloc_bandwidth, the page-fault rate
    FieldSpec("alloc_threshold", float, "the allocator's largest mmap threshold, bytes (glibc: 32 MiB on 64-bit)",
              rule=_CAPACITY, default=None),
    FieldSpec("alloc_bandwidth", float, "rate of writes to pages the process has not touched yet (page faults), "
              "bytes/s", rule=_BANDWIDTH, default=None),
    FieldSpec("weight_bandwidth", dict, "class of work → rate its layers' weights are read at, bytes/s (calibrated "
              "CPUs: oneDNN reorders a conv's weights every call)", rule=_each(OP_CLASSES, _RATE), default={}),
    FieldSpec("cache_bytes", float, "a calibrated CPU's last-level cache, bytes: a forward reads a linear layer's "
              "weights that fit at the bandwidth, not weight_bandwidth", rule=_CAPACITY, default=None),
    FieldSpec("backward_weight_bandwidth", dict, "the same in a backward pass, for its weights and their gradients",
              rule=_each(OP_CLASSES, _RATE), default={}),
    FieldSpec("padded_layout", dict, "a calibrated CPU's oneDNN convs: the channel block of its layout and the seconds "
              "per element copied for a tensor whose channels do not fill it (core.work.padded_elements)", default={},
              rule={"additionalProperties": False, "required": ["block", "seconds"], "properties": {
                  "block": {"type": "integer", "minimum": 1, "maximum": 1024}, "seconds": _SECONDS}}),
    # how good a calibration is (core.bridge.calibrate): the app and an estimate can say so
    FieldSpec("calibration", dict, "a calibrated device's quality: torch threads it was measured at, the median "
              "|error| predicting held-out networks (fraction) and each one's signed error, the largest spread "
              "(interquartile range ÷ median of runs) kept and of what, whether it was kept although noisy "
              "(--force) and why, when, on what host (CPU, ISA, torch, oneDNN, MKL)", default={},
              rule={"additionalProperties": False, "properties": {
                  "threads": {"type": "integer", "minimum": 1, "maximum": 4096},
                  "held_out_error": {"type": "number", "minimum": 0},
                  "held_out": {"type": "object", "additionalProperties": {"type": "number", "minimum": -1}},
                  "spread": {"type": "number", "minimum": 0}, "spread_of": {"type": "string"},
                  "noisy": {"type": "boolean"}, "unsteady": {"type": "string"}, "date": {"type": "string"},
                  "host": {"type": "object", "additionalProperties": {"type": "string"}}}}),
    _USER,
)
INTERCONNECT_FIELDS: tuple[FieldSpec, ...] = (
    _ID, _NAME, FieldSpec("bandwidth", float, "bytes/s per direction", required=True, rule=_BANDWIDTH),
    _SOURCE, _NOTE,
    FieldSpec("latency", float, "seconds per message", rule={"minimum": 0, "maximum": LATENCY_MAX}, default=0.0),
    FieldSpec("allreduce_bandwidth", float, "bus bandwidth NCCL's all-reduce reaches over this link (nccl-tests' "
              "busbw at large messages), bytes/s", rule=_BANDWIDTH, default=None),
    FieldSpec("allreduce_source", str, "where allreduce_bandwidth comes from", rule={"minLength": 1}, default=None),
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
        try:
            return float(value)
        except (OverflowError, TypeError, ValueError):
            raise DeviceError("must be a number of FLOP/s a float holds", node=self.id, field=f"peak_flops.{compute}",
                              value=value) from None

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
        return {k: v for k, v in d.items() if v is not None and not (k == "user" and not v)}


def _validator(schema: dict):
    import jsonschema  # lazily: only loading the database needs it

    return jsonschema.Draft202012Validator(schema)


def _non_finite(value: Any, path: str = "") -> tuple[str, Any] | None:
    """(path, value) of the first number in ``value`` that no float holds (NaN, ±inf, an integer beyond 1e308)."""
    if isinstance(value, float) and not isfinite(value):
        return path or "entry", value
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1024:
        return path or "entry", value
    named = isinstance(value, dict)
    for k, v in value.items() if named else enumerate(value) if isinstance(value, list) else ():
        bad = _non_finite(v, (f"{path}.{k}" if path else str(k)) if named else f"{path}[{k}]")
        if bad:
            return bad
    return None


def _first_problem(validator, entry: Any) -> tuple[str, str] | None:
    try:
        bad = _non_finite(entry)
        if bad:
            return bad[0], "must be a finite number" + ("" if isinstance(bad[1], float) else f", not {show(bad[1])}")
        errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
    except RecursionError:
        return "entry", "nested too deeply"
    if not errors:
        return None
    e = errors[0]
    path = ".".join(str(p) for p in e.absolute_path) or (e.validator == "required" and
                                                         e.message.split("'")[1]) or "entry"
    bound = _BOUNDS.get(e.validator)
    if bound:           # said here: jsonschema's message would print a 300-digit integer whole
        message = f"{show(e.instance)} is {bound} {e.validator_value:g}"
    else:
        message = e.message if len(e.message) <= MAX_SHOWN else e.message[:MAX_SHOWN - 1] + "…"
    return path[:MAX_SHOWN], one_line(message)


_BOUNDS = {"minimum": "less than the minimum of", "maximum": "greater than the maximum of",
           "exclusiveMinimum": "less than or equal to the minimum of",
           "exclusiveMaximum": "greater than or equal to the maximum of"}


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
    left_out: tuple = ()   # one message per user file or document left out whole (also in ``problems``)
    # (id, sentence) for each user entry left out, (None, sentence) for a user file left out whole: what an unknown
    # id's error adds, naming the file and the reason
    causes: tuple = ()

    # -- lookup -----------------------------------------------------------------------------------------------
    def device(self, query: str) -> Device:
        return self._find(query, self.devices, "device")

    def link(self, query: str) -> Interconnect:
        return self._find(query, self.interconnects, "interconnect")

    def _find(self, query: str, table: dict, what: str):
        if not isinstance(query, str):
            raise DeviceError(f"expected a {what} id or name, not {type(query).__name__}", field=what, value=query)
        q = query.strip().lower()
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
        raise DeviceError(f"unknown {what} '{query}'{hint}{self._cause(q)}", field=what, value=query)

    def _cause(self, q: str) -> str:
        """Why an id may be missing: its own entry left out of a user file, else every user file left out whole."""
        own = [text for ident, text in self.causes if ident is not None and ident.lower() == q]
        whole = [text for ident, text in self.causes if ident is None]
        return f" ({'; '.join(own or whole)})" if own or whole else ""

    # -- user devices -----------------------------------------------------------------------------------------
    def add(self, spec: dict) -> "DeviceDB":
        """A new database with ``spec`` added (or replacing the entry with the same id); raises DeviceError naming
        the field if the spec is invalid. The file on disk is not touched."""
        if not isinstance(spec, dict):
            raise DeviceError(f"a device or interconnect is a dict of its fields, not {type(spec).__name__}",
                              node="new device", field="spec", value=spec)
        spec = {**spec, "user": True}
        is_link = "bandwidth" in spec and "peak_flops" not in spec
        problem = _first_problem(_validator(INTERCONNECT_SCHEMA if is_link else DEVICE_SCHEMA), spec)
        if problem:
            raise DeviceError(problem[1], node=spec.get("id") if isinstance(spec.get("id"), str) else "new device",
                              field=problem[0])
        if is_link:
            return replace(self, interconnects={**self.interconnects, spec["id"]: _make_link(spec)})
        return replace(self, devices={**self.devices, spec["id"]: _make_device(spec)})

    def remove(self, id_: str) -> "DeviceDB":
        if not isinstance(id_, str):
            raise DeviceError("expected a device or interconnect id", field="id", value=id_)
        if id_ in self.devices:
            return replace(self, devices={k: v for k, v in self.devices.items() if k != id_})
        if id_ in self.interconnects:
            return replace(self, interconnects={k: v for k, v in self.interconnects.items() if k != id_})
        raise DeviceError("no such device or interconnect", field="id", value=id_)

    def merged(self, other: "DeviceDB") -> "DeviceDB":
        """This database with ``other``'s entries added (replacing those with the same id) and its problems."""
        return DeviceDB({**self.devices, **other.devices}, {**self.interconnects, **other.interconnects},
                        self.problems + other.problems, self.left_out + other.left_out, self.causes + other.causes)

    def user_entries(self) -> dict:
        return {"schema": SCHEMA_NAME, "version": SCHEMA_VERSION,
                "devices": [d.to_dict() for d in self.devices.values() if d.user],
                "interconnects": [i.to_dict() for i in self.interconnects.values() if i.user]}


def _text(value: Any) -> str:
    """``str(value)`` cut to a message's length, and never an error (a list nested 2,000 deep, a 5,000-digit int)."""
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 — RecursionError, ValueError: the value is shown by its type instead
        text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 1] + "…"


def parse_devices(data: Any, *, where: str = "device_specs.json", user: bool = False, shown: str = "") -> DeviceDB:
    """Validate a parsed document entry by entry; bad entries go to ``problems``, the rest load. ``shown``: the
    user file as the user knows it (``~/.cnn_calc/devices.json``), which ``causes`` name."""
    if not isinstance(data, dict):
        raise DeviceError(f"expected a JSON object, got {type(data).__name__}", node=where)
    if data.get("schema") != SCHEMA_NAME or data.get("version") != SCHEMA_VERSION:
        raise DeviceError(f"expected schema '{SCHEMA_NAME}' version {SCHEMA_VERSION}", node=where, field="schema",
                          value=f"{_text(data.get('schema'))} v{_text(data.get('version'))}")
    problems: list[str] = []
    causes: list[tuple] = []
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
                if shown:
                    causes.append((ident, f"its entry in {shown} was left out: {problem[0]}: {problem[1]}"))
                continue
            table[entry["id"]] = make({**entry, "user": user or entry.get("user", False)})
        out.append(table)
    return DeviceDB(out[0], out[1], tuple(problems), causes=tuple(causes))


def _read(path: Path) -> Any:
    """The parsed document in a device file: a regular file of at most ``DEVICE_FILE_LIMIT`` bytes, UTF-8 JSON.
    Every failure (unreadable, too large, not UTF-8, not JSON, nested too deeply, an over-long integer) is a
    DeviceError naming the file."""
    return parse_json(read_text(path, limit=DEVICE_FILE_LIMIT, error=DeviceError), _failure(str(path)))


def _failure(where: str):
    return lambda reason: DeviceError(reason, node=where)


def read_devices_document(data: Any, *, where: str = "uploaded devices") -> Any:
    """The parsed document in an upload: bytes or text (size-capped, decoded, parsed; failures are DeviceErrors
    naming ``where``), or a document already parsed (returned as it is)."""
    if isinstance(data, (bytes, bytearray, str)):
        if len(data) > DEVICE_FILE_LIMIT:
            raise DeviceError(f"the document is {len(data):,} bytes; the limit is {DEVICE_FILE_LIMIT:,}", node=where)
        return parse_json(data, _failure(where))
    return data


@lru_cache(maxsize=8)
def _load_cached(path: str, mtime: float) -> DeviceDB:
    return parse_devices(_read(Path(path)), where=Path(path).name)


def _user_part(read, where: str, shown: str) -> DeviceDB:
    """The user's entries; a user document that cannot be read or is not a device document at all is left out
    whole, reported as one problem (the built-in database still loads). ``shown``: the file as the user knows it."""
    try:
        return parse_devices(read(), where=where, user=True, shown=shown)
    except DeviceError as e:
        message = f"{where}: the whole file is left out: {e.reason}"
        return DeviceDB({}, {}, (message,), (message,), ((None, f"{shown} was left out: {e.reason}"),))


def shown_path(path: Path) -> str:
    """A path as its user knows it: under the home folder, from ``~``."""
    try:
        return "~/" + str(path.resolve().relative_to(Path.home().resolve()))
    except (OSError, RuntimeError, ValueError):
        return str(path)


def load_devices(path: str | Path | None = None, user_path: str | Path | None = USER_PATH, *,
                 user_data: Any = None) -> DeviceDB:
    """The database (default: ``device_specs.json`` beside ``core/``) plus the user's own entries (default
    ``~/.cnn_calc/devices.json``, or ``$CNN_CALC_HOME/devices.json``; ``user_path=None`` leaves them out).

    ``user_data``: user entries held elsewhere than in a file: a parsed document or the bytes/text of an upload, in
    the format ``DeviceDB.user_entries`` gives; its
    entries come after (and replace) the user file's. A corrupt user file or document is left out and reported in
    ``problems``; only a bad ``path`` (the database itself) raises DeviceError."""
    for name, v in (("path", path), ("user_path", user_path)):
        if v is not None and not isinstance(v, (str, os.PathLike)):
            raise DeviceError(f"expected a file path, not {type(v).__name__}", field=name, value=v)
    p = Path(path or DEFAULT_PATH)
    try:
        mtime = p.stat().st_mtime
    except (OSError, ValueError) as e:
        raise DeviceError(f"cannot read: {getattr(e, 'strerror', None) or e}", node=str(p)) from None
    db = _load_cached(str(p), mtime)
    if user_path is not None and _exists(Path(user_path)):
        db = db.merged(_user_part(lambda: _read(Path(user_path)), Path(user_path).name,
                                  f"your devices file {shown_path(Path(user_path))}"))
    if user_data is not None:
        db = db.merged(_user_part(lambda: read_devices_document(user_data), "uploaded devices",
                                  "your uploaded devices file"))
    return db


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):       # a name too long, a NUL byte: not a file that exists
        return False


def _aside(path: Path) -> Path:
    """A free name beside ``path`` to keep a file that could not be read: ``<name>.bad``, ``<name>.bad-2``, …"""
    for i in range(1, 1000):
        candidate = path.with_name(path.name + (".bad" if i == 1 else f".bad-{i}"))
        if not _exists(candidate):
            return candidate
    raise OSError(errno.EEXIST, "too many unreadable copies kept beside it", str(path))


def save_user_devices(db: DeviceDB, path: str | Path) -> Path | None:
    """Write the user's entries of ``db`` to ``path`` (whole, through a temporary file, so a crash leaves the old
    file). A file already there that cannot be read as a device document (``load_devices`` left it out) is not
    overwritten: it is moved to ``<name>.bad`` first, and that path is returned (None otherwise)."""
    p = Path(path)
    kept = None
    if _exists(p):
        if not p.is_file():
            raise OSError(errno.EINVAL, "not a regular file", str(p))
        try:
            parse_devices(_read(p), where=p.name, user=True)
        except DeviceError:
            kept = _aside(p)
            os.replace(p, kept)
    # a name of its own per call: the app's sessions are threads of one process and may save at the same time
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(db.user_entries(), indent=1))
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return kept


def resolve_device(device: Any, db: DeviceDB | None = None) -> Device:
    if isinstance(device, Device):
        return device
    return device_db(db).device(device)


def resolve_link(link: Any, db: DeviceDB | None = None, field: str = "link") -> Interconnect | None:
    """An interconnect (or None) by id or name; an unknown one is an error naming the setting it was given for."""
    if link is None or isinstance(link, Interconnect):
        return link
    try:
        return device_db(db).link(link)
    except DeviceError as e:
        raise DeviceError(e.reason, node=e.node, field=field, value=e.value) from None


def device_db(db: Any) -> DeviceDB:
    if db is None:
        return load_devices()
    if not isinstance(db, DeviceDB):
        raise DeviceError("expected a DeviceDB (core.devices.load_devices)", field="db", value=type(db).__name__)
    return db
