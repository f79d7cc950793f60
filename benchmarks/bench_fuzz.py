"""Fuzzing the typed-error promise (issue 15): seeded cases against the public API, and a torch spot-check.

The promise: for any input a user can give, the engine raises only ``CalcError`` subclasses (``core.errors``), returns
no NaN or infinite number, and takes at most 5 s. The cases are ``tests/strategies.py``'s (the test suite draws the
same generators through Hypothesis): case ``seed`` is of kind ``KINDS[seed % 5]``:

* network   a network built from the op registry (valid and invalid, attributes from each kind and hostile values:
            wrong types, huge integers, NaN/inf, empty lists, deep nesting), analysed, explained, channel-grouped and
            round-tripped through JSON;
* zoo_json  a built-in network's ``to_dict()`` changed in 1–3 places (values, names, structure), loaded with
            ``Network.from_dict`` / ``from_json`` and analysed;
* edit      ``core.edit`` with random nodes, fields and values, the result analysed;
* estimate  ``core.estimate`` / ``sweep`` / ``scaling`` with random devices, batch, dtype, PPP, variant, conv
            algorithm, workers and link;
* devices   device documents through ``parse_devices``, ``DeviceDB.add`` and a user file (corrupt bytes too), then
            an estimate on each device that loaded.

Counts: ok, CalcError, other exceptions (grouped by type and the deepest frame in the project), over 5 s, non-finite
results; a reproducer for each group of other exceptions (``--case SEED`` replays any case with its traceback).

Spot-check: ≥ 500 accepted random sequential networks (conv / pool / batch_norm / activations / dropout / adaptive
pools / flatten / linear) are built with ``core.bridge.to_torch.to_module`` and run forward on a batch of 2; the
output shape and parameter count must equal ``core.analyze``'s.

Run: ``python benchmarks/bench_fuzz.py [--quick] [--cases N] [--spot N] [--case SEED] [--all]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(Path(__file__).resolve().parent)]

import strategies as S  # noqa: E402
from common import quick_main  # noqa: E402

CASES = 50_000
SPOT = 500
QUICK_CASES, QUICK_SPOT = 500, 20
SHOWN_SEEDS = 20          # seeds listed per group of failures (all with --all)


def fuzz(n: int, start: int = 0, progress: bool = False) -> dict:
    counts = Counter()
    by_kind: dict[str, Counter] = defaultdict(Counter)
    groups: dict[tuple, list] = defaultdict(list)       # (type, frame) → [(seed, error, code length)]
    slow, non_finite = [], []
    t0 = time.perf_counter()
    for seed in range(start, start + n):
        case = S.case_from_seed(seed)
        out = S.run(case, hard_limit_s=30.0)
        status = {"ok": "ok", "calc_error": "CalcError", "other": "other"}[out.status]
        if out.status == "ok" and out.non_finite:
            status = "ok"             # counted below; ok means no exception here
        counts[status] += 1
        by_kind[case.kind][status] += 1
        if out.status == "other":
            groups[(out.etype, out.frame)].append((seed, out.error, len(case.code)))
        if out.non_finite:
            counts["non-finite"] += 1
            by_kind[case.kind]["non-finite"] += 1
            non_finite.append((seed, out.non_finite))
        if out.slow:
            counts["over 5 s"] += 1
            by_kind[case.kind]["over 5 s"] += 1
            slow.append((seed, out.elapsed_s))
        if progress and (seed - start + 1) % 5000 == 0:
            print(f"  {seed - start + 1:,} cases, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return {"cases": n, "seconds": time.perf_counter() - t0, "counts": dict(counts),
            "by_kind": {k: dict(v) for k, v in by_kind.items()},
            "groups": {f"{t} at {f}": v for (t, f), v in sorted(groups.items(), key=lambda kv: -len(kv[1]))},
            "slow": slow, "non_finite": non_finite}


def spot_check(n: int, max_tries: int = 20_000) -> dict:
    """Build ``n`` accepted sequential networks in torch and compare output shapes and parameter counts."""
    import torch

    import core
    from core.bridge.to_torch import to_module
    from torch_ref import n_params

    torch.manual_seed(0)
    accepted = rejected = 0
    mismatches = []
    t0 = time.perf_counter()
    seed = 0
    while accepted < n and seed < max_tries:
        net = S.sequential_network(S.RandomDraw(10 ** 6 + seed))
        seed += 1
        try:
            report = core.analyze(net)
        except core.CalcError:
            rejected += 1
            continue
        accepted += 1
        problem = compare_with_torch(net, report, torch, to_module, n_params)
        if problem:
            mismatches.append((10 ** 6 + seed - 1, problem, S.net_code(net)))
    return {"accepted": accepted, "rejected": rejected, "mismatches": mismatches,
            "seconds": time.perf_counter() - t0}


def compare_with_torch(net, report, torch, to_module, n_params) -> str | None:
    """None when torch agrees with the report (output shape, parameters), else what differs."""
    try:
        module = to_module(net).eval()
        with torch.no_grad():
            y = module(torch.randn(2, *report.input_shape))
    except Exception as e:  # noqa: BLE001 — the engine accepted a network torch refuses: a finding
        return f"torch refuses what the engine accepted: {type(e).__name__}: {str(e)[:200]}"
    want = tuple(report.layers[-1].output_shape[1:])
    if tuple(y.shape[1:]) != want:
        return f"output shape: torch {tuple(y.shape[1:])}, engine {want}"
    if n_params(module) != report.totals["params"]:
        return f"parameters: torch {n_params(module):,}, engine {report.totals['params']:,}"
    return None


def measure(quick: bool = False, cases: int | None = None, spot: int | None = None) -> dict:
    n = cases if cases is not None else (QUICK_CASES if quick else CASES)
    m = spot if spot is not None else (QUICK_SPOT if quick else SPOT)
    out = {"fuzz": fuzz(n, progress=not quick)}
    if m:
        out["spot"] = spot_check(m)
    return out


def markdown(out: dict, all_seeds: bool = False) -> str:
    f = out["fuzz"]
    c = f["counts"]
    cols = ("ok", "CalcError", "other", "over 5 s", "non-finite")
    lines = ["## Fuzzing the typed-error promise", "",
             f"{f['cases']:,} seeded cases (`tests/strategies.py`, seeds 0–{f['cases'] - 1:,}) in "
             f"{f['seconds']:.0f} s ({f['seconds'] / max(f['cases'], 1) * 1e3:.1f} ms a case).", "",
             "| kind | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for kind in S.KINDS:
        k = f["by_kind"].get(kind, {})
        lines.append(f"| {kind} | " + " | ".join(f"{k.get(x, 0):,}" for x in cols) + " |")
    lines.append("| **all** | " + " | ".join(f"**{c.get(x, 0):,}**" for x in cols) + " |")
    lines += ["", "ok: no exception; CalcError: a typed error (the promise); other: any other exception (a bug); "
              "over 5 s and non-finite (NaN/inf in a result) overlap the others."]
    if f["groups"]:
        lines += ["", "### Other exceptions, by type and where they arise", ""]
        for key, items in f["groups"].items():
            seed, error, _ = min(items, key=lambda i: i[2])
            lines.append(f"* **{len(items):,}× {key}** — e.g. `{error[:160]}`")
            shown = items if all_seeds else items[:SHOWN_SEEDS]
            lines.append("  seeds: " + ", ".join(str(s) for s, _, _ in shown)
                         + ("" if len(shown) == len(items) else f", … ({len(items) - len(shown):,} more; --all)"))
            lines.append(f"  reproducer (`python benchmarks/bench_fuzz.py --case {seed}`):")
            lines += ["  ```python"] + [f"  {ln}" for ln in _short(S.PREAMBLE + S.case_from_seed(seed).code)] \
                + ["  ```"]
    for title, rows, fmt in (("Over 5 s", f["slow"], "{:.1f} s"), ("Non-finite results", f["non_finite"], "{}")):
        if rows:
            lines += ["", f"### {title}", ""] + [f"* seed {s}: " + fmt.format(v) for s, v in rows[:50]]
    if "spot" in out:
        s = out["spot"]
        lines += ["", "### Torch spot-check", "",
                  f"{s['accepted']:,} accepted random sequential networks (and {s['rejected']:,} the engine "
                  f"rejected) built with `to_module` and run forward on a batch of 2 in {s['seconds']:.0f} s: "
                  f"**{len(s['mismatches'])} differ** from `core.analyze` in output shape or parameter count."]
        for seed, problem, code in s["mismatches"][:20]:
            lines += [f"* seed {seed}: {problem}", f"  `{code[:400]}`"]
    return "\n".join(lines) + "\n"


def _short(code: str, limit: int = 3000) -> list[str]:
    return (code if len(code) <= limit else code[:limit] + " …").splitlines()


def replay(seed: int) -> None:
    """Print case ``seed``'s reproducer, run it, and show what happened (the traceback for another exception)."""
    case = S.case_from_seed(seed)
    print(f"# case {seed} ({case.kind})\n{S.PREAMBLE}{case.code}\n")
    out = S.run(case)
    print(f"-> {out.status} in {out.elapsed_s * 1e3:.1f} ms" + (f": {out.error}" if out.error else "")
          + (f"; non-finite at {out.non_finite}" if out.non_finite else ""))
    if out.trace:
        print(out.trace)


def main(argv=None) -> dict | None:
    """``--quick`` through ``common.quick_main`` like the other benchmarks; ``--cases``, ``--spot``, ``--all`` and
    ``--case`` on top."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--cases", type=int, help=f"number of seeded cases (default {CASES:,})")
    ap.add_argument("--spot", type=int, help=f"accepted networks for the torch spot-check (default {SPOT})")
    ap.add_argument("--case", type=int, help="replay one case by its seed")
    ap.add_argument("--all", action="store_true", help="list every failing seed, not the first 20 per group")
    args, rest = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.case is not None:
        replay(args.case)
        return None
    return quick_main(lambda quick: measure(quick, args.cases, args.spot), lambda out: markdown(out, args.all), rest,
                      f"{QUICK_CASES} cases and {QUICK_SPOT} torch networks instead of {CASES:,} and {SPOT}")


if __name__ == "__main__":
    main()
