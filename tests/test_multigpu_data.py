"""The published multi-GPU training throughput dataset (benchmarks/data/multigpu_throughput.csv, issue 42).

It checks the file (no GPU, no network): columns, value domains, the coverage issue 42 asks for, that each series has
exactly one 1-GPU row, that known GPU ids exist in device_specs.json and that every row cites a pinned commit; and,
where the git snapshots of the sources are present, that build_multigpu.py regenerates the committed file.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
CSV_PATH = DATA / "multigpu_throughput.csv"
BUILDER = DATA / "build_multigpu.py"
README = DATA / "README.md"
MIRROR = Path(os.environ.get("MIRROR", "/work/.mirror"))

INTRA = {"nvswitch", "nvlink-mesh", "nvlink-bridge", "pcie-switch", "pcie-host", "pcie-unknown", "unknown"}
INTER = {"", "ib-edr", "ib-hdr", "eth-25g", "eth-10g", "unknown"}
PRECISIONS = {"fp32", "tf32", "mixed", "fp16"}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with CSV_PATH.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _builder():
    spec = importlib.util.spec_from_file_location("build_multigpu", BUILDER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_columns(rows):
    assert len(rows) >= 80
    want = ["group", "source_id", "system", "gpu", "gpus", "nodes", "gpus_per_node", "interconnect",
            "interconnect_stated", "network", "torchvision_match", "per_gpu_batch", "precision", "framework", "data",
            "pipeline", "cpu_cores", "images_per_s", "scaling_words", "source", "note"]
    assert not [c for c in want if c not in rows[0]]
    for i, r in enumerate(rows, start=2):
        for c in ("group", "source_id", "system", "gpu", "interconnect_stated", "network", "torchvision_match",
                  "framework", "data", "pipeline", "source"):
            assert r[c].strip(), f"row {i}: empty {c}"


def test_values(rows):
    for i, r in enumerate(rows, start=2):
        assert float(r["images_per_s"]) > 0, i
        assert int(r["per_gpu_batch"]) >= 1, i
        n, nodes, per = int(r["gpus"]), int(r["nodes"]), int(r["gpus_per_node"])
        assert n >= 1 and nodes >= 1 and nodes * per == n, f"row {i}: {n} GPUs = {nodes} x {per}?"
        assert r["interconnect"] in INTRA, f"row {i}: {r['interconnect']!r}"
        assert r["internode"] in INTER and (r["internode"] != "") == (nodes > 1), f"row {i}: internode"
        assert r["precision"] in PRECISIONS, f"row {i}: {r['precision']!r}"
        assert r["data"].split()[0] in {"synthetic", "real"}, i
        assert r["scaling_words"] in {"", "strong scaling", "weak scaling"}, i
        assert r["cpu_cores"] == "" or int(r["cpu_cores"]) > 0, i
        assert r["torchvision_match"].split(":")[0] in {"exact", "close", "none"}, i


def test_coverage(rows):
    assert len({r["source_id"] for r in rows}) >= 3
    assert len({r["system"] for r in rows}) >= 6
    classes = {r["interconnect"] for r in rows}
    assert classes & {"nvswitch", "nvlink-mesh", "nvlink-bridge"}
    assert any(c.startswith("pcie") for c in classes)
    single_node = {int(r["gpus"]) for r in rows if r["nodes"] == "1"}
    assert 1 in single_node and {2, 4, 8, 16} <= single_node
    assert any(int(r["nodes"]) > 1 for r in rows)
    # both kinds of link within one node at >= 8 GPUs
    assert {r["interconnect"] for r in rows if int(r["gpus_per_node"]) >= 8} >= {"nvswitch", "nvlink-mesh"}


def test_each_group_one_single_gpu_row(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[r["group"]].append(r)
    for g, rs in groups.items():
        assert sum(int(r["gpus"]) == 1 for r in rs) == 1, g
        assert len(rs) >= 2, f"{g}: no multi-GPU row"
        assert len({int(r["gpus"]) for r in rs}) == len(rs), f"{g}: repeated GPU count"
        for key in ("source_id", "network", "per_gpu_batch", "precision", "framework", "data", "pipeline", "gpu"):
            assert len({r[key] for r in rs}) == 1, f"{g}: {key} differs"
        base = float(next(r for r in rs if r["gpus"] == "1")["images_per_s"])
        for r in rs:
            eff = float(r["images_per_s"]) / (int(r["gpus"]) * base)
            assert 0.3 < eff <= 1.05, f"{g}: {r['gpus']} GPUs at {eff:.2f} of linear"


def test_gpu_ids_known(rows):
    specs = json.loads((ROOT / "device_specs.json").read_text())
    ids = {d["id"] for d in specs["devices"]}
    for i, r in enumerate(rows, start=2):
        assert r["gpu_known"] in {"yes", "no"}, i
        if r["gpu_known"] == "yes":
            assert r["gpu"] in ids, f"row {i}: {r['gpu']} not in device_specs.json"
        else:
            assert r["gpu"] not in ids, f"row {i}: {r['gpu']} is a known id"


def test_sources_pinned(rows):
    pinned = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/\S+ :: .+")
    for i, r in enumerate(rows, start=2):
        assert pinned.match(r["source"]), f"row {i}: {r['source'][:80]}"
        if r["source_id"] == "tensorflow-benchmarks-doc":
            assert "transcribed in tensorflow_multigpu_transcribed.csv" in r["source"], i


def test_readme_documents_the_sources(rows):
    text = README.read_text(encoding="utf-8")
    assert "(`multigpu_throughput.csv`)" in text
    section = text.split("(`multigpu_throughput.csv`)", 1)[1]
    for sid in {r["source_id"] for r in rows}:
        assert f"`{sid}`" in section, sid


def test_rebuild_matches(tmp_path):
    if not (MIRROR / "NVIDIA+DeepLearningExamples").exists():
        pytest.skip(f"no git snapshots of the sources under {MIRROR} (build_multigpu.py --mirror DIR)")
    mod = _builder()
    rows, _ = mod.build(MIRROR)
    out = tmp_path / "multigpu.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=mod.COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    assert out.read_text(encoding="utf-8") == CSV_PATH.read_text(encoding="utf-8")
