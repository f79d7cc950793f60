"""Outcomes a caller must tell apart are error types, not message text: a Stop (``Cancelled``) and a memory-guard
refusal (``WontFit``) are ``CalcError`` subclasses raised where they happen, and no code decides by reading a
message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from torch import nn  # a test requirement: a missing install must fail, not skip

import core
from core.bridge.calibrate import calibrate
from core.bridge.timing import busy, check_fits, throughput_vs_batch, time_module
from core.errors import CalcError, Cancelled, WontFit
from ui import benchmark as bm

ROOT = Path(__file__).resolve().parents[1]


def tiny() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 2))


def test_both_are_calc_errors_with_the_message_users_read():
    assert issubclass(Cancelled, CalcError) and issubclass(WontFit, CalcError)
    report = core.analyze("mnist_cnn", batch_size=8)
    with pytest.raises(WontFit, match="the memory model says training at batch 8 needs") as e:
        check_fits(report, available_bytes=1000)
    assert e.value.field == "batch_size" and e.value.value == 8


def test_stop_raises_cancelled_from_timing_and_calibration_and_frees_the_lock():
    with pytest.raises(Cancelled, match="timing cancelled after 0 of"):
        time_module(tiny(), (3, 2, 2), cancel=lambda: True, warmup=0, repeats=1, threads=1)
    assert not busy()
    with pytest.raises(Cancelled, match="calibration cancelled"):
        calibrate(seconds=1, cancel=lambda: True, threads=1)
    assert not busy()


def test_a_sweep_ends_at_a_refused_batch_but_any_other_error_passes_through():
    report = core.analyze("mnist_cnn", batch_size=1)
    rows = throughput_vs_batch(tiny(), (3, 2, 2), [1, 2], report=report, available_bytes=1, warmup=0, repeats=1,
                               threads=1)
    assert rows == [{"batch_size": 1, "refused": rows[0]["refused"]}] and "memory model" in rows[0]["refused"]
    with pytest.raises(Cancelled):
        throughput_vs_batch(tiny(), (3, 2, 2), [1, 2], cancel=lambda: True, warmup=0, repeats=1, threads=1)
    with pytest.raises(CalcError, match="module failed"):            # not a refusal: no row, the error
        throughput_vs_batch(tiny(), (4, 2, 2), [1], warmup=0, repeats=1, threads=1)


def test_timing_several_networks_keeps_refusals_as_rows_and_passes_a_stop_through(monkeypatch):
    import core.bridge.memory as memory

    monkeypatch.setattr(memory, "available_memory", lambda device="cpu": 1)        # every network refused
    rows = bm.time_networks(["mnist_cnn"], warmup=0, repeats=1, threads=1)
    assert rows[0]["network"] == "mnist_cnn" and "memory model" in rows[0]["refused"]
    monkeypatch.setattr(memory, "available_memory", lambda device="cpu": None)     # unknown: nothing refused
    with pytest.raises(Cancelled):
        bm.time_networks(["mnist_cnn"], cancel=lambda: True, warmup=0, repeats=1, threads=1)
    assert not busy()


# an error's text tested to decide what to do: `"x" in str(e)`, `"x" in e.reason`, `str(err).startswith(...)`
_TEXT_TEST = re.compile(r"""["'][^"']*["']\s+(?:not\s+)?in\s+(?:str\(\s*(?:e|err|error|exc|ex)\s*\)|"""
                        r"""(?:e|err|error|exc|ex)\.(?:reason|args))|"""
                        r"""str\(\s*(?:e|err|error|exc|ex)\s*\)\.(?:startswith|endswith)""")


def test_no_code_decides_by_an_error_messages_text():
    """Tests may check the message a user reads; the engine and the app must catch by type."""
    found = []
    for folder in ("core", "ui", "views", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _TEXT_TEST.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "catch a CalcError subclass (core/errors.py) instead:\n" + "\n".join(found)
