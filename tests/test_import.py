"""Importing and using the engine pulls in none of the heavy app dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("torch", "torchvision", "streamlit")

CODE = """
import json, sys
import core
r = core.analyze("resnet50")
r.layers, r.totals, r.explain("conv1")
core.edit(core.load_network("resnet18"), "conv1", "out_channels", 128)
core.Network.from_json(core.load_network("mnist_cnn").to_json())
print(json.dumps({"loaded": sorted(m for m in sys.modules if m.split(".")[0] in %r),
                  "params": r.totals["params"]}))
"""


def test_core_imports_no_torch_torchvision_streamlit():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", CODE % (HEAVY + ("pandas",),)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["loaded"] == []
    assert out["params"] > 0


def test_cli_imports_no_torch():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = ("import runpy, sys, io, contextlib\n"
            "sys.argv = ['core', 'analyze', 'resnet50', '--json']\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            "    try:\n        runpy.run_module('core', run_name='__main__')\n"
            "    except SystemExit as e:\n        assert e.code == 0, e.code\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
