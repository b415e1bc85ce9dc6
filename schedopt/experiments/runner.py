"""Running an experiment's grid: each cell a ``schedopt simulate`` run, in local processes or as
Ray tasks, resumable.

The output folder holds ``experiment.json`` (the experiment and its key), one folder per cell
``cells/<key>/`` (the run's files, ``cell.json`` with its options, and ``row.json``, written last:
a cell with a ``row.json`` is finished), and the tidy table ``results.csv`` / ``results.parquet``
(one row per cell: its key, every option given, every scalar summary metric (``run_`` before a
metric named as an option: ``run_solver`` is the solver ``auto`` chose), status and one-line error,
wall and CPU seconds, schedopt and solver versions). A cell runs where it is sent and returns its
row and files; only this process writes, each file atomically, so an interrupted sweep leaves
whole files and finished cells, and a re-run skips them (``force`` re-runs them); failed cells
are recorded with their reason and tried again on a re-run.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from simulator.files import ResultsExistError, check_out_dir, interrupts_held, write_atomically

from .spec import Cell, Experiment

RESULTS = ("results.csv", "results.parquet")


@dataclass
class Progress:
    """Where a sweep stands: cells ``done`` (failed included), ``failed``, ``skipped`` (finished
    before), ``total``, and seconds per cell so far."""

    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    started: float = 0.0

    def seconds_left(self) -> float | None:
        ran = self.done - self.skipped
        if ran <= 0:
            return None
        return (time.monotonic() - self.started) / ran * (self.total - self.done)


def execute_cell(options: dict, axes: dict, key: str, base: str) -> tuple[dict, dict[str, str]]:
    """Run one cell (anywhere: no file is written here); returns its row and its run's files as
    text. A failure becomes a row with status ``failed`` and its one-line reason."""
    cell = Cell(options, axes, key)
    wall, cpu = time.perf_counter(), time.process_time()
    row = {"key": key, **options}
    try:
        result = run_cell(cell, Path(base))
    except Exception as exc:  # a failed cell is recorded and never stops the others
        reason = (str(exc).strip().splitlines() or [""])[0]
        return {**row, "status": "failed", "error": f"{type(exc).__name__}: {reason}",
                **_costs(wall, cpu)}, {}
    metrics = {f"run_{k}" if k in row else k: _plain(v) for k, v in result.summary.items() if _scalar(v)}
    return {**row, "status": "ok", "error": "", **metrics, **_costs(wall, cpu),
            **_versions(str(result.summary.get("solver", "")))}, result.files()


def run_cell(cell: Cell, base: Path):
    """The cell's simulation, run here."""
    from simulator.request import run_request

    return run_request(cell.request(base))


def _costs(wall: float, cpu: float) -> dict:
    return {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3)}


def _versions(solver: str) -> dict:
    import schedopt
    from optim import OptimError, get_backend

    try:
        version = get_backend(solver).version() if solver else ""
    except OptimError:  # a solver the run named but this machine cannot load has no version
        version = ""
    return {"schedopt_version": schedopt.__version__, "solver_version": version}


def _scalar(value) -> bool:
    return value is None or isinstance(value, str | int | float | bool) or hasattr(value, "item")


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def prepare(exp: Experiment, out: Path, overwrite: bool) -> None:
    """Make ``out`` the experiment's folder: new, the same experiment's (resumed), or, with
    ``overwrite``, another experiment's emptied of its cells and results."""
    marker = out / "experiment.json"
    if not marker.exists():
        check_out_dir(out, overwrite)
    elif (held := json.loads(marker.read_text()).get("key")) != exp.key:
        if not overwrite:
            raise ResultsExistError(f"--out {out}: holds another experiment's results (key {held}); give "
                                    f"--overwrite to replace them, or another folder")
        shutil.rmtree(out / "cells", ignore_errors=True)
        for name in RESULTS:
            (out / name).unlink(missing_ok=True)
    doc = {"name": exp.name, "key": exp.key, "sweep": exp.sweep, "x_label": exp.x_label,
           "fixed": exp.fixed,
           "axes": {k: list(v) for k, v in exp.axes.items()}, "base": str(exp.base)}
    write_atomically(marker, json.dumps(doc, indent=2) + "\n")


def finished(out: Path, cell: Cell) -> dict | None:
    """The row of a cell finished without failure, or None."""
    path = out / "cells" / cell.key / "row.json"
    if not path.exists():
        return None
    row = json.loads(path.read_text())
    return row if row.get("status") == "ok" else None


def run_sweep(exp: Experiment, out: Path, *, workers: int = 1, address: str | None = None, force: bool = False,
              on_progress: Callable[[Progress], None] = lambda _: None) -> list[dict]:
    """Run every cell of ``exp`` not finished in ``out`` (all with ``force``) in ``workers`` local
    processes, or as Ray tasks on the cluster at ``address``; returns every cell's row, in grid
    order, and writes the results table (also when interrupted)."""
    cells = exp.cells()
    rows: dict[str, dict] = {}
    state = Progress(total=len(cells), started=time.monotonic())
    todo = []
    for cell in cells:
        row = None if force else finished(out, cell)
        if row is None:
            todo.append(cell)
        else:
            rows[cell.key] = row
    state.done = state.skipped = len(rows)
    on_progress(state)
    try:
        for cell, (row, files) in _execute(todo, str(exp.base), workers, address):
            _write_cell(out, cell, row, files)
            rows[cell.key] = row
            state.done += 1
            state.failed += row["status"] == "failed"
            on_progress(state)
    finally:
        ordered = [rows[c.key] for c in cells if c.key in rows]
        if ordered:
            write_results(ordered, out)
    return ordered


def _execute(cells: list[Cell], base: str, workers: int, address: str | None) -> Iterator[tuple[Cell, tuple]]:
    """(cell, (row, files)) as cells finish."""
    if not cells:
        return
    if address is not None:
        yield from _on_ray(cells, base, address)
        return
    if workers <= 1:
        for cell in cells:
            yield cell, execute_cell(cell.options, cell.axes, cell.key, base)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=_ignore_interrupts) as pool:
        pending: dict[Future, Cell] = {}
        try:
            with interrupts_held():  # the workers are forked holding Ctrl-C back, until they ignore it
                pending.update((pool.submit(execute_cell, c.options, c.axes, c.key, base), c) for c in cells)
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield pending.pop(future), future.result()
        finally:
            if pending:  # interrupted: drop the cells not started, end the running ones
                workers = list(pool._processes.values())  # terminate_workers() from Python 3.14
                pool.shutdown(wait=False, cancel_futures=True)
                for process in workers:
                    process.terminate()


def _ignore_interrupts() -> None:
    """A worker's start: Ctrl-C reaches the whole process group, and only the driver acts on it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _on_ray(cells: list[Cell], base: str, address: str) -> Iterator[tuple[Cell, tuple]]:
    try:
        import ray
    except ImportError:
        raise ValueError("--address needs Ray: pip install 'schedopt[runtime]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=None if address == "local" else address, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    task = ray.remote(num_cpus=1)(execute_cell)
    pending = {task.remote(c.options, c.axes, c.key, base): c for c in cells}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref)
        if started:
            ray.shutdown()


def _write_cell(out: Path, cell: Cell, row: dict, files: dict[str, str]) -> None:
    folder = out / "cells" / cell.key
    for name, text in files.items():
        write_atomically(folder / name, text)
    write_atomically(folder / "cell.json", json.dumps({"key": cell.key, "options": cell.options,
                                                       "axes": cell.axes}, indent=2) + "\n")
    write_atomically(folder / "row.json", json.dumps(row, indent=1) + "\n")


def write_results(rows: list[dict], out: Path) -> list[Path]:
    """``results.csv`` and ``results.parquet``: one row per cell, the union of the rows' columns."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    paths = [out / name for name in RESULTS]
    write_atomically(paths[0], frame.to_csv(index=False))
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    write_atomically(paths[1], buffer.getvalue())
    return paths


def cpu_count() -> int:
    """CPUs this process may use (the default of ``--workers``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
