"""Protocol (b) over several calibrations on one host (issue 44): each run's accuracy beside its self-check, and how
much the machine itself moves between runs.

Reads ``bench_predict.py`` caches (``--cache FILE``, one protocol (b) run each: a calibration and the 24 networks
timed after it) and prints, per run, the host, the calibration's bandwidth and self-check, and the forward and
training-step median and p90 |error| of the current model on that run's own timings; then, for every pair of runs,
the median and p90 of |t₁ ÷ t₂ − 1| over the cases both timed: the same network, batch and pass, measured twice.
No model can be closer to one run's timings than the runs are to each other; so, last, each run's calibration is
also judged against every case's median over all the runs (the machine's typical time), which leaves the
calibration's own noise and the model's bias.

Each run is predicted with the estimate setting ``process`` that describes it (``bench_predict.process_of``:
"warm" for networks timed one after another in one process, "fresh" for ``--isolate``); ``--process`` overrides it.

    python benchmarks/predict_runs.py benchmarks/results/predict_amd/*.json [--process fresh]

``--grain 31,182,116/284`` instead judges each run's calibration with each of those grains (µs): one value for every
class of work, or a pair, dense convs' and linear layers' (``class_grain``) / the rest's (``parallel_grain``).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_predict import PASSES, TARGET, evaluate, process_of, summarize  # noqa: E402
from core.bridge.calibrate_fit import DENSE_CLASSES  # noqa: E402


def timings(data: dict) -> dict:
    """(network, batch, pass) → measured median seconds of a cache's protocol (b)."""
    out = {}
    for net in data["protocols"]["b"]["measured"]:
        for b, case in net.get("cases", {}).items():
            for p in PASSES:
                out[(net["network"], int(b), p)] = case[p]["median_s"]
    return out


def _errors(summary: dict) -> dict:
    """{"forward_median": …, "forward_p90": …, "train_step_median": …, …} of an ``evaluate`` summary."""
    return {f"{p}_{k}": summary[p]["error"][k] for p in PASSES for k in ("median", "p90")}


def run_row(name: str, data: dict, process: str | None = None) -> dict:
    b = data["protocols"]["b"]
    spec = b["calibration"]
    process = process or process_of("b", data["protocols"])
    ev = evaluate(spec, b["measured"], process)["summary"]
    cal = spec.get("calibration") or {}
    host = cal.get("host") or (data["machine"].get("host") or {})
    return {"run": name, "cpu": host.get("cpu") or data["machine"]["cpu"], "date": cal.get("date", "?"),
            "isolate": bool(b.get("settings", {}).get("isolate")), "process": process,
            "refused": len(b.get("refused") or []),
            "bandwidth": spec["memory_bandwidth"], "self_check": cal.get("held_out_error"),
            **_errors(ev)}


def pooled(data: dict) -> list:
    """The last run's ``measured`` list with every case's median seconds replaced by its median over all runs
    (``data``: name → cache) that timed it."""
    all_t = [timings(d) for d in data.values()]
    out = copy.deepcopy(list(data.values())[-1]["protocols"]["b"]["measured"])
    for net in out:
        for b, case in net.get("cases", {}).items():
            for p in PASSES:
                case[p]["median_s"] = statistics.median(t[k] for t in all_t if (k := (net["network"], int(b), p)) in t)
    return out


def pooled_rows(data: dict, process: str | None = None) -> list[dict]:
    """Per run: its calibration's forward and training-step median and p90 |error| against ``pooled`` timings."""
    measured = pooled(data)
    rows = []
    for name, d in data.items():
        ev = evaluate(d["protocols"]["b"]["calibration"], measured, process or process_of("b", d["protocols"]))
        rows.append({"run": name, **_errors(ev["summary"])})
    return rows


def _grain_pair(text: str) -> tuple[float, float]:
    """"182" → (182 µs, 182 µs); "116/284" → (116 µs, 284 µs): dense convs' and linear layers' grain, the rest's."""
    dense, _, rest = text.partition("/")
    return float(dense) * 1e-6, float(rest or dense) * 1e-6


def grain_rows(data: dict, grains: list[tuple[float, float]], process: str | None = None) -> list[dict]:
    """Per run and (dense, rest) grain pair (seconds) in ``grains``: its calibration with those grains instead of the
    ones it fitted (``class_grain`` for conv and linear, ``parallel_grain`` for the rest), judged on the run's own
    timings (how wide the band of grains that meets the targets is)."""
    rows = []
    for name, d in data.items():
        b = d["protocols"]["b"]
        for dense, rest in grains:
            spec = {**b["calibration"], "parallel_grain": rest, "class_grain": dict.fromkeys(DENSE_CLASSES, dense)}
            ev = evaluate(spec, b["measured"], process or process_of("b", d["protocols"]))["summary"]
            rows.append({"run": name, "grain": (dense, rest), **_errors(ev)})
    return rows


def _grain_label(grain: tuple[float, float]) -> str:
    dense, rest = grain
    return f"{dense * 1e6:.0f} µs" if dense == rest else f"{dense * 1e6:.0f}/{rest * 1e6:.0f} µs"


def grain_markdown(rows: list[dict]) -> str:
    grains = sorted({r["grain"] for r in rows})
    cell = {(r["run"], r["grain"]): r for r in rows}
    runs = list(dict.fromkeys(r["run"] for r in rows))
    lines = ["Each run's calibration with the grain set to each value (a pair: dense convs' and linear layers' / the "
             "rest's), on its own timings: forward median / p90, training step median / p90 (* where a target is "
             "missed).", "",
             "| run | " + " | ".join(_grain_label(g) for g in grains) + " |",
             "| --- |" + " ---: |" * len(grains)]
    for run in runs:
        out = []
        for g in grains:
            r = cell[(run, g)]
            miss = met_count([r]) == 0
            out.append(f"{r['forward_median']:.0%} / {r['forward_p90']:.0%}, {r['train_step_median']:.0%} / "
                       f"{r['train_step_p90']:.0%}" + (" *" if miss else ""))
        lines.append(f"| {run} | " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def pair_rows(runs: dict) -> list[dict]:
    out = []
    for (a, ta), (b, tb) in itertools.combinations(runs.items(), 2):
        row = {"runs": f"{a} / {b}"}
        for p in PASSES:
            r = [abs(ta[k] / tb[k] - 1) for k in ta.keys() & tb.keys() if k[2] == p]
            row[p] = (summarize(r)["median"], summarize(r)["p90"]) if r else (float("nan"), float("nan"))
        out.append(row)
    return out


def met_count(rows: list[dict]) -> int:
    """How many rows meet both passes' targets (median and p90)."""
    return sum(all(r[f"{p}_median"] <= TARGET["median"] and r[f"{p}_p90"] <= TARGET["p90"] for p in PASSES)
               for r in rows)


def markdown(rows: list[dict], pairs: list[dict], pooled_: list[dict] | None = None) -> str:
    met = met_count(rows)
    lines = [f"Targets (forward and training step): median ≤ {TARGET['median']:.0%}, p90 ≤ {TARGET['p90']:.0%}; "
             f"met in {met} of {len(rows)} runs.", "",
             "| run | CPU | calibrated | networks timed | predicted as | refused first | bandwidth GB/s | self-check | "
             "forward median | forward p90 | train median | train p90 |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        sc = "–" if r["self_check"] is None else f"{r['self_check']:.0%}"
        timed = "each in its own process" if r["isolate"] else "one process"
        lines.append(f"| {r['run']} | {r['cpu']} | {r['date'].replace('T', ' ')} | {timed} | {r['process']} | "
                     f"{r['refused']} | "
                     f"{r['bandwidth'] / 1e9:.1f} | {sc} | {r['forward_median']:.1%} | {r['forward_p90']:.1%} | "
                     f"{r['train_step_median']:.1%} | {r['train_step_p90']:.1%} |")
    if pairs:
        lines += ["", "The same cases measured in two runs, |t₁ ÷ t₂ − 1| (median / p90):", "",
                  "| runs | forward | training step |", "| --- | ---: | ---: |"]
        for r in pairs:
            lines.append(f"| {r['runs']} | {r['forward'][0]:.1%} / {r['forward'][1]:.1%} | "
                         f"{r['train_step'][0]:.1%} / {r['train_step'][1]:.1%} |")
    if pooled_ and len(pooled_) > 1:
        met = met_count(pooled_)
        lines += ["", f"Each run's calibration against every case's median over the {len(pooled_)} runs (targets met "
                  f"by {met}):", "", "| calibration of run | forward median | forward p90 | train median | train p90 |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {r['run']} | {r['forward_median']:.1%} | {r['forward_p90']:.1%} | {r['train_step_median']:.1%} | "
                  f"{r['train_step_p90']:.1%} |" for r in pooled_]
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("caches", nargs="+", type=Path)
    ap.add_argument("--process", choices=("fresh", "warm"),
                    help="the estimates' process setting (default: the one that describes each run's protocol)")
    ap.add_argument("--grain", type=lambda v: [_grain_pair(x) for x in v.split(",")],
                    help="comma-separated grains in µs, each one value or DENSE/REST: judge each run's calibration "
                         "with each instead")
    args = ap.parse_args(argv)
    data = {p.stem: json.loads(p.read_text()) for p in args.caches}
    if args.grain:
        text = grain_markdown(grain_rows(data, args.grain, args.process))
        print(text, end="")
        return text
    rows = [run_row(k, d, args.process) for k, d in data.items()]
    text = markdown(rows, pair_rows({k: timings(d) for k, d in data.items()}), pooled_rows(data, args.process))
    print(text, end="")
    return text


if __name__ == "__main__":
    main()
