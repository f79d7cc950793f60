"""The house rules, read from the source: no import circles, modules of one idea, docstrings that state the model.

Imports are read with ``ast`` wherever they stand (module level, inside a function, under ``TYPE_CHECKING``): an
import moved into a function is still an edge. ``from pkg import name`` is an edge to ``pkg.name`` where that is a
module of ours, else to ``pkg``. A package's ``__init__`` re-exporting its modules is an edge like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "ui", "views", "benchmarks")
MAX_LINES = 600
MAX_TEST_LINES = 800        # test modules: one per module under test, split where they grow past this
MAX_DOCSTRING = 25
# Modules allowed over MAX_LINES, each with its reason (said in the issue note too).
LONG = {}


def modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for p in sorted((ROOT / top).rglob("*.py")):
            parts = p.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = p
    for p in sorted(ROOT.glob("*.py")):
        out[p.stem] = p
    return out


def _targets(mod: str, path: Path, node: ast.AST, known: dict) -> set[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:       # a name inside a module: the module
            name = name.rpartition(".")[0]
        if name and name != mod:
            out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph = {}
    for mod, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[mod] = set().union(*(_targets(mod, path, n, known) for n in ast.walk(tree)
                                   if isinstance(n, (ast.Import, ast.ImportFrom))))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_circles_are_found():
    # a → b → c → a and d alone: one circle of three, so the check can fail
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_function_level_import_is_an_edge(tmp_path):
    src = "def f():\n    from .paleo import Term\n    import core.units\n"
    tree = ast.parse(src)
    known = {"core.gpu_model": tmp_path / "gpu_model.py", "core.paleo": tmp_path / "paleo.py",
             "core.units": tmp_path / "units.py", "core": tmp_path / "__init__.py"}
    got = set().union(*(_targets("core.gpu_model", known["core.gpu_model"], n, known) for n in ast.walk(tree)
                        if isinstance(n, (ast.Import, ast.ImportFrom))))
    assert got == {"core.paleo", "core.units"}


def test_no_import_circles():
    found = circles(import_graph())
    assert not found, "import circles (each line one strongly connected set of modules):\n" + \
        "\n".join(" ↔ ".join(c) for c in found)


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_size_and_docstring(name):
    path = modules()[name]
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    if name not in LONG:
        assert lines <= MAX_LINES, f"{path.relative_to(ROOT)}: {lines} lines (at most {MAX_LINES}); split it by idea"
    doc = ast.get_docstring(ast.parse(text), clean=False) or ""
    assert len(doc.splitlines()) <= MAX_DOCSTRING, \
        f"{path.relative_to(ROOT)}: module docstring of {len(doc.splitlines())} lines (at most {MAX_DOCSTRING}); " \
        "state the model here, keep its history in docs/"


@pytest.mark.parametrize("path", sorted((ROOT / "tests").glob("*.py")), ids=lambda p: p.name)
def test_test_module_size(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_TEST_LINES, f"tests/{path.name}: {lines} lines (at most {MAX_TEST_LINES}); split it"
