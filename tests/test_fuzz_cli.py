"""The hostile inputs of issue 49 through the command line: one line on stderr, exit 2, nothing written
into ``--out``, the value named as the file has it (the readers' many cases: test_fuzz_readers)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from schedopt.cli import app
from simulator.files import RESULT_FILES

BIG = "99999999999999999999999"
GAVEL = "ResNet-18 (batch size 128)\tcmd\tdir\t--n\t0\t{steps}\t{scale}\t1\t-1\t0\n"
SHOCKWAVE = "ResNet-18 (batch size 128)\tcmd\tdir\t--n\t0\t100\t{scale}\tgns\t1\t-1\t300\t0\n"
POLLUX = "name,time,application,num_replicas,batch_size\ncifar10-0,0,cifar10,1,{batch}\n"
ELASTICFLOW = ("job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration\n"
               "1,0,100,bert,1000,64,{gpus},10\n")
CHRONUS = ("job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
           "expect_value_list,best_effort,job_type\n1,u,1,0,100,bert,10,1,5,1,{flag},strict\n")


CASES = {
    "gavel steps": ("t.trace", GAVEL.format(steps=BIG, scale=1), False, ":1: column 6 (total_steps): out of range"),
    "gavel scale": ("t.trace", GAVEL.format(steps=100, scale=BIG), False, ":1: column 7 (scale_factor): out of range"),
    "shockwave scale": ("s.trace", SHOCKWAVE.format(scale=BIG), False, ":1: column 7 (scale_factor): out of range"),
    "pollux batch": ("workload-1.csv", POLLUX.format(batch=BIG), False, ":2: column batch_size: out of range"),
    "elasticflow gpus": ("ef.csv", ELASTICFLOW.format(gpus=BIG), True, ":2: column num_gpu: out of range"),
    "chronus best_effort": ("c.csv", CHRONUS.format(flag=BIG), True, ":2: column best_effort: out of range"),
    "chronus flag 2": ("c.csv", CHRONUS.format(flag=2), True, ":2: column best_effort: expected 0 or 1, got '2'"),
}


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name", CASES)
def test_a_hostile_trace_is_one_line_and_nothing_written(name, tmp_path, deadline_inputs):
    file, text, deadline, fragment = CASES[name]
    trace, out = tmp_path / file, tmp_path / "out"
    trace.write_text(text)
    args = ["simulate", "--trace", str(trace), "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(app, args + (deadline_inputs if deadline else []))
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith(f"schedopt: error: {trace}{fragment}")
    value = BIG if BIG in text else "2"
    assert f"got '{value}'" in result.output
    assert not any((out / name).exists() for name in RESULT_FILES)


def test_the_process_says_one_line_and_no_warning(tmp_path, deadline_inputs):
    """Run as a user runs it (warnings on): stderr is the error line alone."""
    trace = tmp_path / "ef.csv"
    trace.write_text(ELASTICFLOW.format(gpus=BIG))
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    done = subprocess.run([sys.executable, "-m", "schedopt", "simulate", "--trace", str(trace), *deadline_inputs],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"schedopt: error: {trace}:2: column num_gpu: out of range (beyond 64 bits), got '{BIG}'\n"
