"""Golden files of what users read: the CLI table (``python -m core analyze NET``), the CLI estimate (``python -m core
estimate``) and the Layers page's Markdown report (``ui.text.markdown_report`` with the PALEO lines of the default
device), for a few networks.

Any change to a number, a column or a word fails here; ``pytest --update-golden`` rewrites tests/golden/cli/ and
tests/golden/markdown/, and the diff is then reviewed like code. Separately, the per-layer rows of each printed table
add up to the totals printed with them (parsed from the text, not read from the Report).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import core
from core.api import estimate
from core.cli import main
from ui.text import markdown_report

GOLDEN = Path(__file__).resolve().parent / "golden"
NETWORKS = ["mnist_cnn", "resnet18", "vgg16", "mobilenet_v2"]
DEVICE = "v100-sxm2"        # the app's default device (ui.state.DEFAULTS)
COLUMNS = ("params", "MACs", "FLOPs fwd", "FLOPs bwd")


def cli_table(net: str, capsys) -> str:
    assert main(["analyze", net]) == 0
    return capsys.readouterr().out


def report_markdown(net: str) -> str:
    report = core.analyze(net)
    return markdown_report(report, estimate(report, DEVICE))


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_cli(text: str) -> tuple[list[tuple[int, ...]], tuple[int, ...], dict[str, str]]:
    """(per-layer numbers, the Total row's numbers, the summary lines by label) of a printed CLI table: header, rows and
    the Total row sit between rules of '─'; each numeric column is right-aligned and the last four are numbers."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line and set(line) == {"─"}]
    assert len(rules) == 4, text
    rows = [tuple(_int(c) for c in line.split()[-4:]) for line in lines[rules[1] + 1:rules[2]]]
    (total_line,) = lines[rules[2] + 1:rules[3]]
    assert total_line.startswith("Total")
    summary = dict(line.split(":", 1) for line in lines[rules[3] + 1:])
    return rows, tuple(_int(c) for c in total_line.split()[-4:]), {k: v.strip() for k, v in summary.items()}


def parse_markdown(text: str) -> tuple[list[tuple[int, ...]], dict[str, str]]:
    """(per-layer numbers, the totals table by label) of a Markdown report."""
    tables: list[list[list[str]]] = []
    for block in re.split(r"\n\s*\n", text):
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines() if line.startswith("|")]
        if rows:
            tables.append([r for r in rows if not set("".join(r)) <= set("-:")])
    totals, layers = tables
    assert totals[0] == ["total", "value"] and layers[0][:3] == ["layer", "op", "output"]
    return [tuple(_int(c) for c in r[3:7]) for r in layers[1:]], {k: v for k, v in totals[1:]}


def column_sums(rows: list[tuple[int, ...]]) -> tuple[int, ...]:
    return tuple(sum(col) for col in zip(*rows))


@pytest.mark.parametrize("net", NETWORKS)
def test_cli_table_is_golden(net, capsys, golden):
    golden(GOLDEN / "cli" / f"{net}.txt", cli_table(net, capsys))


@pytest.mark.parametrize("net", NETWORKS)
def test_markdown_report_is_golden(net, golden):
    golden(GOLDEN / "markdown" / f"{net}.md", report_markdown(net))


ESTIMATES = {       # golden name → `python -m core estimate` arguments: a prediction, PALEO on a CPU, the long form
    "resnet50_t4_b64": ["resnet50", "--device", "t4", "--batch", "64"],
    "vgg16_epyc-9654": ["vgg16", "--device", "epyc-9654"],
    "resnet18_v100_explain": ["resnet18", "--device", "v100-sxm2", "--batch", "8", "--explain"],
}


@pytest.mark.parametrize("name", ESTIMATES)
def test_cli_estimate_is_golden(name, capsys, golden):
    assert main(["estimate", *ESTIMATES[name]]) == 0
    golden(GOLDEN / "estimate" / f"{name}.txt", capsys.readouterr().out)


@pytest.mark.parametrize("net", NETWORKS)
def test_cli_rows_add_up_to_the_printed_totals(net, capsys):
    rows, total, summary = parse_cli(cli_table(net, capsys))
    assert len(rows) == len(core.analyze(net).layers)
    assert column_sums(rows) == total
    params, macs, flops, bwd = total
    assert summary["Parameters"].startswith(f"{params:,} (")
    assert summary["Forward"] == f"{macs / 1e9:,.3f} GMACs = {flops / 1e9:,.3f} GFLOPs"
    assert summary["Backward"].startswith(f"{bwd / 1e9:,.3f} GFLOPs ")


@pytest.mark.parametrize("net", NETWORKS)
def test_markdown_rows_add_up_to_the_printed_totals(net):
    rows, totals = parse_markdown(report_markdown(net))
    assert len(rows) == len(core.analyze(net).layers)
    labels = ("parameters", "forward MACs", "forward FLOPs", "backward FLOPs")
    assert column_sums(rows) == tuple(_int(totals[k]) for k in labels)


def test_the_parsers_catch_a_row_that_does_not_add_up(capsys):
    """A table whose rows do not sum to its total is seen as such (the checks above cannot pass vacuously)."""
    text = cli_table("mnist_cnn", capsys).replace("18,496", "18,497", 1)
    rows, total, _ = parse_cli(text)
    assert column_sums(rows)[0] == total[0] + 1
    md_rows, md_totals = parse_markdown(report_markdown("mnist_cnn").replace("| 18,496 |", "| 18,497 |", 1))
    assert column_sums(md_rows)[0] == _int(md_totals["parameters"]) + 1
