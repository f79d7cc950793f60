"""Fit the GPU time model (core/gpu_model.py, the estimate variant "predicted") to the published timings in
benchmarks/data/gpu_timings.csv, write core/gpu_params.json, and report its errors beside classic PALEO.

Fit: per architecture generation, the parameters of ``core.gpu_model.PARAMETERS`` minimise the mean |log(predicted /
measured)| over that generation's rows, plus a pull (``SHRINK`` × |log(p / p_global)|) toward one set fitted to all
rows, so a generation with two rows moves only what its rows say. Coordinate descent on log-scaled parameters,
steps halving, within each parameter's bounds. The baseline is classic PALEO (compute + memory at one PPP) with the
single PPP that minimises the median |log error| over the training rows.

A row's prediction is the model's passes plus what its source's timed region holds beyond them (the dataset's
``timed_extra``: the input's host-to-device copy, PyTorch < 2's ``zero_grad()`` kernels); an estimate is the passes.

Errors are |predicted / measured − 1|: in-sample, leave-one-source-out (LOSO) and leave-one-GPU-out (LOGO): each
held-out row predicted by a fit that did not see its source (GPU; a GPU at its base clock, ``k40-base``, is held out
with the same GPU at boost); a generation with no training rows in a fold uses the fold's all-rows set. A row's
generation is its device's ``architecture``. The file also gets each generation's LOSO error
(``errors_by_generation``) and the same by batch band (``errors_by_batch``: batch ≤ 8 and above), which an estimate
quotes as its typical error (``core.variants.typical_error``).
The prediction is the model evaluated with numpy on features taken from
core.paleo's own per-layer works; ``check_against_estimate`` confirms it equals ``Estimate(variant="predicted")``.

Parts: ``gpu_fit_data`` (the rows), ``gpu_fit_features`` (the model's arrays and numpy prediction), ``gpu_fit_solve``
(the fits and held-out folds), ``gpu_fit_errors`` and ``gpu_fit_report`` (the errors and the Markdown section).
Run: ``python benchmarks/fit_gpu_model.py [--quick]`` (``--quick``: fewer descent rounds, no file written), or
``python benchmarks/run_all.py --only gpu``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import quick_main
from core import gpu_model
from gpu_fit_data import COMPUTE_OF, load_rows
from gpu_fit_errors import (
    SMALL_BATCH,
    _err,
    call_cost_by_pass,
    check_against_estimate,
    errors_by_batch,
    errors_by_generation,
    holdout,
    host_scatter,
    stats,
    target_checks,
    twin_scatter,
)
from gpu_fit_features import NAMES, features, param_vectors
from gpu_fit_report import markdown
from gpu_fit_solve import _ppp, evaluate


def params_document(fitted: dict, rows: list[dict], skipped: dict, res: dict) -> dict:
    m = res["measured"]
    gens = sorted({r["generation"] for r in rows})
    return {
        "fitted": dt.date.today().isoformat(),
        "data": f"benchmarks/data/gpu_timings.csv: {len(rows)} rows used, {sum(skipped.values())} skipped",
        "script": "benchmarks/fit_gpu_model.py",
        "parameters": {n: d for n, d, _, _ in gpu_model.PARAMETERS},
        "generations": {g: {n: float(f"{v:.4g}") for n, v in zip(NAMES, fitted[g])} for g in gens},
        "all_rows": {n: float(f"{v:.4g}") for n, v in zip(NAMES, fitted["all"])},
        "errors": {k: dict(zip(("median", "p90", "rows"), stats(_err(res[k][0] if isinstance(res[k], tuple)
                                                                        else res[k], m))))
                   for k in ("insample", "loso", "logo")},
        "errors_by_generation": errors_by_generation(rows, res["loso"][0], m),
        "errors_by_batch": errors_by_batch(rows, res["loso"][0], m),
        "coverage": coverage(rows),
    }


def coverage(rows: list[dict]) -> dict:
    """{generation: {compute precision: rows fitted}} ("mixed" counts as fp16, the precision its math runs in):
    what ``core.variants.fitted_on`` tells a user a prediction stands on."""
    out: dict = {}
    for r in rows:
        compute = COMPUTE_OF.get(r["precision"], r["precision"])
        gen = out.setdefault(r["generation"], {})
        gen[compute] = gen.get(compute, 0) + 1
    return {g: dict(sorted(c.items())) for g, c in sorted(out.items())}


def measure(quick: bool = False, write: bool | None = None) -> dict:
    rows, skipped = load_rows()
    f = features(rows)
    res = evaluate(f, rows, 3 if quick else 8)
    res["measured"] = f["measured_s"]
    return summarize(rows, skipped, f, res, quick, write)


def summarize(rows: list[dict], skipped: dict, f: dict, res: dict, quick: bool = False,
              write: bool | None = None) -> dict:
    """The fit's results (``evaluate``'s, with ``measured``) as the parameter file (written unless ``quick`` or
    ``write`` False) and the groups' table."""
    doc = params_document(res["fitted"], rows, skipped, res)
    if write if write is not None else not quick:
        gpu_model.PARAMS_FILE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        gpu_model.load_params.cache_clear()
        gap = check_against_estimate(rows, f, param_vectors(doc))
    else:
        gap = None
    m = f["measured_s"]
    groups = {"all rows": np.arange(len(rows)),
              "all rows but Kepler": np.array([i for i, r in enumerate(rows) if r["generation"] != "kepler"]),
              # the sources' rows without the ones this project measured (benchmarks/data/measured/)
              "published rows": np.array([i for i, r in enumerate(rows)
                                          if not r["source_id"].startswith("measured-")]),
              f"batch 1–{SMALL_BATCH}": np.array([i for i, r in enumerate(rows) if r["batch"] <= SMALL_BATCH]),
              f"batch ≥ {SMALL_BATCH + 1}": np.array([i for i, r in enumerate(rows) if r["batch"] > SMALL_BATCH]),
              # the framework an estimate is for by default (eager PyTorch), and the rest
              "framework PyTorch": np.array([i for i, r in enumerate(rows) if r["framework"].startswith("PyTorch")]),
              "framework not PyTorch": np.array([i for i, r in enumerate(rows)
                                                 if not r["framework"].startswith("PyTorch")])}
    for key, label in (("precision", "precision"), ("generation", "generation"), ("gpu", "GPU"),
                       ("source_id", "source")):
        for v in sorted({r[key] for r in rows}):
            groups[f"{label} {v}"] = np.array([i for i, r in enumerate(rows) if r[key] == v])
    # the K80 (lab 1's GPU) at small and large batch
    for name, keep in (("GPU k80, batch 1–8", lambda b: b <= 8), ("GPU k80, batch ≥ 32", lambda b: b >= 32)):
        idx = np.array([i for i, r in enumerate(rows) if r["gpu"] == "k80" and keep(r["batch"])], dtype=int)
        if len(idx):
            groups[name] = idx
    table = []
    for name, idx in groups.items():
        line = {"group": name, "rows": len(idx)}
        for k, (pred, base) in (("in", (res["insample"], res["base_in"])), ("loso", res["loso"]),
                                ("logo", res["logo"])):
            line[k] = stats(_err(pred[idx], m[idx]))[:2]
            line[k + "_base"] = stats(_err(base[idx], m[idx]))[:2]
        table.append(line)
    return {"rows": len(rows), "skipped": skipped, "params": doc, "table": table, "estimate_gap": gap,
            "quick": quick, "host_scatter": host_scatter(rows),
            "twin_scatter": twin_scatter(rows, res["insample"]), "targets": target_checks(rows, res["loso"][0], m),
            "holdout": holdout(doc, _ppp(f, np.arange(f["n"]))),
            "call_cost": call_cost_by_pass(rows, f, doc["all_rows"]["library_overhead"])}


def main(argv=None) -> dict:
    return quick_main(measure, markdown, argv, "fewer descent rounds; core/gpu_params.json is not written")


if __name__ == "__main__":
    main()
