"""The GPU fit's dataset: the rows of benchmarks/data/gpu_timings.csv (and the held-out file of the same columns)
the model can run, what a row's columns say (its pass, what its timed region holds beyond the passes), and the
value a held-out fold groups rows by. Part of benchmarks/fit_gpu_model.py.
"""

from __future__ import annotations

import csv
from pathlib import Path

from core import zoo
from core.devices import load_devices

DATA = Path(__file__).resolve().parent / "data" / "gpu_timings.csv"
# a source no fit reads (benchmarks/data/README.md): the written parameters are judged on it (``holdout``)
HOLDOUT = DATA.parent / "gpu_timings_holdout.csv"

COMPUTE_OF = {"mixed": "fp16"}           # a dataset precision → the compute precision its math runs in


def load_rows(path: Path | None = None) -> tuple[list[dict], dict]:
    """The dataset's rows the model can run (``path``: another file of the same columns), and why the others are
    skipped (counts)."""
    db = load_devices()
    known = set(zoo.names())
    rows, skipped = [], {}
    for r in csv.DictReader((path or DATA).open(encoding="utf-8")):
        why = None
        dev = db.device(r["gpu"])
        compute = COMPUTE_OF.get(r["precision"], r["precision"])
        if r["network"] not in known:
            why = f"network {r['network']} is not built in"
        elif compute not in dev.peak_flops:
            why = f"{r['gpu']} has no {compute} peak in device_specs.json"
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        # the generation a row is fitted under is its device's architecture (what core.gpu_model looks up)
        rows.append({**r, "generation": dev.architecture, "batch": int(r["batch"]),
                     "measured_s": float(r["measured_ms"]) / 1e3, "device": dev, "device_db": db})
    return rows, skipped


def pass_seconds(t: dict, which: str) -> float:
    """A row's timed region from an estimate's totals (the dataset's ``pass`` column)."""
    return {"forward": t["training_forward_s"], "inference": t["forward_s"], "backward": t["backward_s"],
            "forward_backward": t["training_forward_s"] + t["backward_s"], "training_step": t["training_step_s"]}[which]


TIMED_EXTRAS = ("h2d_input", "zero_grad")


def timed_extras(r: dict) -> set[str]:
    """What a row's timed region holds beyond the model's passes (the dataset's ``timed_extra`` column, names
    joined by "+"): "h2d_input" (``timed_extra_s``), "zero_grad" (``zero_grad_works``)."""
    names = set(filter(None, r.get("timed_extra", "").split("+")))
    if names - set(TIMED_EXTRAS):
        raise ValueError(f"unknown timed_extra {r['timed_extra']!r} (known: {', '.join(TIMED_EXTRAS)})")
    return names


def _fold_value(r: dict, key: str) -> str:
    """The value a held-out fold groups rows by: the source, or the GPU, where one GPU at two clocks (``k40`` and
    ``k40-base``: device_specs.json's "-base" ids) is one GPU, so leaving it out leaves out both."""
    return r[key].removesuffix("-base") if key == "gpu" else r[key]
