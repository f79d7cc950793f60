"""`python -m core estimate --workers …` (issue 42): the data-parallel options reach core.estimate, the text says what
each term adds (checked against core's own numbers, not against printed ones), the typical error of the scaling
efficiency is shown or said to be unmeasured, and a bad value is one line naming its field."""

from __future__ import annotations

import json

import pytest

from core import cli, cli_text
from core.api import estimate
from core.choices import COMM_MODELS, INPUT_PIPELINES, REDUCE_DTYPES
from core.cli_text import _brief, _seconds

BASE = ["estimate", "resnet50", "--device", "v100-sxm2", "--batch", "64"]
DP = [*BASE, "--workers", "8", "--link", "nvlink2-v100"]


def run(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def line(text: str, head: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith(head))


def test_the_options_parse_with_their_choices_and_defaults():
    args = cli._parser().parse_args(DP + ["--comm-model", "paleo", "--bucket-mb", "50", "--reduce-dtype", "fp16",
                                          "--input-pipeline", "dali", "--cpu-cores", "16", "--nodes", "2",
                                          "--node-link", "ib-hdr", "--nics", "4"])
    assert (args.comm_model, args.bucket_mb, args.reduce_dtype, args.input_pipeline, args.cpu_cores, args.nodes,
            args.node_link, args.nics) == ("paleo", 50.0, "fp16", "dali", 16, 2, "ib-hdr", 4)
    plain = cli._parser().parse_args(BASE)
    assert (plain.comm_model, plain.bucket_mb, plain.reduce_dtype, plain.input_pipeline, plain.cpu_cores,
            plain.nodes, plain.node_link, plain.nics) == (COMM_MODELS[0], 25.0, REDUCE_DTYPES[0],
                                                          INPUT_PIPELINES[0], None, 1, None, 1)


def test_ddp_line_says_each_term_as_core_computes_it(capsys):
    code, out, _ = run(capsys, *DP)
    assert code == 0
    dp = estimate("resnet50", "v100-sxm2", batch_size=64, workers=8, link="nvlink2-v100").data_parallel
    text = line(out, "Data parallel:")
    assert text.startswith("Data parallel:  8 workers over NVLink 2")
    assert (f"DDP: all-reduce {_seconds(dp.allreduce_s)} in {len(dp.buckets)} buckets ({_seconds(dp.overlapped_s)} "
            f"overlapped with the backward, {_seconds(dp.exposed_s)} exposed)") in text
    assert "no input wait (synthetic data)" in text
    assert "All-reduce:" not in out                                 # the old single line is gone
    lines = out.splitlines()                                        # the answer comes before the model's line
    assert lines.index(text) < lines.index(line(out, "Time model:"))
    assert line(out, "Scaling error:") == lines[lines.index(text) + 1]


def test_explain_adds_the_bandwidth_its_source_and_the_terms(capsys):
    _, out, _ = run(capsys, *DP, "--explain")
    dp = estimate("resnet50", "v100-sxm2", batch_size=64, workers=8, link="nvlink2-v100").data_parallel
    assert dp.bandwidth_from in line(out, "Bandwidth:")
    assert line(out, "Terms:").endswith("; ".join(dp.terms))
    _, short, _ = run(capsys, *DP)
    assert "Bandwidth:" not in short and "Terms:" not in short


def test_nodes_name_the_network_and_input_wait_is_a_term(capsys):
    code, out, _ = run(capsys, *BASE, "--workers", "16", "--link", "nvlink2-v100", "--nodes", "2", "--node-link",
                       "ib-hdr", "--nics", "4", "--input-pipeline", "cpu", "--cpu-cores", "1")
    assert code == 0
    est = estimate("resnet50", "v100-sxm2", batch_size=64, workers=16, link="nvlink2-v100", nodes=2,
                   node_link="ib-hdr", nics=4, input_pipeline="cpu", cpu_cores=1)
    dp = est.data_parallel
    assert dp.input_wait_s > 0                 # 8 GPUs × 64 images on 1 core: the host is far behind the GPUs
    text = line(out, "Data parallel:")
    assert "16 workers on 2 nodes of 8" in text and "4 × InfiniBand HDR" in text
    assert f"input wait {_seconds(dp.input_wait_s)} (cpu decoding on 1 core per node)" in text
    assert f"{_seconds(est.totals['training_step_s'])}" in line(out, "Training step:")


def test_paleo_says_what_paleo_adds(capsys):
    _, out, _ = run(capsys, *DP, "--comm-model", "paleo")
    dp = estimate("resnet50", "v100-sxm2", batch_size=64, workers=8, link="nvlink2-v100",
                  comm_model="paleo").data_parallel
    text = line(out, "Data parallel:")
    assert f"PALEO: all-reduce {_seconds(dp.allreduce_s)} after the backward" in text and "datasheet rate" in text
    assert "PALEO" in line(out, "Scaling error:")


def test_one_worker_reading_real_data_says_its_input_wait(capsys):
    _, out, _ = run(capsys, *BASE, "--input-pipeline", "dali", "--cpu-cores", "1")
    dp = estimate("resnet50", "v100-sxm2", batch_size=64, input_pipeline="dali", cpu_cores=1).data_parallel
    assert line(out, "Input:").startswith(f"Input:          {_brief(dp.input_wait_s)} waiting for the host")
    assert line(out, "Input:").endswith("(dali decoding on 1 core)")
    assert "Data parallel:" not in out


@pytest.mark.parametrize("held_out, expected", [
    ({"median_points": None, "p90_points": None, "signed_median_points": None, "rows": 0, "basis": "x"},
     "Scaling error:  efficiency's typical error not yet measured"),
    ({"median_points": 3.25, "p90_points": 9.5, "signed_median_points": -1.0, "rows": 40, "basis": "held out"},
     "Scaling error:  efficiency typically ±3.2 points, 1 in 10 off by more than 9.5 (held out by source, 40 rows)"),
])
def test_the_typical_error_is_shown_or_said_to_be_unmeasured(monkeypatch, capsys, held_out, expected):
    monkeypatch.setattr(cli_text, "typical_error", lambda: held_out)
    _, out, _ = run(capsys, *DP)
    assert line(out, "Scaling error:") == expected
    _, long, _ = run(capsys, *DP, "--explain")
    assert line(long, "Scaling error:").startswith(expected.rstrip(")"))
    if held_out["median_points"] is not None:
        assert "signed median -1.0 points" in line(long, "Scaling error:")


def test_one_worker_json_is_unchanged(capsys):
    _, out, _ = run(capsys, *BASE, "--json")
    assert "data_parallel" not in json.loads(out)
    _, out, _ = run(capsys, *DP, "--json")
    dp = estimate("resnet50", "v100-sxm2", batch_size=64, workers=8, link="nvlink2-v100").data_parallel
    assert json.loads(out)["data_parallel"] == json.loads(json.dumps(dp.to_dict()))


@pytest.mark.parametrize("extra, field", [
    (["--nodes", "3"], "nodes"),                                   # 8 workers do not split over 3 nodes
    (["--nodes", "0"], "nodes"),
    (["--nodes", "2"], "node_link"),                               # several nodes need the network between them
    (["--input-pipeline", "cpu", "--cpu-cores", "0"], "cpu_cores"),
    (["--input-pipeline", "cpu"], "cpu_cores"),                    # a real-data pipeline needs the host's cores
    (["--nics", "0", "--nodes", "2", "--node-link", "ib-hdr"], "nics"),
    (["--bucket-mb", "0"], "bucket_mb"),
    (["--nodes", "two"], "--nodes"),                               # argparse's own check
    (["--comm-model", "nccl"], "--comm-model"),
])
def test_a_bad_value_is_one_line_naming_its_field(capsys, extra, field):
    code, out, err = run(capsys, *DP, *extra)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err and field in err, err
