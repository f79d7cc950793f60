"""Training on two GPUs in the course labs (issue 42): lab 1's whole K80 board (its two GK210s as DDP workers over
the board's PCIe switch, weak scaling) and lab 4's report-003 case (ResNet-18/50 on one V100-SXM2 and on two over
NVLink 2, the global batch split), checked against core.scaling and core.estimate, and shown on the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from apptest_ref import metric, open_page
from core.api import estimate, scaling
from core.devices import load_devices
from ui.labs import lab1, lab4

PAGE = str(Path(__file__).resolve().parent.parent / "views" / "course_labs.py")


@pytest.fixture(scope="module")
def db():
    return load_devices(user_path=None)


def test_lab1_board_is_two_workers_over_pcie_each_keeping_its_batch(db):
    b = lab1.board_training(db, "vgg16")
    one = estimate("vgg16", "k80", batch_size=lab1.BOARD_BATCH)
    two = estimate("vgg16", "k80", batch_size=lab1.BOARD_BATCH, workers=2, link="pcie3-x16")
    t1, t2 = one.totals["training_step_s"], two.totals["training_step_s"]
    assert b["one"]["training_step_s"] == pytest.approx(t1) and b["two"]["training_step_s"] == pytest.approx(t2)
    # weak scaling: 2 × 64 images in t2 against 64 in t1 → speed-up = 2·t1 / t2
    assert b["speedup"] == pytest.approx(2 * t1 / t2) and b["efficiency"] == pytest.approx(t1 / t2)
    dp = two.data_parallel
    assert b["communication_s"] == pytest.approx(dp.exposed_s + dp.sync_s)
    assert b["share"] == pytest.approx((dp.exposed_s + dp.sync_s) / t2)
    # VGG16's 138,357,544 fp32 gradients (553 MB) all cross the PCIe switch; the all-reduce moves all of them
    assert dp.gradient_bytes == 138_357_544 * 4
    assert lab1.BOARD_LINK in db.interconnects and b["two"]["per_worker_batch"] == lab1.BOARD_BATCH


def test_lab4_two_v100s_split_the_global_batch(db):
    t = lab4.two_gpu_training("resnet50", 32)
    one = estimate("resnet50", "v100-sxm2", batch_size=32)
    two = estimate("resnet50", "v100-sxm2", batch_size=16, workers=2, link="nvlink2-v100")      # ⌈32 / 2⌉
    t1, t2 = one.totals["training_step_s"], two.totals["training_step_s"]
    # strong scaling: the same 32 images in t2 instead of t1 → speed-up = t1 / t2
    assert t["speedup"] == pytest.approx(t1 / t2) and t["two"]["per_worker_batch"] == 16
    assert t["communication_s"] == pytest.approx(two.data_parallel.exposed_s + two.data_parallel.sync_s)
    assert t["two"] == scaling("resnet50", "v100-sxm2", "nvlink2-v100", workers=(1, 2), batch_size=32)[1]


def test_the_labs_show_the_two_gpu_cases(db):
    at = open_page(PAGE)
    at.button_group(key="lab").set_value(1).run()
    assert not at.exception and not at.error
    b = lab1.board_training(db, "vgg19")                              # the lab's default network
    assert metric(at, "Speed-up (images per second)") == f"{b['speedup']:.2f}×"
    assert any(c.value == lab1.board_sentence(b) for c in at.caption)
    at.button_group(key="lab").set_value(4).run()
    assert not at.exception and not at.error
    t = lab4.two_gpu_training("resnet18", 32)                         # the lab's defaults
    assert metric(at, "Predicted speed-up") == f"{t['speedup']:.2f}×"
    assert any(c.value.startswith(f"Two V100s train resnet18 **{t['speedup']:.2f}×**") for c in at.caption)
    at.selectbox(key="lab4_dtype").set_value("bf16").run()            # the V100 has no bf16: said, not raised
    assert not at.exception and any("bf16" in i.value for i in at.info)
