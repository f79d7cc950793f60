"""``python -m core estimate … --json`` is a public contract: this script checks a refactor leaves it unchanged.

It runs the CLI's ``estimate --json`` in one process for every built-in network on three devices — a GPU from the
datasheet (V100), a CPU from the datasheet (EPYC 9654) and the calibrated CPU the prediction benchmark stored
(``benchmarks/results/predict_measured.json``: per-class efficiencies, per-layer overheads, the page-fault term) —
plus the variants (roofline, conv algorithms, fused, data-parallel) on a few networks, for the current checkout and
for a git ref checked out in a temporary worktree, and lists every JSON value that differs.

    python benchmarks/estimate_json_diff.py --ref 7b54998          # exit 1 if anything differs
    python benchmarks/estimate_json_diff.py --ref 7b54998 --quick  # 12 networks instead of all

Numbers are compared by value (an integral FLOP count may come out as 1234 or 1234.0) to 12 significant digits,
which a reordered sum may move in the last bits; everything else exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALIBRATED = ROOT / "benchmarks" / "results" / "predict_measured.json"
DEVICES = ("v100-sxm2", "epyc-9654", "local")
QUICK = ("mnist_cnn", "alexnet", "vgg16", "resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
         "squeezenet1_0", "googlenet", "shufflenet_v2_x1_0", "efficientnet_b0", "vit_b_16")
VARIANTS = (
    ("--variant", "roofline"), ("--conv-algo", "auto"), ("--conv-algo", "winograd"), ("--fused",),
    ("--workers", "4", "--link", "nvlink2", "--allreduce", "tree"), ("--dtype", "fp16", "--optimizer", "adam"),
    ("--ppp", "0.5", "--ppp-memory", "0.7"),
)


def _devices_file(tmp: Path, ref: str) -> Path:
    """The ref's device_specs.json with the calibrated CPU added as an ordinary device, so both checkouts read the
    same figures (the ref's schema may not know fields added since; today's reads the ref's file as it is)."""
    specs = json.loads(subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:device_specs.json"], check=True,
                                      capture_output=True, text=True).stdout)
    data = json.loads(CALIBRATED.read_text())
    # the controlled protocol's calibration (older files: one calibration at the top)
    local = data["protocols"]["a"]["calibration"] if "protocols" in data else data["calibration"]
    specs["devices"] = [d for d in specs["devices"] if d["id"] != "local"] + [{**local, "user": False}]
    path = tmp / "devices.json"
    path.write_text(json.dumps(specs))
    return path


def dump(root: Path, devices_file: Path, quick: bool) -> dict:
    """{case: parsed JSON or the error line} for the checkout at ``root``."""
    sys.path.insert(0, str(root))
    import core
    from core.cli import main

    names = QUICK if quick else tuple(core.builtin_names())
    cases = [(n, d, 8, ()) for n in names for d in DEVICES]
    cases += [(n, "local", 1, ()) for n in names]
    cases += [(n, "v100-sxm2", 32, v) for n in QUICK[:6] for v in VARIANTS]
    out = {}
    for name, dev, batch, extra in cases:
        argv = ["estimate", name, "--device", dev, "--batch", str(batch), "--file", str(devices_file), "--json",
                *extra]
        buf, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            rc = main(argv)
        key = " ".join(argv[1:6] + list(extra))
        out[key] = json.loads(buf.getvalue()) if rc == 0 else f"exit {rc}: {err.getvalue()}"
    return out


def _diffs(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only before" for k in a.keys() - b.keys()]
        out += [f"{path}.{k}: only after" for k in b.keys() - a.keys()]
        for k in a.keys() & b.keys():
            out += _diffs(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items before, {len(b)} after"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diffs(x, y, f"{path}[{i}]")]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        same = a == b or (math.isfinite(a) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300))
        return [] if same else [f"{path}: {a!r} → {b!r}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} → {b!r}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", required=True, help="the git commit to compare against")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dump", help=argparse.SUPPRESS)           # internal: the checkout root to dump
    ap.add_argument("--devices", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        print(json.dumps(dump(Path(args.dump), Path(args.devices), args.quick)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        devices = _devices_file(tmp, args.ref)
        wt = tmp / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(wt), args.ref], check=True)
        try:
            runs = {}
            for label, root in (("before", wt), ("after", ROOT)):
                cmd = [sys.executable, str(Path(__file__).resolve()), "--ref", args.ref, "--dump", str(root),
                       "--devices", str(devices)] + (["--quick"] if args.quick else [])
                env = {**os.environ, "CNN_CALC_HOME": str(tmp / "home")}     # no user devices file
                runs[label] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True,
                                                        env=env).stdout)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], check=False)
    before, after = runs["before"], runs["after"]
    changed = {case: _diffs(before[case], after.get(case)) for case in before}
    changed = {k: v for k, v in changed.items() if v}
    for case, diffs in changed.items():
        print(f"{case}: {len(diffs)} values differ")
        for d in diffs[:8]:
            print(f"    {d}")
    print(f"{len(before)} cases, {len(changed)} with differences (ref {args.ref})")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
