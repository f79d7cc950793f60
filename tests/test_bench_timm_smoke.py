"""The timm benchmark runs on its quick subset (so it cannot rot) and never rewrites core/timm_models.json then."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


import bench_timm


def test_bench_timm_quick(capsys):
    before = bench_timm.timm_models.DATA.read_bytes()
    out = bench_timm.main(["--quick"])
    assert bench_timm.timm_models.DATA.read_bytes() == before         # a quick run writes no data file
    rows = out["rows"]
    assert [r["name"] for r in rows] == list(bench_timm.QUICK_MODELS)
    for r in rows:
        assert r["status"] in ("exact", "opaque", "differs", "fails"), r
        if r["status"] != "fails":
            # the reference is PyTorch's own count on the same architecture; "exact" means core agrees with it
            assert r["ref_params"] > 0 and r["ref_macs"] > 0 and r["allocated"] == 0
            assert (r["status"] == "exact") == (r["params"] == r["ref_params"] and r["macs"] == r["ref_macs"]
                                                and r["output"] == r["ref_output"] and not r["opaque"])
    text = capsys.readouterr().out
    assert text == bench_timm.markdown(out) + "\n"
    assert "| family (timm module) | models | exact |" in text and "| **all** | **3** |" in text


def test_markdown_lists_every_model_that_is_not_exact():
    rows = [{"name": "a", "family": "f", "status": "exact", "allocated": 0},
            {"name": "b", "family": "f", "status": "fails", "reason": "x | y", "allocated": 0},
            {"name": "c", "family": "g", "status": "opaque", "opaque": ["nn.Foo"], "params": 1, "ref_params": 1,
             "macs": 2, "ref_macs": 2, "output": [3], "ref_output": [3], "allocated": 0}]
    text = bench_timm.markdown({"timm": "0", "rows": rows, "seconds": 3.0, "all": False})
    assert "**1 of 3 exact (33.3%)**, 1 with opaque nodes, 0 differ, 1 fail" in text
    assert "| b | fails | x \\| y |" in text
    assert "| c | opaque | no cost rule for `nn.Foo`; params and MACs equal |" in text
    assert "| f | 2 | 1 | 0 | 0 | 1 | 50.0% |" in text


def test_the_data_file_is_what_dump_writes():
    """core/timm_models.json is in the writer's one-line-per-model form and reads back to the same document."""
    import json

    text = bench_timm.timm_models.DATA.read_text(encoding="utf-8")
    doc = json.loads(text)
    assert bench_timm.dump(doc) == text
    assert len(text.splitlines()) == len(doc["models"]) + 2
