"""core.data_parallel: DDP's buckets, their all-reduce overlapping the backward, synchronisation, the input pipeline
and nodes, worked by hand on a 2-GPU PCIe case and an 8-GPU NVSwitch case; and how an estimate carries them."""

from math import isclose, log, sqrt

import pytest

import core
from core.communication import gradient_allreduce_s
from core.data_parallel import DataParallel, buckets, ddp_step, dp_params, paleo_step, typical_error
from core.devices import Interconnect, load_devices
from core.precision import PRECISIONS

DB = load_devices()
# forward order; backward runs c, b, a
LAYERS = [("a", 0.010, 200_000), ("b", 0.020, 6_000_000), ("c", 0.005, 100_000)]
PARAMS = {"bus_share": 0.5, "hop_latency_s": 1e-5, "sync_s": 0.001,
          "jitter": {"synthetic": 0.01, "cpu": 0.02, "dali": 0.01}, "decode_images_per_core_s": {"cpu": 100.0}}
COMPUTE = 0.05          # forward + backward + update of one worker, seconds
HOST = 0.02             # the host's time issuing the step's kernels, seconds
FP32 = PRECISIONS["fp32"]


def link(bw: float, name: str = "test link") -> Interconnect:
    return Interconnect(id=name, name=name, bandwidth=bw * 2, source="test", allreduce_bandwidth=bw)


def test_buckets_follow_the_backward_first_one_mib_then_25():
    # fp32: c 400,000 B (< 1 MiB = 1,048,576: open), + b 24,000,000 = 24,400,000 ≥ 1 MiB → bucket 1, ready when b's
    # backward ends at 0.005 + 0.020 = 0.025 s; a 800,000 B < 25 MiB, the last → bucket 2 at 0.035 s
    got = buckets(LAYERS, 4, 25.0)
    assert [(b, f, t) for b, f, _, t in got] == [(24_400_000, "c", pytest.approx(0.025)), (800_000, "a", 0.035)]
    assert [x[2] for x in got] == ["b", "a"]
    assert len(buckets(LAYERS, 4, 1e6)) == 2          # the first bucket is 1 MiB whatever bucket_mb says
    assert [b for b, *_ in buckets(LAYERS, 4, 0.5)] == [24_400_000, 800_000]


def test_two_gpus_over_pcie_by_hand():
    dp = DataParallel(2, link(4e9))
    s = ddp_step(LAYERS, COMPUTE, 32, dp, FP32, PARAMS, HOST)
    # ring over K = 2: 2(K−1)/K · S / B + 2(K−1)·α = S / 4e9 + 2e-5
    # bucket 1: 24.4e6 / 4e9 = 6.1e-3 + 2e-5 = 6.12e-3, starts at 0.025 (ready), ends 0.03112
    # bucket 2: 0.8e6 / 4e9 = 2.0e-4 + 2e-5 = 2.2e-4, ready at 0.035 > 0.03112: starts 0.035, ends 0.03522
    assert [b.end_s for b in s.buckets] == [pytest.approx(0.03112), pytest.approx(0.03522)]
    assert s.allreduce_s == pytest.approx(6.34e-3)
    assert s.exposed_s == pytest.approx(2.2e-4)            # backward ends at 0.035
    assert s.overlapped_s == pytest.approx(6.12e-3)
    # sync: 1 ms + 0.01 · √(2 ln 2) · 0.02 s of host time = 0.001 + 0.01 · 1.177410 · 0.02 = 0.00123548
    assert s.sync_s == pytest.approx(0.001 + 0.01 * sqrt(2 * log(2)) * HOST)
    assert isclose(s.sync_s, 0.00123548, rel_tol=1e-5)
    # efficiency = 0.05 / (0.05 + 0.00022 + 0.00123548) = 0.05 / 0.05145548 = 0.971714
    assert COMPUTE / (COMPUTE + s.communication_s) == pytest.approx(0.971714, rel=1e-5)
    assert s.gradient_bytes == 25_200_000 and s.reduce_bytes == 4


def test_eight_gpus_over_nvswitch_by_hand():
    dp = DataParallel(8, link(200e9))
    s = ddp_step(LAYERS, COMPUTE, 32, dp, FP32, PARAMS, HOST)
    # ring over K = 8: 1.75 · S / 200e9 + 14 · 1e-5
    # bucket 1: 1.75 · 24.4e6 / 200e9 = 2.135e-4 + 1.4e-4 = 3.535e-4, ends 0.0253535
    # bucket 2: 1.75 · 0.8e6 / 200e9 = 7e-6 + 1.4e-4 = 1.47e-4, starts 0.035, ends 0.035147: exposed 1.47e-4
    assert s.exposed_s == pytest.approx(1.47e-4)
    assert s.allreduce_s == pytest.approx(3.535e-4 + 1.47e-4)
    # sync: 0.001 + 0.01 · √(2 ln 8) · 0.02 = 0.001 + 0.01 · 2.0393339 · 0.02 = 0.00140787
    assert s.sync_s == pytest.approx(0.00140787, rel=1e-5)
    # efficiency 0.05 / (0.05 + 0.000147 + 0.00140787) = 0.05 / 0.05155487 = 0.969841
    assert COMPUTE / (COMPUTE + s.communication_s) == pytest.approx(0.969841, rel=1e-5)


def test_two_nodes_reduce_inside_then_between():
    dp = DataParallel(16, link(200e9), nodes=2, node_link=link(25e9, "net"), nics=4)
    s = ddp_step(LAYERS, COMPUTE, 32, dp, FP32, PARAMS, HOST)
    # bucket 1 inside a node (8 GPUs): 3.535e-4 as above; between 2 nodes at 4 NICs × 25e9 = 1e11:
    # 2·1/2 · 24.4e6 / 1e11 + 2·1·1e-5 = 2.44e-4 + 2e-5 = 2.64e-4 → 6.175e-4
    assert s.buckets[0].end_s - s.buckets[0].start_s == pytest.approx(6.175e-4)
    assert s.nodes == 2


def test_input_pipeline_waits_for_the_host():
    dp = DataParallel(2, link(4e9), input_pipeline="cpu", cpu_cores=8)
    s = ddp_step(LAYERS, COMPUTE, 32, dp, FP32, PARAMS, HOST)
    # decoding 32 images × 2 GPUs on 8 cores at 100 images/s each: 64 / 800 = 0.08 s, longer than the GPUs' step
    # 0.05 + 0.00022 + sync (0.001 + 0.02 · 1.177410 · 0.02 = 0.00147096) = 0.05169096 → waits 0.02830904
    assert s.input_wait_s == pytest.approx(0.02830904, rel=1e-6)
    one = ddp_step(LAYERS, COMPUTE, 32, DataParallel(1, input_pipeline="cpu", cpu_cores=8), FP32, PARAMS, HOST)
    assert one.input_wait_s == pytest.approx(32 / 800 - COMPUTE + 0.01) and one.allreduce_s == 0 == one.sync_s
    assert "input pipeline (host decode)" in s.terms


def test_gradients_reduced_as_ddp_holds_them():
    mixed = PRECISIONS["mixed"]
    dp = DataParallel(2, link(4e9))
    assert ddp_step(LAYERS, COMPUTE, 32, dp, mixed, PARAMS).reduce_bytes == 4      # fp32 master grads (autocast)
    assert ddp_step(LAYERS, COMPUTE, 32, DataParallel(2, link(4e9), reduce_dtype="fp16"), mixed,
                    PARAMS).reduce_bytes == 2
    assert ddp_step(LAYERS, COMPUTE, 32, dp, PRECISIONS["bf16"], PARAMS).reduce_bytes == 2
    assert paleo_step(100, COMPUTE, 32, DataParallel(2, link(4e9), comm_model="paleo"), mixed).reduce_bytes == 2


def test_an_estimate_adds_the_terms_to_its_step():
    e = core.estimate("resnet18", "v100-sxm2", batch_size=32, workers=8, link="nvlink2-v100")
    t, dp = e.totals, e.data_parallel
    assert t["training_step_s"] == pytest.approx(t["training_forward_s"] + t["backward_s"] + t["update_s"]
                                                 + t["communication_s"])
    assert t["communication_s"] == pytest.approx(dp.exposed_s + dp.sync_s)
    assert sum(b.nbytes for b in dp.buckets) == e.report.compiled.trainable * 4
    # NCCL's measured bus bandwidth, not the datasheet's
    assert dp.bus_bandwidth == DB.link("nvlink2-v100").allreduce_bandwidth == 130e9
    assert 0 < dp.exposed_s <= dp.allreduce_s
    assert e.to_dict()["data_parallel"]["buckets"] == len(dp.buckets)
    one = core.estimate("resnet18", "v100-sxm2", batch_size=32)
    assert one.data_parallel is None and "data_parallel" not in one.to_dict()
    assert one.totals["training_step_s"] == e.totals["training_step_s"] - t["communication_s"]


def test_the_host_time_is_the_fitted_gpu_models_whatever_the_variant():
    # the straggler term scales with the host's time issuing kernels: the fitted GPU model's per-call overhead of a
    # training step's forward and backward, also under PALEO; CUDA Graphs issue no kernels one by one
    pred = core.estimate("resnet18", "v100-sxm2", batch_size=32)
    assert pred.variant == "predicted"
    assert pred.host_s == pred.train_forward.overhead_s + pred.backward.overhead_s > 0
    paleo = core.estimate("resnet18", "v100-sxm2", batch_size=32, variant="paleo", ppp=0.5)
    assert paleo.host_s == pred.host_s
    assert core.estimate("resnet18", "v100-sxm2", batch_size=32, launch="cuda_graphs").host_s == 0
    e = core.estimate("resnet18", "v100-sxm2", batch_size=32, workers=8, link="nvlink2-v100")
    p = dp_params()
    assert e.data_parallel.sync_s == pytest.approx(p["sync_s"] + p["jitter"]["synthetic"] * sqrt(2 * log(8))
                                                   * pred.host_s)


def test_paleo_keeps_the_old_term():
    e = core.estimate("resnet18", "v100-sxm2", batch_size=32, workers=4, link="nvlink2-v100", comm_model="paleo",
                      allreduce="tree")
    old = gradient_allreduce_s(e.report.compiled.trainable * 4, 4, DB.link("nvlink2-v100"), 1.0, "tree")
    assert e.totals["communication_s"] == old


def test_a_link_without_a_measurement_takes_a_share_of_its_datasheet():
    lk = DB.link("pcie3-x16")
    assert lk.allreduce_bandwidth is None
    e = core.estimate("resnet18", "v100-pcie", batch_size=32, workers=2, link=lk)
    assert e.data_parallel.bus_bandwidth == pytest.approx(lk.bandwidth * dp_params()["bus_share"])


@pytest.mark.parametrize("kw, field", [
    ({"workers": 8, "link": "nvlink2-v100", "nodes": 3}, "nodes"),
    ({"workers": 8, "link": "nvlink2-v100", "nodes": 2}, "node_link"),
    ({"workers": 2, "link": "nvlink2-v100", "input_pipeline": "cpu"}, "cpu_cores"),
    ({"workers": 2, "link": "nvlink2-v100", "bucket_mb": 0}, "bucket_mb"),
    ({"workers": 2, "link": "nvlink2-v100", "reduce_dtype": "int8"}, "reduce_dtype"),
    ({"workers": 2, "link": "nvlink2-v100", "comm_model": "nccl"}, "comm_model"),
    ({"workers": 2, "link": "nvlink2-v100", "nics": 0}, "nics"),
    ({"workers": 2, "link": "nvlink2-v100", "bucket": 25}, "bucket"),
    ({"workers": 16, "link": "nvlink2-v100", "nodes": 2, "node_link": "ib-hdx"}, "node_link"),
])
def test_bad_settings_name_their_field(kw, field):
    with pytest.raises(core.CalcError) as e:
        core.estimate("resnet18", "v100-sxm2", batch_size=8, **kw)
    assert e.value.field == field


def test_paleo_refuses_nodes():
    with pytest.raises(core.CalcError, match="several nodes need comm_model ddp"):
        core.estimate("resnet18", "v100-sxm2", batch_size=8, workers=16, link="nvlink2-v100", nodes=2,
                      node_link="ib-hdr", comm_model="paleo")


def test_scaling_over_nodes_and_where_communication_dominates():
    from core.sweeps import communication_dominates
    rows = core.scaling("resnet18", "a100-80gb-sxm", "nvlink3-a100", workers=(1, 8, 16), batch_size=64, mode="weak",
                        gpus_per_node=8, node_link="ib-hdr")
    assert [r["nodes"] for r in rows] == [1, 1, 2]
    for r in rows:
        assert r["training_step_s"] == pytest.approx(r["compute_s"] + r["communication_s"] + r["input_wait_s"])
        assert r["communication_s"] == pytest.approx(r["exposed_s"] + r["sync_s"])
    assert communication_dominates(rows, 0.0) == 8 and communication_dominates(rows, 0.99) is None
    with pytest.raises(core.CalcError, match="not whole nodes"):
        core.scaling("resnet18", "a100-80gb-sxm", "nvlink3-a100", workers=(12,), gpus_per_node=8,
                     node_link="ib-hdr")


def test_typical_error_is_the_fit_held_out():
    te = typical_error()
    assert te["rows"] > 100 and te["median_points"] > 0 and te["p90_points"] >= te["median_points"]
    assert "held out" in te["basis"]


def test_the_fits_closed_form_is_the_models(tmp_path, monkeypatch):
    """benchmarks/fit_multigpu.py evaluates thousands of figures in closed form; it must equal core's DDP model."""
    import csv
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("fit_multigpu", root / "benchmarks" / "fit_multigpu.py")
    fit = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "fit_multigpu", fit)     # its dataclasses look their module up
    spec.loader.exec_module(fit)
    rows = list(csv.DictReader((root / "benchmarks" / "data" / "multigpu_throughput.csv").open()))
    keep = {"dle/pytorch/nvidia-dgx-1-8x-v100-16gb/resnet50/mixed/bs256/cpu", "tf/aws-p2.8xlarge/resnet50/fp32/bs64"}
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(r for r in rows if r["group"] in keep)
    cases, _ = fit.load_cases(path)
    assert {c.row["group"] for c in cases} == keep and {c.dp.input_pipeline for c in cases} == {"cpu", "synthetic"}
    params = {**dp_params(), "bus_share": 0.3, "sync_s": 0.002, "jitter": {"synthetic": 0.01, "cpu": 0.03, "dali": 0}}
    for c in cases:
        assert c.predicted(params) == pytest.approx(c.core_efficiency(params), rel=1e-12)
