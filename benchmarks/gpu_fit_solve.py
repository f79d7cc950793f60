"""The GPU fit itself: coordinate descent of the parameters per architecture generation with a pull toward the
all-rows set (``fit``), the folds held out by source and by GPU, fitted in forked processes (``evaluate``), and
classic PALEO's one PPP. Part of benchmarks/fit_gpu_model.py.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import statistics
from concurrent.futures import ProcessPoolExecutor
from math import exp

import numpy as np

from gpu_fit_data import _fold_value
from gpu_fit_features import EXP, HI, LO, NAMES, _start_vector, _vectors, predict

SHRINK = 0.02            # pull of a generation's parameters toward the all-rows set, per unit |log ratio|
# screening (GPU_EXP=fewrows): below this many rows a generation's pull grows as 1 / rows (a prior worth a fixed
# number of rows, so 4 rows cannot move a generation far)
SHRINK_ROWS = 100
# screening (GPU_EXP=minrows): a generation with fewer training rows than this takes the all-rows set (11 parameters
# need ~2 rows each; set before any fit, not tuned)
MIN_ROWS = 20


def _subset(f: dict, rows_idx: np.ndarray) -> dict:
    """The features of some rows only, renumbered."""
    keep = np.isin(f["row"], rows_idx)
    remap = -np.ones(f["n"], dtype=int)
    remap[rows_idx] = np.arange(len(rows_idx))
    g = {k: (v[keep] if isinstance(v, np.ndarray) and v.shape == f["row"].shape else v) for k, v in f.items()}
    g["row"] = remap[f["row"][keep]]
    g["measured_s"], g["paleo_s"], g["n"] = f["measured_s"][rows_idx], f["paleo_s"][rows_idx], len(rows_idx)
    g["copy_s"] = f["copy_s"][rows_idx]
    return g


def shrink(rows: int) -> float:
    """The pull toward the all-rows set of a generation fitted on ``rows`` rows: ``SHRINK``, or with the screening
    switch "fewrows" ``SHRINK`` × ``SHRINK_ROWS`` / rows below ``SHRINK_ROWS`` rows."""
    return SHRINK * max(1.0, SHRINK_ROWS / rows) if "fewrows" in EXP else SHRINK


def log_error(f: dict, x: np.ndarray, logm: np.ndarray) -> float:
    """Mean |log(predicted / measured)| of the rows of ``f`` with one parameter vector ``x`` (``logm``: the log of
    their measured seconds): what the descent lowers, before the pull toward a prior."""
    return np.abs(np.log(predict(f, np.broadcast_to(x, (f["n"], len(x))))) - logm).mean()


def _descend(f: dict, start: np.ndarray, prior: np.ndarray | None, rounds: int) -> np.ndarray:
    """Coordinate descent on log parameters: try ×/÷ exp(step) on each, keep what lowers the loss; halve the step."""
    logm = np.log(f["measured_s"])
    pull = shrink(f["n"])

    def loss(x):
        return log_error(f, x, logm) + (pull * np.abs(np.log(x / prior)).sum() if prior is not None else 0.0)

    x, best = start.copy(), loss(start)
    step = 1.0
    for _ in range(rounds):
        moved = True
        while moved:
            moved = False
            for j in range(len(x)):
                for sign in (1, -1):
                    y = x.copy()
                    y[j] = np.clip(x[j] * exp(sign * step), LO[j], HI[j])
                    if y[j] == x[j]:
                        continue
                    ly = loss(y)
                    if ly < best - 1e-9:
                        x, best, moved = y, ly, True
        step /= 2
    return x


def fit(f: dict, rows: list[dict], train: np.ndarray, rounds: int) -> dict:
    """{"all": vector, generation: vector} fitted on the rows ``train``."""
    sub = _subset(f, train)
    out = {"all": _descend(sub, _start_vector(), None, rounds)}
    gens = np.array([rows[i]["generation"] for i in train])
    for g in sorted(set(gens)):
        idx = np.flatnonzero(gens == g)
        if "minrows" in EXP and len(idx) < MIN_ROWS:      # screening: too few rows to fit a generation on its own
            out[g] = out["all"].copy()
            continue
        out[g] = _descend(_subset(sub, idx), out["all"], out["all"], rounds)
        if "smdram" in EXP:     # screening: a generation whose own rows do not favour the SM rate keeps DRAM's rule
            j = NAMES.index("sm_rate")
            dram = out[g].copy()
            dram[j] = HI[j]
            gs = _subset(sub, idx)
            logm = np.log(gs["measured_s"])
            if log_error(gs, dram, logm) <= log_error(gs, out[g], logm):
                out[g] = dram
    return out


def _ppp(f: dict, train: np.ndarray) -> float:
    """The one PPP that minimises the median |log error| of PALEO (times scale as 1 / PPP): capped at 1."""
    return min(1.0, exp(statistics.median(np.log(f["paleo_s"][train] / f["measured_s"][train]))))


_FOLD: dict = {}        # what a forked worker reads (features, rows, rounds): set before the pool starts


def _fit_fold(train: np.ndarray) -> dict:
    return fit(_FOLD["f"], _FOLD["rows"], train, _FOLD["rounds"])


def _fit_all(f: dict, rows: list[dict], trains: list[np.ndarray], rounds: int) -> list[dict]:
    """``fit`` on each training set: the folds are independent, so they run in forked processes, one per core
    (the same numbers as one after another: each fit is deterministic)."""
    workers = min(len(trains), os.cpu_count() or 1)
    if workers < 2 or "fork" not in mp.get_all_start_methods():
        return [fit(f, rows, t, rounds) for t in trains]
    _FOLD.update(f=f, rows=rows, rounds=rounds)
    try:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
            return list(pool.map(_fit_fold, trains))
    finally:
        _FOLD.clear()


def evaluate(f: dict, rows: list[dict], rounds: int) -> dict:
    n = f["n"]
    everything = np.arange(n)
    folds = []                 # (key, held-out rows, training rows)
    for key in ("source_id", "gpu"):
        for value in sorted({_fold_value(r, key) for r in rows}):
            test = np.array([i for i, r in enumerate(rows) if _fold_value(r, key) == value])
            folds.append((key, test, np.setdiff1d(everything, test)))
    fitted, *fold_fits = _fit_all(f, rows, [everything] + [t for _, _, t in folds], rounds)
    insample = predict(f, _vectors(fitted, rows))
    base_in = f["paleo_s"] / _ppp(f, everything)
    held = {key: (np.zeros(n), np.zeros(n)) for key in ("source_id", "gpu")}
    for (key, test, train), fv in zip(folds, fold_fits):
        pred, base = held[key]
        pred[test] = predict(_subset(f, test), _vectors(fv, [rows[i] for i in test]))
        base[test] = f["paleo_s"][test] / _ppp(f, train)
    return {"fitted": fitted, "insample": insample, "base_in": base_in, "loso": held["source_id"],
            "logo": held["gpu"]}
