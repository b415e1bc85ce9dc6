"""Lucid's metrics in every run's summary (issue 48 item 5): per-VC queueing delay on clusters split
into VCs, large vs small jobs (Table 5's ``gpu_num > 8`` split), equal to hand-computed values on a
hand-sized job log; runs without VCs have no ``per_vc`` and keep every earlier key; ``schedopt
report`` draws a JCT CDF and queueing delay per VC from job-log runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from schedopt.cli import app
from schedopt.experiments.page import write_report
from simulator.example_table import example_table
from simulator.generator import generate_trace
from simulator.outcomes import OPTIONAL_KEYS, PER_VC_KEYS, RUN_KEYS, SETTING_KEYS, SUMMARY_KEYS
from simulator.simulate import simulate, simulate_job_log

#: VC -> nodes of 8 GPUs; c holds no job
LAYOUT = {"a": 1, "b": 2, "c": 1, "d": 2}
#: (arrival, duration, GPUs, VC) and their fifo-helios (start, finish), as tests/test_helios_fifo.py's hand trace
JOBS = [(0, 100, 4, "a"), (0, 50, 6, "d"), (1, 50, 6, "d"), (2, 10, 4, "d"), (5, 30, 16, "b"),
        (6, 20, 1, "b"), (10, 50, 8, "a"), (20, 10, 2, "a"), (40, 100, 12, "b"), (41, 5, 4, "b"),
        (42, 1, 2, "a")]
SCHEDULE = [(0, 100), (0, 50), (1, 51), (50, 60), (5, 35), (35, 55), (100, 150), (150, 160), (40, 140),
            (55, 60), (150, 151)]
#: by hand from SCHEDULE: queueing delays a: 0 90 130 108, b: 0 29 0 14, d: 0 0 48; JCTs a: 100 140 140 109,
#: b: 30 49 100 19, d: 50 50 58; p99.9 of n sorted values at (n - 1) 0.999, interpolated linearly
PER_VC = {"a": (4, 4, 122.25, 82.0, 130 - 22 * 0.003), "b": (4, 4, 49.5, 10.75, 29 - 15 * 0.003),
          "c": (0, 0, math.nan, math.nan, math.nan), "d": (3, 3, 158 / 3, 16.0, 48 - 48 * 0.002)}
#: large (> 8 GPUs): jobs 4 and 8; small: the other nine
SPLIT = {"large_jobs": 2, "small_jobs": 9, "average_jct_large": 65.0, "average_jct_small": 715 / 9,
         "queueing_delay_mean_large": 0.0, "queueing_delay_mean_small": 419 / 9}
#: SUMMARY_KEYS before the Lucid split was added
EARLIER = SUMMARY_KEYS[:SUMMARY_KEYS.index("large_jobs")]


def helios_log(folder, jobs=JOBS, layout=LAYOUT):
    """``jobs`` as a Helios job log (submit times as date-times) and ``layout`` as a VC config."""
    log, config = folder / "cluster_log.csv", folder / "vc_config.csv"
    log.write_text("job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration\n"
                   + "".join(f"j{i},u{i % 3},{vc},job{i},{g},4,1,COMPLETED,2020-09-01 00:{a // 60:02d}:{a % 60:02d},"
                             f",,{d}\n" for i, (a, d, g, vc) in enumerate(jobs)))
    config.write_text("vc,node num\n" + "".join(f"{vc},{n}\n" for vc, n in layout.items()))
    return log, config


def close(got, want):
    return (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-12, abs=1e-9)


def test_per_vc_and_size_split_equal_the_hand_computed_values(tmp_path):
    result = simulate_job_log(*helios_log(tmp_path))
    jobs, s = result.jobs, result.summary
    assert list(zip(jobs["start"].tolist(), jobs["finish"].tolist())) == SCHEDULE
    assert list(s["per_vc"]) == list(LAYOUT)
    for vc, want in PER_VC.items():
        assert list(s["per_vc"][vc]) == list(PER_VC_KEYS)
        assert all(close(s["per_vc"][vc][k], w) for k, w in zip(PER_VC_KEYS, want, strict=True)), (vc, s["per_vc"][vc])
    assert all(close(s[k], w) for k, w in SPLIT.items()), {k: s[k] for k in SPLIT}
    # the run-wide figures are the per-VC ones pooled
    assert s["queueing_delay_mean"] == pytest.approx(419 / 11) and s["average_jct"] == pytest.approx(845 / 11)
    keys = list(s)
    assert keys.index("per_vc") == keys.index(SUMMARY_KEYS[-1]) + 1
    written = json.loads(result.files()["summary.json"])
    assert written["per_vc"]["a"]["queueing_delay_mean"] == 82.0 and math.isnan(written["per_vc"]["c"]["average_jct"])


@pytest.mark.parametrize("policy", ["fifo", "edf"])
def test_runs_without_vcs_keep_every_earlier_key_and_have_no_per_vc(policy):
    trace = generate_trace(example_table(), 12, seed=3, lam=300.0, multi_gpu=True)
    result = simulate(trace, policy=policy, cluster="v100=8", gpus_per_server=4, deadlines="uniform:0.5:1.5")
    s, jobs = result.summary, result.jobs
    assert not set(OPTIONAL_KEYS) & set(s)
    assert list(s) == [*RUN_KEYS, *SUMMARY_KEYS, *SETTING_KEYS, "notes"]
    assert list(s)[len(RUN_KEYS):len(RUN_KEYS) + len(EARLIER)] == list(EARLIER)
    large = jobs["requested_gpus"] > 8
    done, started = jobs["state"] == "finished", np.isfinite(jobs["queueing_delay"])
    assert s["large_jobs"] == int(large.sum()) and s["small_jobs"] == int((~large).sum())
    assert s["average_jct_small"] == pytest.approx(jobs["jct"][done & ~large].mean())
    assert s["queueing_delay_mean_small"] == pytest.approx(jobs["queueing_delay"][started & ~large].mean())
    assert math.isnan(s["average_jct_large"]) == (not (done & large).any())


def test_report_draws_the_jct_cdf_and_queueing_delay_per_vc_of_job_log_runs(tmp_path):
    log, config = helios_log(tmp_path)
    wide = tmp_path / "wide.csv"
    wide.write_text("vc,node num\na,2\nb,2\nc,1\nd,3\n")
    for name, vcs in (("narrow", config), ("wide", wide)):
        res = CliRunner().invoke(app, ["simulate", "--trace", str(log), "--vc-config", str(vcs), "--out",
                                       str(tmp_path / name), "--no-progress"])
        assert res.exit_code == 0, res.output
    summaries = [json.loads((tmp_path / n / "summary.json").read_text()) for n in ("narrow", "wide")]
    assert summaries[0]["per_vc"]["a"]["queueing_delay_mean"] == 82.0
    assert summaries[1]["per_vc"]["a"]["queueing_delay_mean"] < 82.0  # two nodes in a: less waiting
    names = {p.name for p in write_report([tmp_path / "narrow", tmp_path / "wide"], tmp_path / "report")}
    assert {"jct_cdf.png", "queueing_per_vc.png", "report.html"} <= names
    page = (tmp_path / "report" / "report.html").read_text()
    assert 'id="queueing_per_vc"' in page and "fifo-helios / highs (narrow)" in page
    assert "p99.9 queueing (h)" in page and "avg JCT &gt; 8 GPUs (h)" in page and "avg JCT ≤ 8 GPUs (h)" in page
    plain = CliRunner().invoke(app, ["simulate", "--generate", "8", "--cluster", "v100=4,p100=4,k80=4", "--policy",
                                     "fifo", "--out", str(tmp_path / "plain"), "--no-progress"])
    assert plain.exit_code == 0, plain.output
    names = {p.name for p in write_report([tmp_path / "plain"], tmp_path / "plain_report")}
    assert "jct_cdf.png" in names and "queueing_per_vc.png" not in names
    page = (tmp_path / "plain_report" / "report.html").read_text()
    assert "avg queueing (h)" in page and "8 GPUs" not in page  # no large job: no split columns
