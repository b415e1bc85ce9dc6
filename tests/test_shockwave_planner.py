"""Shockwave's round planner, its published configurations and its command line."""

import json

import numpy as np
import pytest
from helpers import lp_backends
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators.round_plans import EpochProfile, RoundState
from allocators.shockwave import policy as shockwave_policy
from allocators.shockwave.config import (
    ShockwaveConfig,
    ShockwaveConfigError,
    read_shockwave_config,
)
from allocators.shockwave.policy import Shockwave
from formulations import ProblemError
from formulations.shockwave import (
    LOG_FLOOR,
)

BACKENDS = lp_backends()
EPS = LOG_FLOOR  # 1e-6 added to normalized progress inside the log
PUBLISHED_BASES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def runs(*pieces):
    """``runs((32, 3), (256, 2))`` -> [32, 32, 32, 256, 256]: a schedule written as runs."""
    return [b for b, n in pieces for _ in range(n)]


# --- 6. the round planner ------------------------------------------------------------------------

def hand_profile(jobs: list[tuple[list[int], list[float]]]) -> EpochProfile:
    return EpochProfile.of_jobs(jobs)


#: six trace jobs: (per-epoch batch sizes, durations in s) and their GPU counts
PROFILE = hand_profile([
    (runs((32, 2), (64, 4)), [100.0] * 2 + [50.0] * 4),
    (runs((16, 4)), [200.0] * 4),
    (runs((32, 8)), [90.0] * 8),
    (runs((8, 2), (16, 3)), [300.0] * 2 + [150.0] * 3),
    (runs((64, 3)), [400.0] * 3),
    (runs((128, 6)), [60.0] * 6),
])
WIDTH = np.array([2, 1, 1, 2, 4, 1])


def round_state(r: int, jobs, done, gpus: int = 4, profile: EpochProfile = PROFILE, width=WIDTH,
                admitted=None) -> RoundState:
    jobs = np.asarray(jobs, dtype=np.int64)
    return RoundState(r, 120.0 * r, gpus, 120.0, jobs, np.asarray(width)[jobs], np.asarray(done, dtype=np.int64),
                      profile.epochs[jobs], np.zeros(jobs.size) if admitted is None else np.asarray(admitted),
                      profile)


def check_round(state: RoundState, plan) -> None:
    """The plan's jobs are active, distinct, fit the GPUs, and leave no job out that fits."""
    chosen = plan.jobs
    assert np.isin(chosen, state.jobs).all()
    assert len(set(chosen.tolist())) == chosen.size
    width = dict(zip(state.jobs.tolist(), state.scale_factors.tolist()))
    used = sum(width[j] for j in chosen.tolist())
    assert used <= state.gpus
    idle = state.gpus - used
    left_out = [j for j in state.jobs.tolist() if j not in set(chosen.tolist())]
    assert all(width[j] > idle for j in left_out), (chosen, idle, left_out)


def test_planner_replans_on_arrivals_departures_and_every_few_rounds_of_the_run():
    # re-plans: on a change of the job set, in rounds that are multiples of
    # reoptimize_every (as published: rounds of the run, not rounds since the last solve),
    # and when the window has no plan for the round; otherwise the cached plan
    policy = Shockwave(config=ShockwaveConfig(rounds=10, reoptimize_every=3))
    steps = [
        # (round, active jobs, epochs done, re-plan expected)
        (0, [0, 1, 2], [0, 0, 0], True),       # first call (and 0 % 3 == 0)
        (1, [0, 1, 2], [1, 0, 1], False),      # same jobs: cached plan
        (2, [0, 1, 2], [1, 1, 2], False),
        (3, [0, 1, 2], [2, 1, 2], True),       # 3 % 3 == 0
        (4, [0, 1, 2, 3], [2, 1, 3, 0], True),  # job 3 arrives
        (5, [0, 1, 2, 3], [3, 2, 3, 0], False),
        (6, [0, 1, 2, 3], [3, 2, 4, 0], True),  # 6 % 3 == 0, two rounds after the last solve
        (7, [0, 2, 3], [3, 4, 1], True),       # job 1 leaves
        (8, [0, 2, 3], [4, 4, 1], False),
        (9, [0, 2, 3], [4, 5, 2], True),       # 9 % 3 == 0
        (10, [2, 3, 5], [5, 2, 0], True),      # job 0 leaves and job 5 arrives (same count)
        (11, [2, 3, 5], [5, 2, 1], False),
    ]
    for r, jobs, done, replan in steps:
        state = round_state(r, jobs, done)
        plan = policy.plan(state)
        assert plan.solved is replan, r
        assert (plan.seconds > 0) is replan
        check_round(state, plan)


def test_a_job_behind_its_fair_finish_time_runs_first_in_the_window():
    # G = 2, T = 4, now = 1200 s (round 10); epochs of 60 s, 10 per job. Job A (trace id 0,
    # 1 GPU) was admitted at 0 and has 8 epochs done; job B (id 1, 2 GPUs) arrives now.
    # Share min(1, 2/2) = 1. A's fair finish 0 + (480 + R_A) is far before its projection
    # 1200 + R_A, so rho_A > 1 and pi_A >> 1; B's projection equals its estimate (pi_B = 1).
    # A and B never fit together. A can gain 2 epochs = 1 round: the market gives A 1 round
    # and B 3 (with pi = 1 for both, (0, 4) would win: 2 log 0.8 = -0.446 > log 0.6 = -0.511).
    # Sorted by load, the market puts B's rounds (load 2) before A's (load 1); the
    # reordering MILP moves A's round first.
    profile = hand_profile([(runs((32, 10)), [60.0] * 10), (runs((32, 10)), [60.0] * 10)])
    policy = Shockwave(config=ShockwaveConfig(rounds=4, reoptimize_every=100))
    runs_of = []
    for r in range(10, 14):
        state = round_state(r, [0, 1], [8, 0], gpus=2, profile=profile, width=[1, 2], admitted=[0.0, 1200.0])
        plan = policy.plan(state)
        assert plan.solved is (r == 10)
        check_round(state, plan)
        runs_of.append(plan.jobs.tolist())
    assert runs_of == [[0], [1], [1], [1]]


def test_planner_replans_when_the_window_runs_out():
    policy = Shockwave(config=ShockwaveConfig(rounds=2, reoptimize_every=8))
    solved = [policy.plan(round_state(r, [1, 2, 5], [0, 0, 0])).solved for r in range(5)]
    # rounds 0 and 1 are the first window, 2 and 3 the second, 4 the third
    assert solved == [True, False, True, False, True]


@pytest.mark.parametrize("compat, expected", [(False, None), (True, (0.0, 0.5, 1.0))])
def test_planner_uses_the_published_interpolation_under_gavel_compat(monkeypatch, compat, expected):
    seen = []
    build_market = shockwave_policy.market_program.build
    monkeypatch.setattr(shockwave_policy.market_program, "build", lambda m: seen.append(m) or build_market(m))
    policy = Shockwave(config=ShockwaveConfig(rounds=2, log_bases=(0.0, 0.5, 1.0)), gavel_compat=compat)
    policy.plan(round_state(0, [0, 1], [0, 0]))
    assert seen and all(m.log_bases == expected for m in seen)


def test_planner_with_no_jobs_plans_nothing():
    plan = Shockwave(config=ShockwaveConfig(rounds=2)).plan(round_state(0, [], []))
    assert plan.jobs.size == 0 and not plan.solved


def test_idle_gpus_go_to_the_longest_remaining_unplanned_jobs():
    policy = Shockwave()
    state = round_state(0, [0, 1, 2, 3], [0, 0, 0, 0])  # widths 2, 1, 1, 2 on 4 GPUs
    x = np.array([[1, 0, 0],
                  [0, 1, 0],
                  [0, 1, 0],
                  [0, 0, 0]])
    remaining = np.array([100.0, 50.0, 300.0, 400.0])  # order: job 3, 2, 0, 1
    rounds = policy._fill(state, x, remaining)
    # round 0: job 0 (2 GPUs), 2 idle: job 3 (2) fits
    # round 1: jobs 1, 2 (2 GPUs), 2 idle: job 3 fits
    # round 2: nothing planned: job 3 (2), job 2 (1), job 0 (2) does not fit in 1, job 1 (1)
    assert [r.tolist() for r in rounds] == [[0, 3], [1, 2, 3], [3, 2, 1]]


@st.composite
def planner_cases(draw):
    G = draw(st.integers(1, 4))
    N = draw(st.integers(1, 5))
    jobs, width, done = [], [], []
    for _ in range(N):
        E = draw(st.integers(1, 8))
        switch = draw(st.integers(0, E))
        d0, d1 = draw(st.sampled_from([30.0, 90.0, 200.0])), draw(st.sampled_from([20.0, 60.0, 500.0]))
        jobs.append((runs((16, switch), (32, E - switch)), [d0] * switch + [d1] * (E - switch)))
        width.append(min(draw(st.sampled_from([1, 1, 2, 4])), G))
        done.append(draw(st.integers(0, E - 1)))
    admitted = draw(st.lists(st.sampled_from([0.0, 60.0, 240.0]), min_size=N, max_size=N))
    return G, hand_profile(jobs), np.array(width), done, admitted


@settings(max_examples=15)
@given(planner_cases())
def test_planner_rounds_fit_and_are_work_conserving(case):
    G, profile, width, done, admitted = case
    policy = Shockwave(config=ShockwaveConfig(rounds=3, reoptimize_every=8))
    jobs = np.arange(width.size)
    for r in range(2, 6):  # a solve, two cached rounds, and a new window
        state = round_state(r, jobs, done, gpus=G, profile=profile, width=width, admitted=admitted)
        plan = policy.plan(state)
        assert plan.solved is (r in (2, 5))
        check_round(state, plan)


def test_round_planner_refuses_one_shot_allocation():
    with pytest.raises(ProblemError, match="plans whole rounds over time"):
        Shockwave().allocate(None)


# --- 8. published configurations -----------------------------------------------------------------

#: file -> (k, lambda) from the published configurations (window 20, rho_max 1, gap 1e-3, 15 s)
PUBLISHED = {"tacc_32gpus.json": (1e-3, 12.0), "scale_64gpus.json": (10.0, 5.0),
             "scale_128gpus.json": (1e-3, 15.0), "scale_256gpus.json": (1e5, 5.0),
             "shockwave_example_config.json": (10.0, 5.0)}


def test_every_published_configuration_reads(shared_data):
    folder = shared_data / "shockwave" / "configurations"
    files = sorted(folder.glob("*.json"))
    assert files, f"no configurations in {folder}"
    for path in files:
        assert path.name in PUBLISHED, f"unexpected configuration {path.name}: add its values here"
        k, lam = PUBLISHED[path.name]
        cfg = read_shockwave_config(path)
        assert cfg == ShockwaveConfig(rounds=20, k=k, lam=lam, rho_max=1.0, mip_gap=1e-3, time_limit=15.0,
                                      reoptimize_every=8, oracle=False, log_bases=PUBLISHED_BASES), path.name
        assert isinstance(cfg.rounds, int)


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"k": 1e-3,,}', r":1:\d+: invalid JSON"),
        ('{"k": 1e-3, "kappa": 2}', r"unknown key 'kappa'"),
        ('{"k": "big"}', r"key 'k': expected a number, got \"big\""),
        ('{"rhomax": true}', r"key 'rhomax': expected a number, got true"),
        ('{"k": 1e400}', r"invalid k=1e400"),
        ('{"future_rounds": 1' + "0" * 5000 + '}', r"key 'future_rounds': out of range \(beyond 64 bits\), got 10{50}"),
        ('{"k": ' + "[" * 100000 + '}', r"nested too deeply"),
        ('{"lambda": [5]}', r"key 'lambda': expected a number, got \[5\]"),
        ('{"k": -1}', r"invalid k=-1"),
        ('{"future_rounds": 2.5}', r"invalid rounds=2.5"),
        ('[1, 2]', r"expected a JSON object"),
        ('{"oracle": 1}', r"key 'oracle': expected true or false, got 1"),
        ('{"log_approximation_bases": 0.2}', r"key 'log_approximation_bases': expected a list of numbers"),
        ('{"log_approximation_bases": [0.2, 1.0]}', r"invalid log_bases=\[0.2, 1.0\]"),
        ('{"log_approximation_bases": [0, 0.6, 0.4, 1]}', r"invalid log_bases"),
    ],
)
def test_malformed_configuration_names_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "bad_config.json"
    path.write_text(text)
    with pytest.raises(ShockwaveConfigError, match=message) as info:
        read_shockwave_config(path)
    assert str(path) in str(info.value)


def test_configuration_keys_map_to_fields(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"future_rounds": 5, "k": 2.5, "lambda": 3, "rhomax": 1.5, "solver_rel_gap": 0.01,
                                "solver_timeout": 2, "reoptimize_every": 4, "gpu_ram": 16, "num_gpus": 32,
                                "oracle": True, "log_approximation_bases": [0, 0.5, 1]}))
    assert read_shockwave_config(path) == ShockwaveConfig(rounds=5, k=2.5, lam=3, rho_max=1.5, mip_gap=0.01,
                                                          time_limit=2, reoptimize_every=4, oracle=True,
                                                          log_bases=(0.0, 0.5, 1.0))
    with pytest.raises(ShockwaveConfigError, match=r"nope.json: cannot read"):
        read_shockwave_config(tmp_path / "nope.json")


# --- 9. the command line ------------------------------------------------------------------------

def tiny_shockwave_trace(shared_data, tmp_path):
    """The published 120-job trace's first jobs, steps cut to a tenth (short runs)."""
    src = next((shared_data / "shockwave" / "traces").glob("120_*.trace"))
    lines = []
    for line in src.read_text().splitlines()[:5]:
        cells = line.split("\t")
        cells[5] = str(max(1, int(cells[5]) // 10))
        lines.append("\t".join(cells))
    path = tmp_path / "tiny.trace"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(*args):
    from typer.testing import CliRunner

    from schedopt.cli import app

    return CliRunner().invoke(app, ["simulate", *map(str, args), "--no-progress"])


def test_cli_runs_shockwave_with_a_published_config(shared_data, tmp_path):
    root = shared_data / "shockwave"
    out = tmp_path / "run"
    result = run_cli("--trace", tiny_shockwave_trace(shared_data, tmp_path), "--throughputs",
                     root / "tacc_throughputs.json", "--cluster", "v100=4", "--policy", "shockwave",
                     "--config", root / "configurations" / "tacc_32gpus.json", "--solver", "highs", "--out", out)
    assert result.exit_code == 0, result.output
    assert "of which build / translate / solve" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_completed"] == 5 and summary["solver"] == "highs"
    # Shockwave's simulator settings come with its traces
    assert (summary["round_length"], summary["overhead"], summary["max_runtime_factor"]) == (120.0, 20.0, 1.5)
    rows = (out / "solves.csv").read_text().splitlines()
    assert len(rows) == summary["solves"] + 1 > 1
    assert all(float(cell) >= 0 for row in rows[1:] for cell in row.split(",")[3:])  # the split is reported
    jobs = (out / "jobs.csv").read_text().splitlines()
    assert "isolated_runtime" in jobs[0].split(",") and len(jobs) == 6


def test_cli_reports_a_bad_shockwave_config_in_one_line(shared_data, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"k": 1e-3, "lambda": "twelve"}')
    result = run_cli("--trace", tiny_shockwave_trace(shared_data, tmp_path), "--throughputs",
                     shared_data / "shockwave" / "tacc_throughputs.json", "--cluster", "v100=4",
                     "--policy", "shockwave", "--config", bad)
    assert result.exit_code == 2
    assert f"{bad}: key 'lambda': expected a number, got \"twelve\"" in result.output
    assert "Traceback" not in result.output
    other = run_cli("--example", "--policy", "max_min_fairness", "--config", bad)
    assert other.exit_code == 2 and "--config is for --policy shockwave" in other.output


def test_cli_runs_allox_on_a_shockwave_trace_as_shockwaves_variant(shared_data, tmp_path):
    result = run_cli("--trace", tiny_shockwave_trace(shared_data, tmp_path), "--throughputs",
                     shared_data / "shockwave" / "tacc_throughputs.json", "--cluster", "v100=4", "--policy", "allox")
    assert result.exit_code == 0, result.output
    assert "Shockwave's multi-GPU variant, alpha 0.2" in result.output
