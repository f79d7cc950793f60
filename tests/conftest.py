"""Shared test setup: an empty user home, the marks that split the suite, and ``--update-golden``.

Marks come from what a test module imports, so a new test file is sorted without being listed anywhere:

- ``torch``: torch or torchvision (directly, or through tests/torch_ref.py);
- ``app``: Streamlit (AppTest, or tests/apptest_ref.py);
- ``browser``: Playwright (directly, or through tests/browser_ref.py);
- ``benchmark``: a script from benchmarks/;

and ``slow`` goes to every test with one of them, so ``pytest -m "not slow"`` is the fast pure-core subset. A test that
imports one of these only inside its body carries the mark itself (``@pytest.mark.torch``). The repository root is on
sys.path through ``pythonpath`` in pyproject.toml.
"""

from __future__ import annotations

import os
import sys
import tempfile
import types
from functools import cache
from pathlib import Path

import pytest

# The user's own devices (~/.cnn_calc) must not leak into tests: point the engine at an empty home, before core
# is imported, and let subprocesses (the CLI tests) inherit it.
os.environ["CNN_CALC_HOME"] = tempfile.mkdtemp(prefix="cnn_calc_test_home_")

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# top-level module a test module imports → the mark it gets
IMPORT_MARKS = {"torch": "torch", "torchvision": "torch", "torch_ref": "torch", "streamlit": "app",
                "apptest_ref": "app", "playwright": "browser", "browser_ref": "browser"}
HEAVY = ("torch", "app", "browser", "benchmark")


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files in tests/golden/ from the engine "
                          "(check every changed line by hand before committing)")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def golden(update_golden):
    """``golden(path, text)``: with ``--update-golden`` write ``text`` to ``path``; always assert they are equal."""

    def check(path: Path, text: str) -> None:
        if update_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"{path} is missing; run pytest --update-golden and check every line by hand"
        assert text == path.read_text(encoding="utf-8"), \
            f"the output differs from {path}; if the change is intended, run pytest --update-golden and review the diff"

    return check


def _origin(value) -> tuple[str, str | None]:
    """(top-level module name, file) of where a module global comes from."""
    name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
    if not isinstance(name, str):
        return "", None
    module = value if isinstance(value, types.ModuleType) else sys.modules.get(name)
    return name.split(".")[0], getattr(module, "__file__", None)


@cache
def _module_marks(module: types.ModuleType) -> frozenset[str]:
    marks = set()
    for value in vars(module).values():
        top, file = _origin(value)
        if top in IMPORT_MARKS:
            marks.add(IMPORT_MARKS[top])
        if file and Path(file).resolve().parent == BENCHMARKS:
            marks.add("benchmark")
    return frozenset(marks)


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = getattr(item, "module", None)
        for mark in sorted(_module_marks(module)) if module is not None else ():
            item.add_marker(mark)
        if any(item.get_closest_marker(m) for m in HEAVY):
            item.add_marker("slow")

