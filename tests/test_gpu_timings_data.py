"""The published GPU timings dataset (benchmarks/data/gpu_timings.csv) is well formed.

It checks the file only (no GPU, no torch): columns, value domains, that every
row names a source the README documents, the coverage the fit needs (issue 13,
item 3), and that rows converted from throughput agree with their original
figure.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
CSV_PATH = DATA / "gpu_timings.csv"
README = DATA / "README.md"
TF_TRANSCRIBED = DATA / "tensorflow_k80_transcribed.csv"

REQUIRED = [
    "network", "torchvision_match", "gpu", "generation", "batch", "precision", "pass",
    "framework", "measured_ms", "original_value", "original_unit", "source_id", "source",
    "note",
]
PRECISIONS = {"fp32", "tf32", "fp16", "mixed", "bf16", "int8"}
PASSES = {"forward", "backward", "forward_backward", "training_step", "inference"}
TRAINING_PASSES = {"backward", "forward_backward", "training_step"}
INFERENCE_PASSES = {"forward", "inference"}
# GPU ids agreed for issue 13; some are being added to device_specs.json by a
# colleague, so ids missing from the database are checked against this list.
AGREED_NEW_IDS = {
    "gtx-1080", "gtx-1080-ti", "titan-x-maxwell", "titan-x-pascal", "k40", "titan-v",
    "rtx-2080-ti", "quadro-rtx-8000", "rtx-a6000", "a10", "a40", "l4", "l40s",
}
GENERATIONS = {"kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ampere-ga100", "ada", "hopper",
               "blackwell"}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with CSV_PATH.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def readme_sources() -> set[str]:
    """Source ids the README documents: its '### `<id>`' headings."""
    return set(re.findall(r"^###\s+`([a-z0-9-]+)`", README.read_text(), flags=re.M))


def test_required_columns(rows):
    assert rows, "dataset is empty"
    missing = [c for c in REQUIRED if c not in rows[0]]
    assert not missing, f"missing columns: {missing}"
    for i, r in enumerate(rows):
        for c in ("network", "torchvision_match", "gpu", "generation", "framework",
                  "original_unit", "source_id", "source"):
            assert r[c].strip(), f"row {i + 2}: empty {c}"


def test_numbers_positive_and_finite(rows):
    for i, r in enumerate(rows):
        batch = int(r["batch"])
        assert batch >= 1, f"row {i + 2}: batch {batch}"
        for c in ("measured_ms", "original_value"):
            v = float(r[c])
            assert math.isfinite(v) and v > 0, f"row {i + 2}: {c}={r[c]!r}"


def test_value_domains(rows):
    for i, r in enumerate(rows):
        assert r["precision"] in PRECISIONS, f"row {i + 2}: precision {r['precision']!r}"
        assert r["pass"] in PASSES, f"row {i + 2}: pass {r['pass']!r}"
        assert r["generation"] in GENERATIONS, f"row {i + 2}: generation {r['generation']!r}"
        m = r["torchvision_match"]
        assert m == "exact" or re.match(r"^(close|none): \S", m), f"row {i + 2}: {m!r}"


def test_gpu_ids_known(rows):
    specs = json.loads((ROOT / "device_specs.json").read_text())
    known = {d["id"] for d in specs["devices"]} | AGREED_NEW_IDS
    unknown = sorted({r["gpu"] for r in rows} - known)
    assert not unknown, f"GPU ids neither in device_specs.json nor agreed: {unknown}"


def test_one_generation_per_gpu(rows):
    gens = defaultdict(set)
    for r in rows:
        gens[r["gpu"]].add(r["generation"])
    assert all(len(g) == 1 for g in gens.values()), dict(gens)


MEASURED_PREFIX = "measured-"          # rows this project measured itself: benchmarks/data/measured/<folder>/


def test_sources_documented(rows, readme_sources):
    assert readme_sources, "README lists no sources"
    used = {r["source_id"] for r in rows}
    assert used <= readme_sources, f"undocumented sources: {sorted(used - readme_sources)}"
    for i, r in enumerate(rows):
        if r["source_id"].startswith(MEASURED_PREFIX):
            path = r["source"].split(" :: ")[0]
            assert path.startswith("benchmarks/data/measured/") and (ROOT / path).is_file(), f"row {i + 2}: {path}"
        else:
            assert r["source"].startswith("https://"), f"row {i + 2}: source is not a location"


def test_coverage_targets(rows):
    sources = {r["source_id"] for r in rows}
    gpus = {r["gpu"] for r in rows}
    gens = {r["generation"] for r in rows}
    precs = {r["precision"] for r in rows}
    batches = {int(r["batch"]) for r in rows}
    passes = {r["pass"] for r in rows}
    assert len(sources) >= 3, sources
    assert len(gpus) >= 8, gpus
    assert len(gens) >= 3 and "kepler" in gens, gens
    assert "fp32" in precs and precs & {"mixed", "fp16"}, precs
    assert 1 in batches and max(batches) >= 128, sorted(batches)
    assert passes & INFERENCE_PASSES and passes & TRAINING_PASSES, passes


def test_throughput_rows_convert(rows):
    n = 0
    for i, r in enumerate(rows):
        if r["original_unit"] != "images/s":
            continue
        n += 1
        want = int(r["batch"]) / float(r["original_value"]) * 1000
        assert float(r["measured_ms"]) == pytest.approx(want, rel=1e-4, abs=1e-3), f"row {i + 2}"
    assert n > 0, "no throughput rows to check"


def test_ms_rows_match_original(rows):
    for i, r in enumerate(rows):
        if r["original_unit"].startswith("ms"):
            assert float(r["measured_ms"]) == pytest.approx(float(r["original_value"])), f"row {i + 2}"


def test_generation_matches_device_specs(rows):
    """Where device_specs.json gives a GPU's architecture, the row's generation agrees."""
    specs = {d["id"]: d for d in json.loads((ROOT / "device_specs.json").read_text())["devices"]}
    for i, r in enumerate(rows):
        arch = specs.get(r["gpu"], {}).get("architecture")
        if arch:
            assert r["generation"] == arch, f"row {i + 2}: {r['gpu']} is {arch}, row says {r['generation']}"


def _builder():
    """benchmarks/data/build_gpu_timings.py as a module (its MEASURED and HOLDOUT_RUNS; it runs nothing on import)."""
    spec = importlib.util.spec_from_file_location("build_gpu_timings", DATA / "build_gpu_timings.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _part(name: str):
    """A part of the builder, benchmarks/data/gpu_timings_*.py (its pins and its readers): the builder imports them as
    top-level modules from its folder, which loading it puts on sys.path."""
    _builder()
    return importlib.import_module(name)


def test_every_source_is_a_file_at_a_commit(rows):
    """Each row's source is a github.com/<repo>/blob/<40-hex commit>/<path> URL, then ' :: ' and where in the
    file; the repository and commit are the ones the build script pins for the row's source_id."""
    common, repos, frameworks = (_part(f"gpu_timings_{m}") for m in ("common", "repos", "frameworks"))
    pinned = {sid: {(repo, commit)} for sid, (repo, commit) in common.SOURCES.items()}
    pinned["apache-mxnet-perf"] |= {("apache/mxnet", commit) for commit, *_ in frameworks.MXNET_DOCS}
    pinned["jcjohnson-cnn-benchmarks"].add(("jcjohnson/cnn-benchmarks", repos.JCJ_K40_COMMIT))
    for i, r in enumerate(rows):
        if r["source_id"].startswith(MEASURED_PREFIX):       # test_rows_measured_here
            continue
        m = re.match(r"^https://github\.com/([\w.-]+/[\w.-]+)/blob/([0-9a-f]{40})/[^:]+ :: \S", r["source"])
        assert m, f"row {i + 2}: {r['source'][:100]!r}"
        assert (m.group(1), m.group(2)) in pinned[r["source_id"]], f"row {i + 2}: {m.groups()}"


def test_source_ids_match_the_builder(rows, readme_sources):
    b, common = _builder(), _part("gpu_timings_common")
    measured = {MEASURED_PREFIX + folder for folder in b.MEASURED}
    only_held = {r["source_id"] for r in _holdout_rows()} - {sid for sid, _ in b.HOLDOUT_RUNS}
    assert only_held == {"timm-benchmark-results"}
    assert {r["source_id"] for r in rows} == set(common.SOURCES) - only_held | measured
    assert set(common.SOURCES) | measured <= readme_sources


def _holdout_rows() -> list[dict]:
    with (DATA / "gpu_timings_holdout.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_holdout_rows(rows, readme_sources):
    """benchmarks/data/gpu_timings_holdout.csv: the rows no fit reads, in the dataset's columns, each a file at a
    commit the builder pins, of a network this project builds at the input size the row was timed at. timm's
    benchmark files (a source the fit's file does not hold: AMP, batch 128-1024) and ryujaehun's RTX 3090 run (the
    builder's ``HOLDOUT_RUNS``: batch 12, tf32 and fp16, the input's copy and zero_grad in its timed region, as the
    same source's fitted runs)."""
    from core import zoo

    b, common, repos = _builder(), _part("gpu_timings_common"), _part("gpu_timings_repos")
    held = _holdout_rows()
    assert held and list(held[0]) == b.COLUMNS
    assert {r["source_id"] for r in held} == {"timm-benchmark-results", "ryujaehun-pytorch-gpu-benchmark"}
    assert {r["source_id"] for r in held} <= readme_sources
    assert not {(r["source_id"], r["gpu"]) for r in held} & {(r["source_id"], r["gpu"]) for r in rows}
    assert {(r["source_id"], r["gpu"]) for r in held if r["source_id"] != "timm-benchmark-results"} == \
        b.HOLDOUT_RUNS
    known = set(zoo.names())
    assert {r["network"] for r in held} <= known
    repo, commit = common.SOURCES["timm-benchmark-results"]
    files = {path for _, _, path, _ in repos.TIMM_FILES}
    by_timm = {timm: net for timm, (net, _) in repos.TIMM_NET.items()}
    timm = [r for r in held if r["source_id"] == "timm-benchmark-results"]
    for i, r in enumerate(timm):
        m = re.match(r"^https://github\.com/([\w.-]+/[\w.-]+)/blob/([0-9a-f]{40})/([^:]+) :: line \d+, model '(\S+)'$",
                     r["source"])
        assert m and (m.group(1), m.group(2)) == (repo, commit) and m.group(3) in files, f"row {i + 2}: {r['source']}"
        assert by_timm[m.group(4)] == r["network"], f"row {i + 2}"
        assert r["precision"] == "mixed" and r["pass"] in {"inference", "training_step"}, f"row {i + 2}"
        assert float(r["measured_ms"]) == float(r["original_value"]) > 0 and int(r["batch"]) >= 128, f"row {i + 2}"
        assert r["generation"] == common.GENERATION[r["gpu"]] and not r["timed_extra"], f"row {i + 2}"
    assert len({(r["network"], r["gpu"], r["pass"]) for r in timm}) == len(timm) == 90
    # the RTX 3090 run: upstream's later commit, read from a fork that carries it (FORK_HOLDS); 32 networks x
    # 2 precisions x 2 passes = 128
    ryu = [r for r in held if r["source_id"] == "ryujaehun-pytorch-gpu-benchmark"]
    assert repos.RYU_3090 in common.FORK_HOLDS and len(ryu) == 128
    for r in ryu:
        assert r["source"].startswith(f"https://github.com/ryujaehun/pytorch-gpu-benchmark/blob/{repos.RYU_3090}/")
        assert (r["gpu"], r["batch"], r["host_link"]) == ("rtx-3090", "12", "pcie4-x16")
        assert r["timed_extra"] == ("h2d_input+zero_grad" if r["pass"] == "forward_backward" else "h2d_input")


# folder -> (GPU id, GPU name as torch reports it, SM count, SM clock in MHz, cases, of them mixed, machine files)
MEASURED_FOLDERS = {
    # 14 networks x 5 batches x 2 passes = 140 cases in each of fp32, tf32 and bf16 (420); mixed ran out of the
    # session's device time: 3 networks x 10 + MobileNet V2's 8 (run 1), 5 x 10 + ShuffleNet V2's 6 (run 2),
    # MobileNet V3 Large's 10 + ConvNeXt-T's 4 (run 3) = 108; 420 + 108 = 528
    "h200-2026-11-26": ("h200-sxm", "NVIDIA H200", 132, "1980", 528, 108, (1, 2, 3)),
    # one run, all four precisions complete: 4 x 140 = 560, mixed 140
    "h100-2026-11-27": ("h100-sxm", "NVIDIA H100 80GB HBM3", 132, "1980", 560, 140, (1,)),
    # the H200's 32 missing mixed cases, the next day on another H200 machine, less the last one (its deadline):
    # ResNet-152 and RegNetY-1.6GF 2 x 10, ConvNeXt-T batch 8/128/256 x 2 passes = 6, ShuffleNet V2 batch 8/128 x
    # 2 = 4, MobileNet V2 batch 128 inference = 1; 20 + 6 + 4 + 1 = 31; then the last one, MobileNet V2's training
    # step at batch 128, in a later session the same day (run 2): 32
    "h200-2026-11-27": ("h200-sxm", "NVIDIA H200", 132, "1980", 32, 32, (1, 2)),
    # 7 networks not measured before (ResNet-34/101, Wide ResNet-50-2, DenseNet-169, VGG-16-BN, MNASNet 1.0,
    # RegNetX-3.2GF) x 5 batches x 4 precisions x 2 passes = 280, mixed 7 x 10 = 70: held out by network
    "h200-2026-11-27-nets": ("h200-sxm", "NVIDIA H200", 132, "1980", 280, 70, (1,)),
    # the same 7 networks on an H100 in a later session (280, mixed 70), and 7 more no row had before
    # (MobileNet V3 Small, RegNetX-400MF/1.6GF, RegNetY-800MF/3.2GF, ResNeXt-101 64x4d, ConvNeXt-S): 280, mixed 70
    "h100-2026-11-27-nets": ("h100-sxm", "NVIDIA H100 80GB HBM3", 132, "1980", 280, 70, (1,)),
    "h100-2026-11-27-nets2": ("h100-sxm", "NVIDIA H100 80GB HBM3", 132, "1980", 280, 70, (1,)),
    # a fifth session: the nets2 networks on an H200, less ConvNeXt-S's mixed batch 128 (its 2 passes: the
    # deadline), 280 - 2 = 278, mixed 70 - 2 = 68; then 7 networks no row had (GoogLeNet, MNASNet 0.5, ShuffleNet
    # V2 x2.0, DenseNet-201, Wide ResNet-101-2, RegNetY-400MF, ConvNeXt-B) on the H200, all 280 (mixed 70), and
    # on an H100 until its deadline: fp32, tf32 and bf16 complete (3 x 70 = 210), mixed GoogLeNet's 10 and
    # MNASNet 0.5's first 5 (batch 1, 32 x 2 passes, 256 inference) = 15; 210 + 15 = 225
    "h200-2026-11-27-nets2": ("h200-sxm", "NVIDIA H200", 132, "1980", 278, 68, (1,)),
    "h200-2026-11-27-nets3": ("h200-sxm", "NVIDIA H200", 132, "1980", 280, 70, (1,)),
    "h100-2026-11-27-nets3": ("h100-sxm", "NVIDIA H100 80GB HBM3", 132, "1980", 225, 15, (1,)),
}


@pytest.mark.parametrize("folder", sorted(MEASURED_FOLDERS))
def test_rows_measured_here(rows, folder):
    """The rows measured by this project (benchmarks/measure_gpu.py) are the raw lines of their session folder, one
    row per line, each naming its line; the SM clock read after every network was the GPU's maximum (±1 %)."""
    b = _builder()
    gpu, name, sms, clock, cases, mixed, runs = MEASURED_FOLDERS[folder]
    h = [r for r in rows if r["source_id"] == f"measured-{folder}"]
    d = DATA / "measured" / folder
    raw = [json.loads(line) for line in (d / "gpu_measured.jsonl").read_text().splitlines()]
    assert len(raw) == len(h) == cases
    assert sum(m["precision"] == "mixed" for m in raw) == mixed
    for r in h:
        n = int(re.search(r" :: line (\d+) ", r["source"]).group(1))
        m = raw[n - 1]
        assert (r["network"], r["precision"], int(r["batch"]), r["pass"]) == \
            (m["network"], m["precision"], m["batch"], m["pass"])
        assert float(r["measured_ms"]) == pytest.approx(m["measured_ms"], abs=5e-7)
        assert m["min_ms"] <= m["measured_ms"] <= m["max_ms"] and m["runs"] >= 5
    assert {r["gpu"] for r in h} == {gpu} and {r["generation"] for r in h} == {"hopper"}
    assert {r["timed_extra"] for r in h} == {""}                       # the input was already on the GPU
    assert all("cuDNN 9.19.0" in r["framework"] and "cudnn.benchmark False" in r["framework"] for r in h)
    for run in runs:
        env = json.loads((d / f"gpu_env_run{run}.json").read_text())
        assert env["gpu"] == name and env["sm_count"] == sms and not env["cudnn_benchmark"]
        # at the maximum within 1 %: the H200 read 1965 MHz once (after Wide ResNet-101-2's tf32 cases, at 669 W)
        assert env["smi"]["clocks.max.sm"] == clock and env["clocks_after"]
        assert all(abs(int(c["clocks.sm"]) - int(clock)) <= 0.01 * int(clock) for c in env["clocks_after"])
    assert b.MEASURED[folder] == gpu and set(b.MEASURED) == set(MEASURED_FOLDERS)


def test_kepler_rows(rows):
    """Kepler (K80, K40) rows: four sources, inference, training steps and Torch7's forward and backward, batch 1 to
    256, all fp32 on built-in networks but Torch7's ResNet-200."""
    from core import zoo
    kepler = [r for r in rows if r["generation"] == "kepler"]
    assert {r["gpu"] for r in kepler} == {"k80", "k40", "k40-base"}
    assert {r["source_id"] for r in kepler} == {"tensorflow-benchmarks-doc", "apache-mxnet-perf",
                                                "bvlc-caffe-performance", "jcjohnson-cnn-benchmarks"}
    assert {r["pass"] for r in kepler} == {"inference", "training_step", "forward", "backward", "forward_backward"}
    assert {r["precision"] for r in kepler} == {"fp32"}
    batches = {int(r["batch"]) for r in kepler if r["gpu"] == "k80"}
    assert {1, 2, 4, 8, 256} <= batches
    assert {r["network"] for r in kepler} - set(zoo.names()) == {"resnet200"}


def test_k40c_rows(rows):
    """jcjohnson's K40c rows (an earlier README version): 9 networks x forward, backward and total at batch 16,
    Total = Forward + Backward as published (to the source's rounding), on the K40 at its 745 MHz base clock."""
    k40c = [r for r in rows if r["gpu"] == "k40-base"]
    assert len(k40c) == 27 and {r["source_id"] for r in k40c} == {"jcjohnson-cnn-benchmarks"}
    assert {r["batch"] for r in k40c} == {"16"} and all("bb9a45d" in r["note"] for r in k40c)
    by = {(r["network"], r["pass"]): float(r["measured_ms"]) for r in k40c}
    for net in {n for n, _ in by}:
        assert by[net, "forward"] + by[net, "backward"] == pytest.approx(by[net, "forward_backward"], abs=0.011)
    # ResNet-50: Forward 129.21, Backward 320.69, Total 449.90 (129.21 + 320.69 = 449.90)
    assert (by["resnet50", "forward"], by["resnet50", "backward"]) == (129.21, 320.69)
    specs = {d["id"]: d for d in json.loads((ROOT / "device_specs.json").read_text())["devices"]}
    base, boost = specs["k40-base"], specs["k40"]
    # 2 x 2880 cores x 0.745 GHz = 4.2912 TF, the source's "4.29"; the 875 MHz k40 is 2 x 2880 x 0.875 = 5.04 TF
    assert base["peak_flops"]["fp32"] == pytest.approx(2 * 2880 * 0.745e9, rel=1e-3)
    assert boost["peak_flops"]["fp32"] == pytest.approx(2 * 2880 * 0.875e9, rel=1e-3)
    for k in ("memory_bandwidth", "memory_capacity", "sm_count", "l2_bytes", "architecture"):
        assert base[k] == boost[k], k


def test_tensorflow_transcription_is_in_the_dataset(rows):
    """Each line of the hand transcriptions (12 K80, 8 DGX-1 P100) is one row: same batch, same images/s,
    ms = batch / images/s."""
    tf = [r for r in rows if r["source_id"] == "tensorflow-benchmarks-doc"]
    lines = [*csv.DictReader(TF_TRANSCRIBED.open(encoding="utf-8")),
             *csv.DictReader((DATA / "tensorflow_p100_transcribed.csv").open(encoding="utf-8"))]
    assert len(tf) == len(lines) == 12 + 8
    for t in lines:
        hits = [r for r in tf if f"column '{t['column']}'" in r["source"]
                and f"## {t['section']} / {t['table']}:" in r["source"]]
        assert len(hits) == 1, t
        assert int(hits[0]["batch"]) == int(t["batch"])
        assert float(hits[0]["original_value"]) == float(t["images_per_s"])
    # e.g. GCE ResNet-50 at batch 64: 51.9 images/s → 64 / 51.9 × 1000 = 1233.141 ms
    gce = next(r for r in tf if r["network"] == "resnet50" and r["batch"] == "64" and "Google" in r["source"])
    assert float(gce["measured_ms"]) == pytest.approx(1233.141, abs=1e-3)


def test_caffe_rows_convert():
    """Caffe's K40 figures: s per 20 iterations of 256 images, s per 50,000 images in batches of 50."""
    rows_ = [r for r in csv.DictReader(CSV_PATH.open(newline="")) if r["source_id"] == "bvlc-caffe-performance"]
    assert len(rows_) == 4
    for r in rows_:
        v, unit, batch = float(r["original_value"]), r["original_unit"], int(r["batch"])
        m = re.match(r"^s per (\d+) (iterations|images)$", unit)
        assert m, unit
        n = int(m.group(1))
        want = v / n * 1000 if m.group(2) == "iterations" else v / (n / batch) * 1000
        assert float(r["measured_ms"]) == pytest.approx(want, rel=1e-6)
    # standard Caffe training: 26.5 s / 20 iterations = 1.325 s = 1325 ms per batch of 256
    assert any(r["pass"] == "training_step" and float(r["measured_ms"]) == pytest.approx(1325.0) for r in rows_)
    # cuDNN testing: 60.7 s for 50,000 images = 1000 batches of 50 → 60.7 ms per batch
    assert any(r["pass"] == "inference" and float(r["measured_ms"]) == pytest.approx(60.7) for r in rows_)


def test_timed_extra_rows(rows):
    """``timed_extra`` names what a row's timed region holds beyond the passes, joined by "+": "h2d_input" exactly
    where the note says the host-to-device copy of the input is timed, with ``host_link`` an interconnect of
    device_specs.json; "zero_grad" exactly where the note says a PyTorch row's training pass starts with
    ``zero_grad`` (PyTorch < 2 there: gradients zeroed, so backward adds into them)."""
    links = {d["id"] for d in json.loads((ROOT / "device_specs.json").read_text())["interconnects"]}
    for i, r in enumerate(rows):
        names = r["timed_extra"].split("+") if r["timed_extra"] else []
        assert set(names) <= {"h2d_input", "zero_grad"}, f"row {i + 2}: timed_extra {r['timed_extra']!r}"
        assert names == sorted(set(names)), f"row {i + 2}: timed_extra {r['timed_extra']!r} not sorted"
        timed_copy = "timed region includes the host-to-device copy" in r["note"]
        assert ("h2d_input" in names) == timed_copy, f"row {i + 2}: timed_extra vs note"
        zeroed = "zero_grad + forward" in r["note"]
        assert ("zero_grad" in names) == zeroed, f"row {i + 2}: zero_grad vs note"
        if zeroed:
            # every such row is a training pass of a PyTorch before 2.0 (0.3 … 1.7, or a 2018–21 run)
            assert r["pass"] == "forward_backward", f"row {i + 2}: zero_grad on a {r['pass']} row"
            assert r["framework"].startswith("PyTorch") and not re.match(r"PyTorch [2-9]", r["framework"]), \
                f"row {i + 2}: zero_grad on {r['framework']!r}"
        if "h2d_input" in names:
            assert r["host_link"] in links, f"row {i + 2}: host_link {r['host_link']!r}"
        else:
            assert not r["host_link"], f"row {i + 2}: host_link without h2d_input"
    assert {r["source_id"] for r in rows if "zero_grad" in r["timed_extra"]} == \
        {"ryujaehun-pytorch-gpu-benchmark", "u39kun-deep-learning-benchmark"}
    assert {r["gpu"] for r in rows if "h2d_input" in r["timed_extra"]} == \
        {"rtx-2080-ti", "titan-xp", "titan-rtx", "a100-40gb-sxm"}


def test_titan_rtx_rows(rows):
    """ryujaehun's TITAN RTX run (results/TitanRTX, 2021-01-03, the 2020–21 script): four CSV files (float / half ×
    train / inference), 32 network columns each, 50 per-iteration values per column."""
    t = [r for r in rows if r["gpu"] == "titan-rtx"]
    assert len(t) == 32 * 2 * 2                                   # networks × precisions × passes = 128
    assert {r["source_id"] for r in t} == {"ryujaehun-pytorch-gpu-benchmark"}
    assert {(r["precision"], r["pass"]) for r in t} == \
        {(p, s) for p in ("fp32", "fp16") for s in ("forward_backward", "inference")}
    assert {r["generation"] for r in t} == {"turing"} and {r["batch"] for r in t} == {"12"}
    assert {r["host_link"] for r in t} == {"pcie3-x16"}
    assert all("CUDA 10.2, cuDNN 7.6.5" in r["framework"] for r in t)     # the run's system_info.txt
    ms = {(r["precision"], r["pass"]): float(r["measured_ms"]) for r in t if r["network"] == "resnet50"}
    # the resnet50 column's 50 values, summed by hand from the source's CSVs: 975.739002 / 50 = 19.5148 (float
    # inference), 3231.271744 / 50 = 64.6254 (float train), 512.473345 / 50 = 10.2495 (half inference),
    # 2210.717440 / 50 = 44.2143 (half train)
    assert ms == {("fp32", "inference"): 19.5148, ("fp32", "forward_backward"): 64.6254,
                  ("fp16", "inference"): 10.2495, ("fp16", "forward_backward"): 44.2143}
