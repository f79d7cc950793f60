"""The fuzz suite's torch spot-check (issue 15): random sequential networks the engine accepts (conv, pooling,
batch_norm, activations, dropout, adaptive pools, flatten, linear; ``tests/strategies.py``) are built with
``core.bridge.to_torch.to_module`` and run forward; torch must run them, and its output shape and parameter count
must equal ``core.analyze``'s. ``benchmarks/bench_fuzz.py`` checks 500; this checks a few dozen, through Hypothesis.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from hypothesis import HealthCheck, given, settings

import core
import strategies as S
from core.bridge.to_torch import to_module
from torch_ref import n_params

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_fuzz import compare_with_torch

ACCEPTED: list[int] = []


@settings(max_examples=60, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(S.sequential_networks())
def _accepted_networks_agree_with_torch(net):
    try:
        report = core.analyze(net)
    except core.CalcError:
        return
    ACCEPTED.append(1)
    problem = compare_with_torch(net, report, torch, to_module, n_params)
    assert problem is None, f"{problem}\n{S.net_code(net)}"


def test_accepted_sequential_networks_agree_with_torch():
    ACCEPTED.clear()
    _accepted_networks_agree_with_torch()
    assert len(ACCEPTED) >= 24, f"only {len(ACCEPTED)} of the drawn networks were accepted: the generator drifted"
