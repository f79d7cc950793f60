"""Shared test setup: the repository root on sys.path, and ``--update-golden`` to rewrite tests/golden/*.txt."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

# The user's own devices (~/.cnn_calc) must not leak into tests: point the engine at an empty home, before core
# is imported, and let subprocesses (the CLI tests) inherit it.
os.environ["CNN_CALC_HOME"] = tempfile.mkdtemp(prefix="cnn_calc_test_home_")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden per-layer tables in tests/golden/ from the engine "
                          "(check every changed row by hand before committing)")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden"))
