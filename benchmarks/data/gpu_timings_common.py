"""What build_gpu_timings.py's readers share: the dataset's columns, each public source's repository and pinned
commit (``SOURCES``), each GPU's generation, reading a file of a source at a commit from its local snapshot
(``show``) and citing it (``where``), Markdown tables, numbers in cells, and a row of the dataset (``row``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent

COLUMNS = [
    "network", "torchvision_match", "gpu", "generation", "batch", "precision",
    "pass", "framework", "measured_ms", "original_value", "original_unit",
    "source_id", "source", "note", "timed_extra", "host_link",
]

SOURCES = {
    "jcjohnson-cnn-benchmarks": (
        "jcjohnson/cnn-benchmarks", "83d441f852134f4a98aa3e665499d9369b6141c9"),
    "ryujaehun-pytorch-gpu-benchmark": (
        "ryujaehun/pytorch-gpu-benchmark", "3f47a9e2a43ca751ffade0add700b54b00e44bf0"),
    "u39kun-deep-learning-benchmark": (
        "u39kun/deep-learning-benchmark", "9dc3e36e6f97e0edf270a813f350fca1fb0e014e"),
    "nvidia-deeplearningexamples": (
        "NVIDIA/DeepLearningExamples", "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"),
    "lambdal-deeplearning-benchmark": (
        "lambdal/deeplearning-benchmark", "aa5addb6a53675a649a80036dad548f1c27cbcc4"),
    # Kepler sources: one id per publisher, so a leave-one-source-out fold holds out all of it
    "tensorflow-benchmarks-doc": (
        "tensorflow/tensorflow", "5984ffefd320c5d71b801ee06079a51b91ea42c0"),
    "apache-mxnet-perf": (          # two documents at two commits: MXNET_DOCS
        "apache/mxnet", "db4de44f170df08a1500feabccb55a63266d7ae2"),
    "bvlc-caffe-performance": (
        "BVLC/caffe", "83b5dcd40bd61fe61b88fb90c3615e2096316724"),
    # held out of every fit (HOLDOUT)
    "timm-benchmark-results": (
        "huggingface/pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d"),
}

GENERATION = {
    "titan-x-maxwell": "maxwell", "gtx-1080": "pascal", "gtx-1080-ti": "pascal",
    "titan-x-pascal": "pascal", "titan-xp": "pascal", "titan-v": "volta",
    "v100-sxm2": "volta", "rtx-2080-ti": "turing", "t4": "turing", "titan-rtx": "turing",
    "a100-40gb-sxm": "ampere-ga100", "a100-80gb-sxm": "ampere-ga100", "quadro-rtx-8000": "turing",
    "rtx-3090": "ampere", "a10": "ampere", "a100-40gb-pcie": "ampere-ga100",
    "a100-80gb-pcie": "ampere-ga100", "rtx-a6000": "ampere", "rtx-4090": "ada",
    "h100-pcie": "hopper", "h100-sxm": "hopper", "h200-sxm": "hopper", "k80": "kepler", "k40": "kepler",
    "k40-base": "kepler",
    "m40": "maxwell", "m60": "maxwell", "p100-sxm2": "pascal",
}


def _git_dir(mirror: Path, repo: str) -> Path:
    base = mirror / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").exists() else base


# a commit of a source's repository that its snapshot here lacks, and the public fork whose snapshot holds it:
# commit → the fork's owner/name (the commit is the source's own, so ``where`` cites the source's repository)
FORK_HOLDS = {
    # ryujaehun/pytorch-gpu-benchmark, "Addition result RTX 3090 and RTX2060" (2021-02-27), after the snapshot's
    # 3f47a9e; lamikr/pytorch-gpu-benchmark carries upstream's history
    "1750bf0e33c01fda0c16ab66bf70321ad6a40cd2": "lamikr/pytorch-gpu-benchmark",
}


def show(mirror: Path, sid: str, path: str, commit: str | None = None) -> str:
    repo, default = SOURCES[sid]
    commit = commit or default
    repo = FORK_HOLDS.get(commit, repo)
    return subprocess.run(
        ["git", "--git-dir", str(_git_dir(mirror, repo)), "show", f"{commit}:{path}"],
        check=True, capture_output=True, text=True).stdout


def where(sid: str, path: str, table: str, commit: str | None = None) -> str:
    repo, default = SOURCES[sid]
    commit = commit or default
    return f"https://github.com/{repo}/blob/{commit}/{path} :: {table}"


def md_tables(text: str):
    """Yield (heading trail, header cells, rows of cells) for each markdown table."""
    heads: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(#+)\s+(.*)$", line)
        if m:
            level = len(m.group(1))
            heads = heads[: level - 1] + [""] * max(0, level - 1 - len(heads)) + [m.group(2).strip()]
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|?\s*$", lines[i + 1]):
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
                j += 1
            yield [h for h in heads if h], header, rows
            i = j
            continue
        i += 1


def num(cell: str) -> float:
    m = re.search(r"[-+]?\d+(?:\.\d*)?", cell.replace(",", ""))
    if not m:
        raise ValueError(cell)
    return float(m.group(0))


def extras(**which: bool) -> str:
    """The ``timed_extra`` cell: the names that are true, sorted, joined by "+" ("h2d_input": the input's
    host-to-device copy; "zero_grad": ``zero_grad()`` in PyTorch < 2, which zeroes every gradient, so backward
    adds into each)."""
    return "+".join(sorted(k for k, v in which.items() if v))


def row(**kw) -> dict:
    r = {c: "" for c in COLUMNS}
    r.update(kw)
    r["generation"] = GENERATION[r["gpu"]]
    return r
