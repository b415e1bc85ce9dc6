"""Issue 49's leftover hang: valid numbers that would make a run simulate practically forever (a job
arriving at 9e18 s, 1e18 iterations, 9.2e18 steps) stop before the run starts with one line naming
the file, the job and the value, exit 2, within seconds (:data:`simulator.engine.clock.HORIZON`);
a run inside the horizon jumps over its empty time and completes."""

from __future__ import annotations

import signal
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from schedopt.cli import app
from simulator.engine.clock import HORIZON, SimulationError, check_horizon
from simulator.files import RESULT_FILES

GAVEL = "ResNet-18 (batch size 128)\tcmd\tdir\t--n\t0\t{steps}\t1\t1\t-1\t{arrival}\n"
ELASTICFLOW = "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration\n"
LATEST_DDL = "9100000000000000000"  # the latest deadline a trace can give (int64), so no job is declined
LIMIT = "past the 315360000 s (10 years) of simulated time a run may reach"


class Hung(Exception):
    """The run went on past its few seconds."""


def invoke(args: list[str], seconds: float = 20.0):
    """``schedopt ARGS`` in process, stopped (the run fails) after ``seconds``; (result, seconds taken)."""

    def stop(*_):
        raise Hung(f"schedopt {' '.join(args)} ran over {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    tick = time.perf_counter()
    try:
        result = CliRunner().invoke(app, args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not isinstance(result.exception, Hung), result.exception
    return result, time.perf_counter() - tick


def ef_row(job: int, submit: str, iterations: str, ddl: str = LATEST_DDL) -> str:
    return f"{job},{submit},{iterations},bert,{ddl},64,1,10\n"


CASES = {
    "elasticflow arrival": (
        "ef.csv", ELASTICFLOW + ef_row(1, "0", "100", "1000") + ef_row(2, "9e18", "100"), True, (),
        ": job 2: arrival 9000000000000000000 s is " + LIMIT),
    "elasticflow iterations": (
        "ef.csv", ELASTICFLOW + ef_row(1, "0", "1e18"), True, (),
        ": job 1: work 1000000000000000000 takes 3.12e+17 s even alone at its fastest rate (3.2/s); arriving at "
        "0 s, it would end " + LIMIT),
    "elasticflow iterations, edf": (
        "ef.csv", ELASTICFLOW + ef_row(1, "0", "1e18"), True, ("--policy", "edf"),
        ": job 1: work 1000000000000000000 takes "),
    "elasticflow iterations, on the round clock": (
        "ef.csv", ELASTICFLOW + ef_row(1, "0", "1e18"), True, ("--policy", "max_min_fairness"),
        ": job 0: work 1000000000000000000 takes "),
    "gavel steps": (
        "t.trace", GAVEL.format(steps="9200000000000000000", arrival=0), False, (),
        ": job 0: work 9200000000000000000 takes 7.7e+17 s even alone at its fastest rate (12/s); arriving at 0 s, "
        "it would end " + LIMIT),
    "gavel arrival": (
        "t.trace", GAVEL.format(steps=100, arrival=0) + GAVEL.format(steps=100, arrival="9e18"), False, (),
        ": job 1: arrival 9000000000000000000 s is " + LIMIT),
}


@pytest.mark.parametrize("name", CASES)
def test_a_run_past_the_horizon_is_one_line_within_seconds(name, tmp_path, deadline_inputs):
    file, text, deadline, options, fragment = CASES[name]
    trace, out = tmp_path / file, tmp_path / "out"
    trace.write_text(text)
    args = ["simulate", "--trace", str(trace), "--out", str(out), "--no-progress", *options]
    result, seconds = invoke(args + (deadline_inputs if deadline else []))
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith(f"schedopt: error: {trace}{fragment}")
    assert seconds < 10
    assert not any((out / name).exists() for name in RESULT_FILES)


def test_a_late_arrival_inside_the_horizon_is_reached_in_one_jump(tmp_path, deadline_inputs):
    """Nine years of empty time between two jobs: the clock goes from the first job's end straight to the
    next arrival, and the run completes in seconds."""
    trace = tmp_path / "ef.csv"
    trace.write_text(ELASTICFLOW + ef_row(1, "0", "100") + ef_row(2, "283824000", "100"))
    result, seconds = invoke(["simulate", "--trace", str(trace), "--out", str(tmp_path / "out"), "--no-progress",
                              *deadline_inputs])
    assert result.exit_code == 0, result.output
    assert seconds < 10


def test_only_the_window_jobs_must_end_inside_the_horizon(tmp_path):
    """With --window, the run stops once those jobs are done: a job outside it may be any length."""
    trace = tmp_path / "t.trace"
    trace.write_text(GAVEL.format(steps=100, arrival=0) + GAVEL.format(steps="9200000000000000000", arrival=0))
    result, seconds = invoke(["simulate", "--trace", str(trace), "--out", str(tmp_path / "out"), "--no-progress",
                              "--window", "0:1"])
    assert result.exit_code == 0, result.output
    assert seconds < 10


def test_the_bound_is_inclusive():
    """A job that can end exactly at the horizon runs; a second later is refused."""
    ids, rate = np.array([7]), np.array([2.0])
    check_horizon("t", ids, np.array([HORIZON - 10.0]), np.array([20.0]), rate, np.array([10.0]))
    with pytest.raises(SimulationError, match=r"^t: job 7: work 20 takes 11 s even alone"):
        check_horizon("t", ids, np.array([HORIZON - 10.0]), np.array([20.0]), rate, np.array([11.0]))
    with pytest.raises(SimulationError, match=r"^t: job 7: arrival 315360000.5 s is past"):
        check_horizon("t", ids, np.array([HORIZON + 0.5]), np.array([20.0]), rate, np.array([0.0]))
