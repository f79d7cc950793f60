"""docs/example.ipynb runs from top to bottom and prints what the API says.

The notebook is executed with nbclient in a kernel started with this interpreter (``sys.executable``, so the venv's
even when CI runs ``.venv/bin/python -m pytest`` without ``.venv/bin`` on PATH), from docs/ as Jupyter would, with
Jupyter's and IPython's own files in a temporary folder. Any cell error fails the test. Its printed totals are
checked against ``core.analyze`` here (not against numbers copied from a printout) and two of its figures against
hand arithmetic.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from core import analyze, estimate

DOCS = Path(__file__).resolve().parents[1] / "docs"
NOTEBOOK = DOCS / "example.ipynb"
KERNEL = "cnn-calc-test-venv"
# run after the notebook, in its kernel: which interpreter ran it, and whether anything pulled in torch
PROBE = "import json, sys\nprint(json.dumps({'prefix': sys.prefix, 'torch': 'torch' in sys.modules}))"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook after a run (cells by id), the probe's answer and the files in docs/ before and after."""
    tmp = tmp_path_factory.mktemp("notebook")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_RUNTIME_DIR", str(tmp / "runtime"))      # the kernel's connection file
        mp.setenv("IPYTHONDIR", str(tmp / "ipython"))               # IPython's profile folder
        # a kernelspec whose argv is this interpreter: neither PATH's `python` nor a user's python3 spec
        write_kernel_spec(tmp / "kernels" / KERNEL)
        specs = KernelSpecManager(kernel_dirs=[str(tmp / "kernels")])
        km = KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(PROBE, id="test-probe"))
        before = sorted(p.name for p in DOCS.iterdir())
        # a failing cell's traceback without terminal colours, readable in pytest's report
        NotebookClient(nb, km=km, timeout=120, resources={"metadata": {"path": str(DOCS)}},
                       extra_arguments=["--InteractiveShell.colors=nocolor"]).execute()
        after = sorted(p.name for p in DOCS.iterdir())
    cells = {c.get("id"): c for c in nb.cells}
    probe = json.loads(_text(cells.pop("test-probe")))
    return cells, probe, before, after


def _text(cell) -> str:
    """What a code cell showed as text: its printed streams and the plain-text form of its results."""
    out = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            out.append(o.text)
        elif "data" in o:
            out.append(o.data.get("text/plain", ""))
    return "".join(out)


def test_stored_without_outputs():
    """Committed clean: no outputs, no execution counts (outputs would go stale unchecked, and diffs stay small)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    for c in code:
        assert c.outputs == [] and c.execution_count is None, f"cell {c.id} was saved with its outputs"


def test_runs_in_this_interpreter_without_torch_or_stray_files(executed):
    cells, probe, before, after = executed
    assert probe["prefix"] == sys.prefix       # the venv's Python, not PATH's
    assert probe["torch"] is False             # the notebook promises it needs no PyTorch
    assert after == before                     # nothing written beside the notebook


def test_totals_printed_are_the_api_totals(executed):
    cells, *_ = executed
    text = _text(cells["totals"])
    t = analyze("resnet50").totals
    for key in ("params", "macs", "flops", "backward_flops", "activation_bytes", "training_bytes"):
        assert f"{t[key]:,}" in text, key
    assert f"= 2 × MACs ({2 * t['macs']:,})" in text            # the convention, 1 MAC = 2 FLOPs
    assert f"+ {t['flops'] - 2 * t['macs']:,} in BatchNorm" in text


def test_memory_over_a_training_step(executed):
    cells, *_ = executed
    r32 = analyze("resnet50", batch_size=32).totals           # its peak and where, and the chart drawn
    assert f"peak {r32['training_bytes']:,} B in {r32['training_peak_at']}" in _text(cells["timeline"])
    assert "vega" in "".join(o.data.get("text/html", "") for o in cells["timeline"].outputs if "data" in o)


def test_hand_arithmetic(executed):
    cells, *_ = executed
    # conv1: 64 filters of 3×7×7 on a 112×112 output at batch 1: 64·112·112 = 802,816 outputs × 3·7·7 = 147 MACs each
    # = 118,013,952 MACs, 236,027,904 FLOPs
    explain = _text(cells["explain"])
    assert "= 118,013,952" in explain and "= 236,027,904" in explain
    # layer1.0.conv2 widened from 64 to 128 filters: params: conv2 +64 filters of 64·3·3 = 36,864; bn2 +2·64 = 128;
    # conv3 reads 64 more channels, 256 filters of 1×1: 256·64 = 16,384; 36,864 + 128 + 16,384 = 53,376.
    # MACs at batch 1 on a 56×56 output: conv2 56·56·64·64·9 = 115,605,504; conv3 56·56·256·64 = 51,380,224;
    # 115,605,504 + 51,380,224 = 166,985,728.
    edited = _text(cells["edit"])
    assert "(+53,376)" in edited and "(+166,985,728)" in edited


def test_estimate_table_and_charts(executed):
    cells, *_ = executed
    table = _text(cells["estimate"])
    gpu = estimate("resnet50", "v100-sxm2", batch_size=32)
    cpu = estimate("resnet50", "ryzen-9-3900x", batch_size=32)
    err = gpu.typical_error
    assert gpu.variant == "predicted" and cpu.variant == "paleo"       # what the notebook's text explains
    for e in (gpu, cpu):
        assert f"{round(1e3 * e.totals['training_step_s'], 2)}" in table
    assert f"{round(1e3 * gpu.bound.totals['training_step_s'], 2)}" in table
    assert f"±{err['median']:.0%}" in table
    # each chart cell drew a chart (Altair's HTML output), not text or an empty spec
    for cid in ("sweep-chart", "roofline", "bars"):
        html = "".join(o.data.get("text/html", "") for o in cells[cid].outputs if "data" in o)
        assert "vega-embed" in html and '"datasets"' in html, cid
    n = sum(1 for row in gpu.layers if row["forward_flops"] > 0 and row["forward_s"] > 0)
    bars = "".join(o.data.get("text/html", "") for o in cells["bars"].outputs if "data" in o)
    assert f"The 15 slowest layers of {n} " in bars
