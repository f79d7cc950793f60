"""The GPU fields the time model needs (architecture, SMs, boost clock, L2, per-field sources): bounds, the
generation list, and the shipped entries' arithmetic (fp32 peak = 2 x FP32 lanes per SM x SMs x boost clock)."""

import pytest

from core.devices import ARCHITECTURES, DEVICE_FIELDS, FP32_LANES_PER_SM, load_devices, parse_devices

GOOD = {"id": "toy", "name": "Toy GPU", "vendor": "test", "kind": "GPU", "year": 2020,
        "peak_flops": {"fp32": 1e12}, "memory_bandwidth": 1e11, "source": "https://example.org/toy", "note": "",
        "architecture": "ampere", "sm_count": 4, "boost_clock": 1.5e9, "l2_bytes": 4 * 2 ** 20,
        "sources": {"sm_count": "https://example.org/sm", "peak_flops.fp16": "whitepaper p. 3"}}
SHIPPED = load_devices(user_path=None)
GPUS = [d for d in SHIPPED.devices.values() if d.kind == "GPU"]
# Shipped entries whose vendor peaks are not at the stated boost clock (docs/device_notes.md says why).
CLOCK_MISMATCH = {
    "titan-v": "NVIDIA's 13.8 TF fp32 and 110 TF tensor are at about 1.35 GHz, not the 1455 MHz boost",
    "p100-pcie": "NVIDIA's 9.3 TF is 2.4% below 2 x 3584 x 1.329 GHz (TechPowerUp's boost clock)",
}


def doc(*devices):
    return {"schema": "cnn-calc/devices", "version": 1, "devices": list(devices), "interconnects": []}


def test_a_gpu_with_every_new_field_loads():
    db = parse_devices(doc(GOOD))
    assert db.problems == ()
    toy = db.device("toy")
    assert (toy.architecture, toy.sm_count, toy.boost_clock, toy.l2_bytes) == ("ampere", 4, 1.5e9, 4 * 2 ** 20)
    assert toy.sources["peak_flops.fp16"] == "whitepaper p. 3"
    assert toy.to_dict()["sources"] == GOOD["sources"]


@pytest.mark.parametrize("field, value", [
    ("architecture", "kepler2"), ("architecture", 3),
    ("sm_count", 0), ("sm_count", 1.5), ("sm_count", 10 ** 6),
    ("boost_clock", 0), ("boost_clock", 1e3), ("boost_clock", 1e12),
    ("l2_bytes", 0), ("l2_bytes", 2 ** 41),
    ("sources", {"sm_count": ""}), ("sources", {"Not A Field": "x"}), ("sources", {"sm_count": 3}),
])
def test_out_of_bounds_values_are_named(field, value):
    db = parse_devices(doc(GOOD, {**GOOD, "id": "bad", field: value}))
    assert list(db.devices) == ["toy"]
    assert len(db.problems) == 1 and db.problems[0].startswith(f"bad: {field}"), db.problems


def test_the_generations_are_declared_once():
    spec = next(f for f in DEVICE_FIELDS if f.name == "architecture")
    assert spec.rule["enum"] == list(ARCHITECTURES) and len(set(ARCHITECTURES)) == len(ARCHITECTURES)
    assert set(FP32_LANES_PER_SM) <= set(ARCHITECTURES)
    for name in ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2",
                 "cdna3"):
        assert name in ARCHITECTURES


@pytest.mark.parametrize("gpu", GPUS, ids=lambda d: d.id)
def test_every_gpu_has_an_architecture(gpu):
    assert gpu.architecture in ARCHITECTURES


@pytest.mark.parametrize("gpu", GPUS, ids=lambda d: d.id)
def test_every_field_a_source_is_given_for_is_in_the_entry(gpu):
    entry = gpu.to_dict()
    for path in gpu.sources:
        top, _, sub = path.partition(".")
        assert top in entry, f"{gpu.id}: sources names {path}, which the entry does not have"
        if sub:
            assert sub in entry[top], f"{gpu.id}: sources names {path}, which the entry does not have"


@pytest.mark.parametrize("ident", ["gtx-1080", "gtx-1080-ti", "titan-x-maxwell", "titan-x-pascal", "k40", "titan-v",
                                   "rtx-2080-ti", "quadro-rtx-8000", "rtx-a6000", "a10", "a40", "l4", "l40s"])
def test_the_gpus_of_public_benchmarks_are_there(ident):
    gpu = SHIPPED.device(ident)
    assert gpu.kind == "GPU" and gpu.architecture and gpu.boost_clock


CHECKED = [d for d in GPUS if d.sm_count and d.boost_clock and d.architecture in FP32_LANES_PER_SM
           and "fp32" in d.peak_flops]


def _lanes(gpu) -> float:
    """FP32 lanes per SM that the entry's fp32 peak, SMs and boost clock imply (per GPU of a board)."""
    return gpu.peak_flops["fp32"] / gpu.gpus_per_board / (2 * gpu.sm_count * gpu.boost_clock)


@pytest.mark.parametrize("gpu", CHECKED, ids=lambda d: d.id)
def test_fp32_peak_is_two_flops_per_lane_per_clock(gpu):
    closest = min(FP32_LANES_PER_SM[gpu.architecture], key=lambda n: abs(_lanes(gpu) / n - 1))
    off = abs(_lanes(gpu) / closest - 1)
    if gpu.id in CLOCK_MISMATCH:
        assert off > 0.02, f"{gpu.id} now matches: drop it from CLOCK_MISMATCH"
    else:
        assert off <= 0.02, f"{gpu.id}: fp32 peak implies {_lanes(gpu):.1f} lanes per SM, not {closest}"


def test_the_arithmetic_check_covers_most_gpus():
    assert len(CHECKED) >= 20 and set(CLOCK_MISMATCH) <= {d.id for d in CHECKED}
