"""``schedopt run``: any policy's plan executed for real by a :class:`RayExecutor`.

The run is the simulator's own (:func:`simulator.simulate.simulate` for a Gavel / Shockwave trace,
:func:`simulator.simulate.simulate_deadlines` for an ElasticFlow / ITP one), with every
round's or slot's leases handed to Ray instead of the simulated executor; so a round policy and a
slot policy run the same way. Each job's measured steps/s is set against the steps/s its leases
were planned at (the throughput table's), per job, whatever engine planned them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.readers.elasticflow_traces import read_deadline_trace
from simulator.readers.node_cluster import read_cluster_spec
from simulator.readers.traces import Trace
from simulator.simulate import gpu_type_of, simulate, simulate_deadlines

from .fidelity import Fidelity, compare
from .journal import Journal
from .ray_executor import RayExecutor


@dataclass(frozen=True)
class RealRun:
    """The run's result (jobs gain ``measured_steps_per_second``, ``table_steps_per_second`` and
    their ratio ``measured_over_table``; the summary gains ``lease_credited_over_planned``, the
    steps credited over the steps planned, all leases together), every lease
    (:meth:`RayExecutor.lease_table`), and its difference to a simulated run when asked."""

    result: object
    leases: dict[str, np.ndarray]
    fidelity: Fidelity | None


@dataclass(frozen=True)
class DeadlineInputs:
    """An ElasticFlow / ITP trace with its cluster spec and iteration-table directory."""

    trace: Path
    cluster_spec: Path
    throughput_dir: Path
    gpu_type: str | None = None


def run_for_real(jobs: Trace | DeadlineInputs, *, policy: str, checkpoints: str | os.PathLike,
                 time_scale: float, model_size: str, address: str | None, slots: int | None,
                 compare_simulation: bool, progress: Callable | None = None,
                 planned: Callable[[float], None] | None = None, journal: str | os.PathLike | None = None,
                 resume: bool = False, **simulate_args) -> RealRun:
    """``policy`` on ``jobs`` with each lease trained by Ray (``simulate_args``: what the simulator
    call of the trace's kind takes: solver, cluster, throughputs, config, deadlines, slot). The trace
    is simulated first: ``planned`` gets the expected wall-clock seconds of the run (the simulated
    makespan times ``time_scale``) before Ray starts. Every job starts from step 0: the job
    checkpoints an earlier run left in ``checkpoints`` (finished or interrupted; a folder every Ray
    node reads, of this run's own) are removed first. Leases go to nodes by their worker type where
    the Ray cluster's nodes advertise the cluster's worker types (:class:`RayExecutor`). Every
    round is journaled in ``journal`` where given; with ``resume`` the run continues the one that
    journal and ``checkpoints`` hold instead (:mod:`~runtime_bridge.journal`; same inputs)."""
    if resume:
        if journal is None:
            raise ValueError("resuming a run needs its journal (the run folder, --out)")
        log = Journal(journal, resume=True)
    else:
        _remove_checkpoints(Path(checkpoints))
        log = None if journal is None else Journal(journal)
    if isinstance(jobs, DeadlineInputs):
        trace = read_deadline_trace(jobs.trace)
        job_types = [f"{m} (batch size {b})" for m, b in zip(trace.model, trace.batch_size)]
        worker_types = (jobs.gpu_type or gpu_type_of(jobs.throughput_dir) or "gpu",)
        gpus = {worker_types[0]: read_cluster_spec(jobs.cluster_spec).num_gpus}

        def simulated(executor=None, report=None):
            return simulate_deadlines(trace, jobs.cluster_spec, jobs.throughput_dir, policy=policy,
                                      gpu_type=jobs.gpu_type, progress=report, executor=executor, **simulate_args)
    else:
        job_types = list(jobs.job_types)
        worker_types = simulate_args["cluster"].worker_types
        gpus = dict(zip(worker_types, simulate_args["cluster"].gpus.astype(int).tolist()))

        def simulated(executor=None, report=None):
            return simulate(jobs, policy=policy, progress=report, executor=executor, **simulate_args)

    simulation = simulated()
    if planned is not None:
        planned(simulation.summary["makespan"] * time_scale)
    with RayExecutor(job_types, checkpoints, time_scale=time_scale, model_size=model_size, address=address,
                     slots=slots or sum(gpus.values()), worker_types=worker_types, journal=log) as executor:
        executor.check_fits(gpus)
        result = simulated(executor, progress)
        measured, listed = executor.measured_rates(), executor.table_rates()
        leases = executor.lease_table()
    result.jobs.update(measured_steps_per_second=measured, table_steps_per_second=listed,
                       measured_over_table=np.divide(measured, listed, out=np.full(listed.shape, np.nan),
                                                     where=listed > 0))
    planned = leases["planned"].sum()
    result.summary.update(executor="ray", time_scale=time_scale, model_size=model_size,
                          lease_credited_over_planned=leases["credited"].sum() / planned if planned else float("nan"))
    fidelity = None
    if compare_simulation:
        fidelity = compare(result, simulation)
        result.summary.update(fidelity.summary_fields())
    return RealRun(result, leases, fidelity)


def _remove_checkpoints(folder: Path) -> None:
    """Remove the job checkpoints (their ranks' files too), lease markers and temporary
    checkpoints in ``folder``."""
    for path in (*folder.glob("job-*.pt"), *folder.glob("job-*.pt.rank*"), *folder.glob("job-*.pid"),
                 *folder.glob(".job-*.tmp")):
        path.unlink(missing_ok=True)
