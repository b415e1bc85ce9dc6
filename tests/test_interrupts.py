"""Interrupt safety of every writing command (issue 49 item 4).

Each command runs as ``python -m schedopt`` in a session of its own and gets SIGINT on its whole
process group, as Ctrl-C in a terminal sends it, after a seeded random delay (a fraction of an
uninterrupted run's time). Then: exit status 130 and one line on stderr, no traceback (or exit 0
where the signal came after the command ended); every file in the output is whole (CSV rows
complete, JSON loads, PNG ends with its IEND chunk, Parquet with its footer, a checkpoint with
its zip directory) and no temporary file is left; and a re-run resumes (``sweep``), runs again
where nothing was kept (``report`` writes ``report.html`` last), or refuses with one line and
exit 2 until ``--overwrite`` (``simulate``, ``bench``, ``run``), and then ends with the results
of an uninterrupted run. The in-process tests interrupt the writing itself: SIGINT arrives while
the k-th file is written.
"""

import csv
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from schedopt.cli import app
from simulator.files import held_results

#: the seed of the delays (each command draws its own from it)
SEED = 49

SIMULATE = ["simulate", "--generate", "30", "--cluster", "v100=2,p100=2,k80=2", "--no-progress"]
BENCH = ["bench", "--jobs", "16", "--jobs", "32", "--repeat", "2", "--backend", "highs", "--no-progress"]
PROFILE = ["profile", "--workloads", "resnet", "--model-size", "tiny", "--device", "cpu", "--steps", "2",
           "--seconds", "0.05", "--warmup", "1"]
EXPERIMENT = """
[experiment]
name = "tiny"
[fixed]
generate = 20
cluster = "v100=2,p100=2,k80=2"
[axes]
policy = ["max_min_fairness_perf", "fifo_perf"]
seed = [0, 1]
"""
#: the cheapest real run (tests/test_runtime_ray.py): two jobs on two emulated slots, leases of 3 s
RUN_JOBS = [("ResNet-18 (batch size 8)", 6), ("Transformer (batch size 4)", 9)]
RUN = ["run", "--trace", "jobs.trace", "--throughputs", "table.json", "--policy", "fifo_perf", "--solver", "highs",
       "--cluster", "cpu=2", "--round", "300", "--time-scale", "0.01", "--no-progress"]


def schedopt(args: list[str], cwd: Path, delay: float | None = None, after: Path | None = None) -> tuple[int, str]:
    """``python -m schedopt ARGS`` in ``cwd``; with ``delay``, SIGINT to its process group
    ``delay`` seconds after it started (or after the file ``after`` appeared) unless it has
    ended. Returns its exit status and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "schedopt", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    while after is not None and not after.exists() and proc.poll() is None:
        time.sleep(0.02)
    if delay is not None:
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:  # it ended in between
                pass
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def timed(args: list[str], cwd: Path) -> float:
    """Seconds an uninterrupted ``schedopt ARGS`` takes (it must succeed)."""
    started = time.monotonic()
    rc, err = schedopt(args, cwd)
    assert rc == 0, err
    return time.monotonic() - started


def assert_whole(path: Path) -> list[str]:
    """Every file at ``path`` (a file or a folder) whole and none temporary; their names."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    names = []
    for file in files:
        name, data = file.relative_to(path.parent).as_posix(), file.read_bytes()
        assert not file.name.endswith(".tmp"), f"temporary file left: {name}"
        if file.suffix == ".csv":
            rows = list(csv.reader(io.StringIO(data.decode())))
            assert not data or (data.endswith(b"\n") and all(len(r) == len(rows[0]) for r in rows)), name
        elif file.suffix == ".json":
            json.loads(data)
        elif file.suffix == ".jsonl":  # a run's journal: a line per round, each whole
            assert data.endswith(b"\n") and all(json.loads(line) for line in data.splitlines()), name
        elif file.suffix == ".png":
            assert data.startswith(b"\x89PNG") and data.endswith(b"IEND\xaeB`\x82"), name
        elif file.suffix == ".parquet":
            assert data[:4] == data[-4:] == b"PAR1", name
        elif file.suffix == ".html":
            assert data.rstrip().endswith(b"</html>"), name
        elif file.suffix == ".pt":  # torch.save's zip: its end of central directory comes last
            assert data[:2] == b"PK" and b"PK\x05\x06" in data[-100:], name
        elif file.suffix == ".pid":
            assert data.strip().isdigit(), name
        else:
            raise AssertionError(f"unexpected file {name}")
        names.append(name)
    return names


def assert_one_line(err: str, start: str, out: str | None = None) -> str:
    """``err``'s last line starts with ``start``, no other says so, none is a traceback; where
    ``out`` is given, the line names it and ``--overwrite``."""
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith(start) and "Traceback" not in err, err
    assert sum(line.startswith("schedopt:") for line in lines) == 1, err
    if out is not None:
        assert out in lines[-1] and "--overwrite" in lines[-1], err
    return lines[-1]


def interrupt_and_rerun(cwd: Path, args: list[str], out: str, delay: float, same, resumes: bool = False) -> None:
    """Interrupt ``schedopt ARGS --out OUT`` after ``delay`` seconds, check what it left, run it
    again (with ``--overwrite`` once refused) and check the results with ``same(path)``."""
    command = [*args, "--out", out]
    finished = assert_interrupted(*schedopt(command, cwd, delay), cwd / out, resumes)
    rerun(cwd, command, finished, same, resumes)


def assert_interrupted(rc: int, err: str, path: Path, resumes: bool = False) -> bool:
    """Exit 130 with one line (naming ``path`` and ``--overwrite`` where it holds results and the
    command does not resume), or 0 where the signal came after the end; no traceback; every file
    whole. Whether the command finished."""
    assert rc in (0, 130) and "Traceback" not in err, err
    if rc == 130:
        held = held_results(path) and not resumes
        assert_one_line(err, "schedopt: interrupted", path.name if held else None)
    if path.exists():
        assert_whole(path)
    return rc == 0


def rerun(cwd: Path, command: list[str], finished: bool, same, resumes: bool = False) -> None:
    """Run ``command`` (``--out`` last) again after an interrupt: refused with one line and exit 2
    where ``--out`` holds results (unless the command resumes), then with ``--overwrite``; its
    results checked by ``same(path)``."""
    out = command[-1]
    path = cwd / out
    if path.is_file():  # profile's one file, written last: the finished run's
        return same(path)
    if held_results(path) and not resumes:
        rc, err = schedopt(command, cwd)
        assert rc == 2, err
        assert_one_line(err, f"schedopt: error: --out {out}: holds results of an earlier run", out)
        if finished:
            return same(path)
        command = [*command, "--overwrite"]
    rc, err = schedopt(command, cwd)
    assert rc == 0 and "Traceback" not in err, err
    assert_whole(path)
    same(path)


def delays(name: str, seconds: float, count: int) -> list[float]:
    """``count`` seeded random moments of a run of ``seconds``, one in each of ``count`` equal
    parts of its last 70 % (its first 30 % loads the modules)."""
    rng = random.Random(f"{SEED}:{name}")
    return [seconds * (0.3 + 0.7 * (i + rng.random()) / count) for i in range(count)]


def table(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def without_timings(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if "seconds" not in k}


def same_run(reference: Path):
    """A check that a simulate run's results are ``reference``'s (solver timings aside)."""
    def same(path: Path) -> None:
        for name in ("jobs.csv", "timeline.csv"):
            assert (path / name).read_bytes() == (reference / name).read_bytes(), name
        summary = json.loads((path / "summary.json").read_text())
        assert without_timings(summary) == without_timings(json.loads((reference / "summary.json").read_text()))
    return same


def test_an_interrupted_simulate_leaves_whole_files_and_is_refused_until_overwrite(tmp_path):
    seconds = timed([*SIMULATE, "--out", "reference"], tmp_path)
    for i, delay in enumerate(delays("simulate", seconds, 1)):
        interrupt_and_rerun(tmp_path, SIMULATE, f"cut-{i}", delay, same_run(tmp_path / "reference"))


def test_an_interrupted_sweep_resumes_to_the_uninterrupted_results(tmp_path):
    (tmp_path / "tiny.toml").write_text(EXPERIMENT)
    args = ["sweep", "tiny.toml", "--workers", "2", "--no-progress"]
    seconds = timed([*args, "--out", "reference"], tmp_path)

    def same(path: Path) -> None:
        columns = ["key", "status", "jobs_completed", "average_jct", "makespan"]
        rows = {name: sorted(table(folder / "results.csv"), key=lambda r: r["key"])
                for name, folder in (("resumed", path), ("reference", tmp_path / "reference"))}
        assert [[r[c] for c in columns] for r in rows["resumed"]] == [[r[c] for c in columns]
                                                                      for r in rows["reference"]]
        for row in rows["reference"]:
            same_run(tmp_path / "reference" / "cells" / row["key"])(path / "cells" / row["key"])

    for i, delay in enumerate(delays("sweep", seconds, 1)):
        interrupt_and_rerun(tmp_path, args, f"cut-{i}", delay, same, resumes=True)


def test_an_interrupted_report_runs_again_to_the_same_page(tmp_path, run_folder):
    seconds = timed(["report", str(run_folder), "--out", "reference"], tmp_path)

    def same(path: Path) -> None:
        reference = tmp_path / "reference"
        assert sorted(p.name for p in path.iterdir()) == sorted(p.name for p in reference.iterdir())
        assert (path / "report.html").read_bytes() == (reference / "report.html").read_bytes()

    for i, delay in enumerate(delays("report", seconds, 1)):
        interrupt_and_rerun(tmp_path, ["report", str(run_folder)], f"cut-{i}", delay, same)


def test_an_interrupted_bench_leaves_whole_files_and_is_refused_until_overwrite(tmp_path):
    seconds = timed([*BENCH, "--out", "reference"], tmp_path)
    columns = ["policy", "jobs", "gpus_per_type", "worker_types", "seed", "repeat", "backend", "rows", "cols",
               "status", "objective"]

    def same(path: Path) -> None:
        assert sorted(p.name for p in path.iterdir()) == sorted(p.name for p in (tmp_path / "reference").iterdir())
        tables = [table(folder / "bench.csv") for folder in (path, tmp_path / "reference")]
        assert [[r[c] for c in columns] for r in tables[0]] == [[r[c] for c in columns] for r in tables[1]]

    for i, delay in enumerate(delays("bench", seconds, 1)):
        interrupt_and_rerun(tmp_path, BENCH, f"cut-{i}", delay, same)


def test_an_interrupted_profile_leaves_its_table_whole_or_absent(tmp_path):
    pytest.importorskip("torch")

    def same(path: Path) -> None:  # its job types (its rates are measured)
        profiled = json.loads(path.read_text())
        assert list(profiled) == ["cpu"] and list(profiled["cpu"]) == ["('ResNet-8 (batch size 32)', 1)"]

    # about 6 s, most of them importing PyTorch
    for i, delay in enumerate(delays("profile", 6.0, 1)):
        interrupt_and_rerun(tmp_path, PROFILE, f"cut-{i}.json", delay, same)


def test_an_interrupted_real_run_keeps_whole_checkpoints_and_is_refused_until_overwrite(tmp_path):
    pytest.importorskip("ray")
    pytest.importorskip("torch")
    from simulator.throughputs import ThroughputTable, write_gavel_json

    trace = "".join(f"{t}\tcmd\t\t--n\t0\t{steps}\t1\t1\t-1\t0\n" for t, steps in RUN_JOBS)
    (tmp_path / "jobs.trace").write_text(trace)
    keys = tuple((t, 1) for t, _ in RUN_JOBS)
    write_gavel_json(ThroughputTable(("cpu",), keys, np.full((2, 1), 0.01), np.full((2, 1), np.nan)),
                     tmp_path / "table.json")

    def same(path: Path) -> None:  # what every uninterrupted run of it gives (tests/test_runtime_ray.py)
        summary = json.loads((path / "summary.json").read_text())
        assert summary["jobs_completed"] == 2 and summary["lease_credited_over_planned"] == 1.0
        assert sorted(p.name for p in (path / "checkpoints").iterdir()) == ["job-0.pt", "job-1.pt"]
        leases = table(path / "leases.csv")
        assert leases and all(lease["reason"] == "" for lease in leases)
        first = {lease["job"]: lease["start_step"] for lease in reversed(leases)}
        assert first == {"0": "0", "1": "0"}  # from step 0, not from the interrupted run's checkpoints

    # once at a random moment of the imports or Ray's start (which holds Ctrl-C back until Ray is
    # up, then stops it), then, where that kept nothing, in its re-run while the jobs train
    rng, command, path = random.Random(f"{SEED}:run"), [*RUN, "--out", "out"], tmp_path / "out"
    finished = assert_interrupted(*schedopt(command, tmp_path, rng.uniform(2.0, 8.0)), path)
    if not held_results(path):
        checkpoint = path / "checkpoints" / "job-0.pt"
        finished = assert_interrupted(*schedopt(command, tmp_path, rng.uniform(0.0, 1.0), after=checkpoint), path)
    rerun(tmp_path, command, finished, same)


def interrupt_write(k: int):
    """An ``os.replace`` that sends this process SIGINT while the ``k``-th file is being renamed
    into place, as Ctrl-C at that moment would."""
    real, calls = os.replace, []

    def replace(src, dst, **kwargs):
        calls.append(dst)
        if len(calls) == k:
            os.kill(os.getpid(), signal.SIGINT)
        return real(src, dst, **kwargs)

    return replace


def invoke(args: list[str]):
    result = CliRunner().invoke(app, args)
    assert "Traceback" not in result.output and not isinstance(result.exception, KeyboardInterrupt), result.output
    return result


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    assert invoke([*SIMULATE, "--out", str(folder / "run")]).exit_code == 0
    return folder / "run"


@pytest.mark.parametrize("command, files", [("simulate", 4), ("bench", 5), ("report", 6)])
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_an_interrupt_while_files_are_written_leaves_the_ones_written_whole(command, files, data, run_folder,
                                                                             tmp_path_factory):
    k = data.draw(st.integers(1, files), label="SIGINT while writing file")
    out = tmp_path_factory.mktemp(command) / "out"
    args = {"simulate": SIMULATE, "bench": BENCH, "report": ["report", str(run_folder)]}[command]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's process has it, whatever
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})          # earlier tests (Ray) left
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(os, "replace", interrupt_write(k))
            result = invoke([*args, "--out", str(out)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.exit_code == 130 and len(assert_whole(out)) == k, result.output
    held = held_results(out)
    assert_one_line(result.stderr, "schedopt: interrupted", str(out) if held else None)
    again = invoke([*args, "--out", str(out)])
    if held:
        assert again.exit_code == 2, again.output
        assert_one_line(again.stderr, f"schedopt: error: --out {out}: holds results", str(out))
        again = invoke([*args, "--out", str(out), "--overwrite"])
    assert again.exit_code == 0, again.output
    assert len(assert_whole(out)) == files
