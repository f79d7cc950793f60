"""The README stays short, true and linked (issue 43): at most 250 lines, every relative link in it and in docs/*.md
points at a file (and heading) that exists, its GPU accuracy line quotes core/gpu_params.json's held-out figures, and
it holds both set-up commands verbatim, the test command as .ci/run runs it. Reads text only: no torch, no streamlit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_LINES = 250
RUN_APP = "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/streamlit run app.py"

FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`+[^`\n]*`+")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where a ']( … )' is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)        # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path) -> list[str]:
    bad = []
    for target in LINK.findall(prose(path.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):          # http:, https:, mailto: …
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    return bad


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines; at most {MAX_LINES}: move the detail to docs/"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_slug_is_githubs():
    assert slug("Set up (fresh Linux, Python 3.11)") == "set-up-fresh-linux-python-311"
    assert slug("The GPU model (`predicted`)") == "the-gpu-model-predicted"
    assert slug("Counting accuracy: params and multiply-adds against torchvision's published figures") == \
        "counting-accuracy-params-and-multiply-adds-against-torchvisions-published-figures"


def percent(x: float) -> str:
    """A fraction as the README prints it: 0.14932 → '14.9'."""
    return f"{100 * x:.1f}"


def test_gpu_accuracy_quotes_gpu_params():
    loso = json.loads((ROOT / "core" / "gpu_params.json").read_text())["errors"]["loso"]
    rows = [line for line in README.read_text().splitlines() if line.startswith("| GPU time |")]
    assert len(rows) == 1, "the accuracy table needs one row starting '| GPU time |'"
    median = re.search(r"median (\d+(?:\.\d+)?) %", rows[0])
    p90 = re.search(r"p90 (\d+(?:\.\d+)?) %", rows[0])
    assert median and p90, rows[0]
    assert (median.group(1), p90.group(1)) == (percent(loso["median"]), percent(loso["p90"])), \
        "README's GPU line is stale: core/gpu_params.json's errors.loso says " \
        f"median {percent(loso['median'])} %, p90 {percent(loso['p90'])} %"


def ci_command() -> str:
    """The command .ci/run runs: its last line that is not a comment, `set …` or `cd …`."""
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [ln for ln in lines if ln and not ln.startswith(("#", "set ", "cd "))]
    assert commands, ".ci/run runs no command"
    return re.sub(r"^cd [^;&]+(;|&&)\s*", "", commands[-1])


def code_lines(text: str) -> set[str]:
    """Every line inside a fenced code block, stripped."""
    return {ln.strip() for m in FENCE.finditer(text) for ln in m.group(0).splitlines()[1:-1]}


@pytest.mark.parametrize("command", [RUN_APP, ci_command()], ids=["run the app", "test suite (.ci/run)"])
def test_setup_commands_verbatim(command):
    assert command in code_lines(README.read_text()), f"README.md has no code line {command!r}"
