"""``python -m core``: a table, --json, --explain, IR JSON paths; bad input exits non-zero with one line, no
traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import core

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, encoding="utf-8",
                          cwd=cwd, env=env, timeout=120)


def test_analyze_mnist_table():
    p = run_cli("analyze", "mnist_cnn")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "conv2" in out and "fc1" in out and "log_softmax" in out
    row = next(line for line in out.splitlines() if line.startswith("conv2 "))
    for v in ("1×64×24×24", "18,496", "10,616,832", "21,233,664", "42,504,192"):   # see test_hand_arithmetic
        assert v in row
    total = next(line for line in out.splitlines() if line.startswith("Total"))
    for v in ("1,199,882",      # 320 + 18,496 + 1,179,776 + 1,290
              "11,992,448",     # 194,688 + 10,616,832 + 1,179,648 + 1,280
              "24,071,218",     # 2 × 11,992,448 + 86,322 elementwise/pool FLOPs
              "47,716,274"):    # backward, per node in test_hand_arithmetic
        assert v in total
    assert "MAC" in out and "2 FLOPs" in out    # the convention is stated
    assert p.stderr == ""


def test_json_output_matches_api():
    p = run_cli("analyze", "mnist_cnn", "--json", "--batch", "3")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {"model", "input_shape", "batch_size", "dtype", "totals", "layers"} <= set(d)
    assert d["model"] == "mnist_cnn"
    assert d["input_shape"] == [1, 28, 28]
    assert d["batch_size"] == 3
    assert d["dtype"] == "fp32"
    api = core.analyze("mnist_cnn", batch_size=3)
    api_keys = set(api.layers[0].as_dict())
    assert len(d["layers"]) == 12
    assert all(set(layer) == api_keys for layer in d["layers"])
    assert [l["name"] for l in d["layers"]] == [l.name for l in api.layers]
    assert d["totals"]["macs"] == 35_977_344            # 11,992,448 × 3
    assert d["totals"]["params"] == 1_199_882
    conv2 = next(l for l in d["layers"] if l["name"] == "conv2")
    assert conv2["macs"] == 31_850_496                  # 10,616,832 × 3
    assert conv2["output_shape"] == [3, 64, 24, 24]
    assert d == json.loads(json.dumps(api.to_dict()))


def test_explain_conv2():
    p = run_cli("analyze", "mnist_cnn", "--explain", "conv2")
    assert p.returncode == 0, p.stderr
    assert "1·64·24·24·32·3·3" in p.stdout
    assert "10,616,832" in p.stdout                     # 36,864 outputs × 288
    assert "21,233,664" in p.stdout                     # 2 × 10,616,832
    assert "64·32·3·3 + 64" in p.stdout and "18,496" in p.stdout


def test_ir_json_path(tmp_path):
    net = core.load_network("mnist_cnn")
    path = tmp_path / "my_net.json"
    path.write_text(net.to_json(), encoding="utf-8")
    p = run_cli("analyze", str(path), "--batch", "2")
    assert p.returncode == 0, p.stderr
    assert "conv2" in p.stdout
    assert "23,984,896" in p.stdout                     # MACs 11,992,448 × 2
    assert "1,199,882" in p.stdout                      # parameters do not depend on the batch


def test_relative_ir_json_path(tmp_path):
    (tmp_path / "net.json").write_text(core.load_network("resnet18").to_json(), encoding="utf-8")
    p = run_cli("analyze", "net.json", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["totals"]["params"] == 11_689_512   # see test_hand_arithmetic


def test_list():
    p = run_cli("list")
    assert p.returncode == 0
    assert p.stdout.split() == core.builtin_names()


def _bad_json(tmp_path: Path) -> str:
    path = tmp_path / "bad.json"
    path.write_text('{"schema": "cnn-calc/network", "version": 1, "nodes": [', encoding="utf-8")
    return str(path)


def _future_json(tmp_path: Path) -> str:
    d = core.load_network("mnist_cnn").to_dict()
    d["version"] = 2
    path = tmp_path / "future.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return str(path)


def _binary_json(tmp_path: Path) -> str:
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00\x81garbage")
    return str(path)


@pytest.mark.parametrize("make_args, fragment", [
    (lambda tmp: ["analyze", "mnist_cnn", "--batch", "0"], "batch"),
    (lambda tmp: ["analyze", "mnist_cnn", "--batch", "1000000000"], "batch"),
    (lambda tmp: ["analyze", "no_such_network"], "no_such_network"),
    (lambda tmp: ["analyze", _bad_json(tmp)], "not valid JSON"),
    (lambda tmp: ["analyze", _future_json(tmp)], "version"),
    (lambda tmp: ["analyze", _binary_json(tmp)], "binary.json"),
    (lambda tmp: ["analyze", str(tmp / "missing.json")], "missing.json"),
    (lambda tmp: ["analyze", "mnist_cnn", "--input", "1x0x28"], "input_shape"),
    (lambda tmp: ["analyze", "mnist_cnn", "--input", "1x4x4"], "conv2"),
    (lambda tmp: ["analyze", "mnist_cnn", "--dtype", "fp8"], "fp8"),
    (lambda tmp: ["analyze", "mnist_cnn", "--optimizer", "lion"], "lion"),
    (lambda tmp: ["analyze", "mnist_cnn", "--explain", "conv9"], "conv9"),
], ids=["batch-0", "batch-absurd", "unknown-network", "malformed-json-file", "future-version", "non-utf8-file",
        "missing-file", "input-zero", "input-too-small", "bad-dtype", "bad-optimizer", "explain-unknown"])
def test_bad_input_one_line_no_traceback(tmp_path, make_args, fragment):
    p = run_cli(*make_args(tmp_path))
    assert p.returncode != 0
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert fragment in lines[0]
    assert p.stdout == ""


def test_a_missing_requirement_is_one_line_naming_the_package_and_the_fix():
    """A bare CUDA image ran the CLI without jsonschema (a requirement): one line naming the package and how to
    install it, exit 1, no traceback."""
    code = ("import sys; sys.modules['jsonschema'] = None; from core.cli import main; "
            "sys.exit(main(['estimate', 'resnet18', '--device', 'v100-sxm2']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={k: v for k, v in os.environ.items() if k != "CNN_CALC_DEBUG"})
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip() == ("error: the Python package 'jsonschema' is not installed; this command needs it: "
                                "pip install -r requirements.txt (the README's set-up)")
