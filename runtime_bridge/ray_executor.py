"""Round plans executed for real: every leased job of a round trains its reference
workload in a Ray task that holds exactly the job's GPUs.

Each trace job stands for a reference workload (:func:`~runtime_bridge.job_map.workload_spec`
of its job type, seeded with its job id); its state lives in ``job-<id>.pt`` in the
checkpoint folder. For a round, every lease becomes one Ray task, all submitted together
and awaited together: the task resumes the job from its checkpoint, trains (see Credit
below; :func:`~runtime_bridge.training.train_lease`), saves its checkpoint beside it
(``job-<id>.next-<round>.pt``) and reports the steps it trained and their seconds; the driver then
makes that the job's checkpoint. A task holds ``num_gpus=<scale>`` on a Ray cluster with
GPUs and else ``resources={"slot": <scale>}``, emulated GPU slots; on a cluster whose nodes
advertise the run's worker types as resources (``{"v100": 4}``, emulated or next to real
GPUs), it holds ``<scale>`` of its planned type instead, pinned to the node
:func:`~runtime_bridge.placement.place` chose (never split over nodes). A job of one GPU
trains in the task's process; a job of several trains data-parallel in as many processes
the task starts (``torch.distributed``: NCCL on its GPUs, gloo on CPUs). Every process
trains on the threads its profile measured with
(:func:`~runtime_bridge.profiler.threads_per_gpu`: one per emulated slot, the machine's
cores over its GPUs on GPUs). Space-sharing policies (two jobs on the same GPUs) are not
supported.

Credit (the published systems' fast-forwarding): a lease runs ``time_scale`` times the
simulated lease's length, and is counted as if it had run the whole simulated lease at
the speed measured: ``credited = min(planned, round(trained / time_scale))``. With time
scale 1 that is the steps trained, capped at the plan. A lease therefore trains at most
``ceil(planned x time_scale)`` steps (they earn the whole plan), for at most its budget
(the rest of its round or slot, ``Leases.budget``) times the time scale: a job that
finishes inside a round may take the rest of the round for its last steps, as it could on a
real cluster, rather than fall a fraction of a step short and wait for its next turn. The
results report each lease's seconds (wall clock over the time scale), so a job ends when
its last lease's steps really did.

A lease fails when its task raises (the reason is the exception), its worker dies (killed,
out of memory, node lost) or it does not end within its wall budget plus ``grace``
seconds (the task is then cancelled). A failed lease credits nothing; the job's checkpoint
is the one its last successful lease saved, so its next lease resumes there: a lease whose
node dies after its save, before its report, leaves only its ``.next`` checkpoint, which the
driver removes. While a lease runs, ``job-<id>.pid`` in the checkpoint folder holds its worker's
process id (left behind when the worker dies). The checkpoint folder must be one every node
reads and writes (a shared path on a cluster of several machines), so a job resumes on any node.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import ray
import ray.exceptions
import torch
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from simulator.executor import Executor, LeaseResults, Leases
from simulator.files import interrupts_held, write_atomically

from .data_parallel import train_data_parallel_lease
from .job_map import workload_spec
from .journal import Journal, JournalError
from .placement import labelled_gpus, place, typed_nodes
from .profiler import threads_per_gpu
from .training import train_lease
from .workloads import WorkloadSpec, make_workload

#: what ``ray.get`` raises for a lease that failed
LEASE_FAILURES = (
    ray.exceptions.RayTaskError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.NodeDiedError,
    ray.exceptions.OutOfMemoryError,
    ray.exceptions.TaskCancelledError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.TaskUnschedulableError,
)


@dataclass(frozen=True)
class LeaseRecord:
    """One lease as it ran: the round (from 1), its simulated start, the job, its GPUs,
    the planned steps and their simulated seconds, its wall-clock budget, the step counter it
    resumed from and the steps trained in ``seconds`` of wall clock (None / 0 when it failed),
    the steps credited, why it failed ("" when it did not), its planned worker type and the Ray
    node it ran on (placed on, when it failed; "" when it never got one)."""

    round: int
    start: float
    job: int
    gpus: int
    planned: int
    planned_seconds: float
    budget_seconds: float
    start_step: int | None
    trained: int
    seconds: float
    credited: int
    reason: str = ""
    worker_type: str = ""
    node: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.reason)


def _train(spec: dict, checkpoint: str, save_to: str, steps: int, seconds: float, device: str, gpus: int,
           threads: int, marker: str) -> tuple[int, int, float]:
    """One lease in a Ray worker: (step counter resumed from, steps trained, their seconds).
    One GPU (or slot): this process trains on ``threads`` CPU threads; several: as many
    data-parallel processes of ``threads`` each
    (:func:`~runtime_bridge.data_parallel.train_data_parallel_lease`)."""
    write_atomically(marker, f"{os.getpid()}\n")
    try:
        if gpus > 1:
            report = train_data_parallel_lease(WorkloadSpec(**spec), device, gpus, checkpoint=checkpoint,
                                               steps=steps, seconds=seconds, threads=threads, save_to=save_to)
        else:
            torch.set_num_threads(threads)
            workload = make_workload(**spec, device=device)
            report = train_lease(workload, steps=steps, seconds=seconds, checkpoint=checkpoint, save_to=save_to)
    finally:
        Path(marker).unlink(missing_ok=True)
        if device == "cuda":
            torch.cuda.empty_cache()
    return report.start_step, report.steps, report.seconds


def _lease(*args) -> tuple[int, int, float, str]:
    """:func:`_train` in a Ray task, with the id of the node it ran on."""
    return (*_train(*args), ray.get_runtime_context().get_node_id())


#: workers are reused by every lease (Ray's default for GPU tasks is a new process per task, whose
#: start, CUDA context and first kernels then fall into every round)
_train_remote = ray.remote(max_retries=0, max_calls=0)(_lease)


class RayExecutor(Executor):
    """Runs each round's leases as Ray tasks (see the module docstring).

    ``job_types``: the trace's job type per job id; ``checkpoints``: the folder of the jobs'
    checkpoints; ``worker_types``: the cluster's worker type names, by the leases' type index.
    Ray is started locally with ``slots`` emulated GPU slots (and as many
    CPUs) unless it is already running in this process or ``address`` names a cluster;
    leases go to nodes by worker type (``typed``) when its nodes advertise every one of
    ``worker_types``, else to any node's GPUs or slots;
    :meth:`close` (or leaving the ``with`` block) stops a Ray this executor started. Each
    job trains :func:`~runtime_bridge.job_map.workload_spec` of its job type, each of its
    processes on ``threads`` CPU threads (default: :func:`~runtime_bridge.profiler.threads_per_gpu`
    of this machine, as its profile measured; give it when the Ray cluster's machines differ).
    With a ``journal`` every round is journaled before its checkpoints are adopted, and a resumed
    journal's rounds are answered from it (:mod:`~runtime_bridge.journal`)."""

    def __init__(self, job_types: Sequence[str], checkpoints: str | os.PathLike, *, time_scale: float = 0.01,
                 model_size: str = "tiny", address: str | None = None, slots: int = 1, grace: float = 120.0,
                 threads: int | None = None, worker_types: Sequence[str] = (), journal: Journal | None = None):
        if not time_scale > 0:
            raise ValueError(f"time scale must be > 0, got {time_scale}")
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.specs = [workload_spec(job_type, model_size, job) for job, job_type in enumerate(job_types)]
        self.folder = Path(checkpoints)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.time_scale = time_scale
        self.grace = grace
        self.worker_types = tuple(worker_types)
        self.started = False
        try:
            self._start(address, slots)
            resources = ray.cluster_resources()
            self.uses_gpus = resources.get("GPU", 0) > 0
            served = labelled_gpus(self.worker_types, self.live_nodes())
            labelled = [t for t in self.worker_types if served[t] > 0]
            if labelled and len(labelled) < len(self.worker_types):
                missing = sorted(set(self.worker_types) - set(labelled))
                raise ValueError(f"the Ray cluster's nodes advertise worker types {', '.join(labelled)} but not "
                                 f"{', '.join(missing)}")
            self.typed = bool(labelled)
            #: GPUs (or slots) per worker type the cluster registered at the start; untyped: one total
            self.capacities = (served if self.typed else
                               {"": int(resources.get("GPU" if self.uses_gpus else "slot", 0))})
            self.capacity = sum(self.capacities.values())
            if self.capacity == 0:
                raise ValueError("the Ray cluster has neither GPUs nor 'slot' resources to lease")
            if threads is None:
                threads = (threads_per_gpu("cuda", gpus=torch.cuda.device_count() or self.capacity)
                           if self.uses_gpus else threads_per_gpu("cpu"))
        except BaseException:
            self.close()
            raise
        self.threads = threads
        self.log: list[LeaseRecord] = []
        self.rounds = 0
        self.journal = journal
        self._detected: set[str] = set()
        self._resume()

    def checkpoint(self, job: int) -> Path:
        """The checkpoint file of trace job ``job``."""
        return self.folder / f"job-{job}.pt"

    def staged(self, job: int, round: int | None = None) -> Path:
        """Where trace job ``job``'s lease of ``round`` (default: the current one) saves its
        checkpoint, until the driver has its report."""
        return self.folder / f"job-{job}.next-{self.rounds if round is None else round}.pt"

    def _commit(self, job: int, gpus: int, missing_ok: bool = False, round: int | None = None) -> None:
        """A successful lease's checkpoint (and its data-parallel ranks' files) as the job's
        (``missing_ok``: where it is still staged)."""
        staged, checkpoint = self.staged(job, round), self.checkpoint(job)
        if missing_ok and not staged.exists():
            return
        for rank in range(1, gpus):
            os.replace(f"{staged}.rank{rank}", f"{checkpoint}.rank{rank}")
        os.replace(staged, checkpoint)

    def _resume(self) -> None:
        """Where the run resumes: the last journaled round's successful leases whose checkpoints
        the driver had not yet adopted adopted now, every other staged checkpoint (of a round
        never journaled) removed."""
        rounds = self.journal.rounds if self.journal is not None else []
        for lease in rounds[-1]["leases"] if rounds else []:
            if not lease["reason"]:
                self._commit(lease["job"], lease["gpus"], missing_ok=True, round=lease["round"])
        for path in self.folder.glob("job-*.next-*.pt*"):
            path.unlink(missing_ok=True)
        trained = sorted({lease["job"] for entry in rounds for lease in entry["leases"] if lease["trained"]})
        lost = [job for job in trained if not self.checkpoint(job).exists()]
        if lost:
            raise JournalError(f"{self.journal.path}: resuming needs the checkpoints of jobs {lost[:5]} in "
                               f"{self.folder} (the first run's checkpoint folder)")

    def _discard(self, job: int, gpus: int) -> None:
        """What a failed lease of ``job`` may have saved."""
        staged = self.staged(job)
        for path in (staged, *(Path(f"{staged}.rank{rank}") for rank in range(1, gpus))):
            path.unlink(missing_ok=True)

    def marker(self, job: int) -> Path:
        """The file holding the worker pid of ``job``'s running lease."""
        return self.folder / f"job-{job}.pid"

    def check_fits(self, gpus: dict[str, int], needs: str = "the cluster has") -> None:
        """Raise ValueError (``needs`` N GPUs; ...) unless the Ray cluster registered ``gpus``
        (GPUs per worker type)."""
        need = gpus if self.typed else {"": sum(gpus.values())}
        for t, n in need.items():
            if n > self.capacities.get(t, 0):
                raise ValueError(f"{needs} {n} {t + ' ' if t else ''}GPUs; the Ray cluster holds "
                                 f"{self.capacities.get(t, 0)} {'GPUs' if self.uses_gpus else 'slots'}"
                                 f"{' of that type' if t else ''}")

    def live_nodes(self):
        """The live Ray nodes that advertise the worker types (:func:`~runtime_bridge.placement.typed_nodes`)."""
        return typed_nodes(self.worker_types, ray.nodes())

    def execute(self, leases: Leases) -> LeaseResults:
        self.rounds += 1
        n = leases.jobs.size
        if n == 0:
            return LeaseResults(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool))
        replayed = None if self.journal is None else self.journal.replay(leases)
        if replayed is not None:
            results, records = replayed
            self.log += [LeaseRecord(**record) for record in records]
            return results
        types = [self.worker_types[t] if t < len(self.worker_types) else str(t) for t in leases.types.tolist()]
        need: dict[str, int] = {}
        for t, g in zip(types, leases.gpus.tolist()):
            need[t] = need.get(t, 0) + g
        self.check_fits(need, f"round {self.rounds} leases")
        nodes = self.live_nodes() if self.typed else []
        self._detected = {node.id for node in nodes if node.detected}
        placed = place(types, leases.gpus.tolist(), nodes) if self.typed else [("", "")] * n
        budgets = leases.budgets() * self.time_scale
        # the real steps that earn the plan (the tolerance keeps 8870 x 0.1 from rounding up to 888)
        caps = np.ceil(leases.steps * self.time_scale - 1e-9).astype(np.int64)
        refs = [None if refused else self._submit(int(job), types[i], int(gpus), node, int(cap), float(budget))
                for i, (job, gpus, cap, budget, (node, refused)) in enumerate(zip(leases.jobs, leases.gpus, caps,
                                                                                  budgets, placed))]
        submitted = [ref for ref in refs if ref is not None]
        timeout = float(budgets.max()) + self.grace
        ready, late = ray.wait(submitted, num_returns=len(submitted), timeout=timeout) if submitted else ([], [])
        for ref in late:
            ray.cancel(ref, force=True)
        ended = set(ready)
        steps, failed, reasons = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool), {}
        took, records = np.zeros(n), []
        for i, ref in enumerate(refs):
            job, planned = int(leases.jobs[i]), int(leases.steps[i])
            node, reason = placed[i]
            record = {"round": self.rounds, "start": leases.start, "job": job, "gpus": int(leases.gpus[i]),
                      "planned": planned, "planned_seconds": float(leases.seconds[i]),
                      "budget_seconds": float(budgets[i]), "worker_type": types[i]}
            if not reason and ref not in ended:
                reason = f"lease did not end within {timeout:.1f} s (cancelled)"
            if not reason:
                try:
                    start_step, trained, seconds, node = ray.get(ref)
                except LEASE_FAILURES as exc:
                    reason = _reason(exc)
            if reason:
                failed[i], reasons[job] = True, reason
                self._discard(job, int(leases.gpus[i]))
                records.append(LeaseRecord(**record, start_step=None, trained=0, seconds=0.0, credited=0,
                                           reason=reason, node=node))
                continue
            steps[i] = min(planned, round(trained / self.time_scale))
            took[i] = seconds / self.time_scale
            records.append(LeaseRecord(**record, start_step=start_step, trained=trained, seconds=seconds,
                                       credited=int(steps[i]), node=node))
        results = LeaseResults(steps, failed, reasons, took)
        if self.journal is not None:
            self.journal.append(leases, results, [asdict(record) for record in records])
        for job, gpus in zip(leases.jobs[~failed].tolist(), leases.gpus[~failed].tolist()):
            self._commit(job, gpus)
        self.log += records
        return results

    def _submit(self, job: int, worker_type: str, gpus: int, node: str, steps: int, seconds: float):
        held = task_resources(worker_type, gpus, node if self.typed else None, self.uses_gpus,
                              detected=node in self._detected)
        if "node" in held:
            held["scheduling_strategy"] = NodeAffinitySchedulingStrategy(held.pop("node"), soft=False)
        return _train_remote.options(**held).remote(
            asdict(self.specs[job]), str(self.checkpoint(job)), str(self.staged(job)), steps, seconds,
            "cuda" if self.uses_gpus else "cpu", gpus, self.threads, str(self.marker(job)))

    def lease_table(self) -> dict[str, np.ndarray]:
        """Every lease as a column table (``leases.csv``): :class:`LeaseRecord`'s fields plus
        ``credited_over_planned``: where a real run falls behind its simulation, lease by lease."""
        text = ("reason", "worker_type", "node")
        fields = [name for name in LeaseRecord.__dataclass_fields__ if name not in text]
        table = {name: np.array([getattr(lease, name) for lease in self.log], dtype=float) for name in fields}
        for name in ("round", "job", "gpus", "planned", "trained", "credited"):
            table[name] = table[name].astype(np.int64)
        table["credited_over_planned"] = np.divide(table["credited"], table["planned"],
                                                   out=np.full(len(self.log), np.nan), where=table["planned"] > 0)
        for name in text:
            table[name] = np.array([getattr(lease, name) for lease in self.log], dtype=object)
        return table

    def measured_rates(self) -> np.ndarray:
        """Steps/s each job trained at over its successful leases (NaN where none)."""
        trained, seconds = np.zeros(len(self.specs)), np.zeros(len(self.specs))
        for lease in self.log:
            trained[lease.job] += lease.trained
            seconds[lease.job] += lease.seconds
        return np.divide(trained, seconds, out=np.full(trained.shape, np.nan), where=seconds > 0)

    def table_rates(self) -> np.ndarray:
        """Steps per simulated second each job's successful leases were planned at (the
        throughput table's rate at the GPUs it held; NaN where none)."""
        planned, seconds = np.zeros(len(self.specs)), np.zeros(len(self.specs))
        for lease in self.log:
            if not lease.failed:
                planned[lease.job] += lease.planned
                seconds[lease.job] += lease.planned_seconds
        return np.divide(planned, seconds, out=np.full(planned.shape, np.nan), where=seconds > 0)

    def _start(self, address: str | None, slots: int) -> None:
        """Start Ray here (a Ray of its own, not one a ``ray start`` on this machine registered;
        ``RAY_ADDRESS`` still names a cluster to join), or connect to the cluster at ``address``,
        unless Ray is running in this process. Ctrl-C is held back until Ray has started (or
        stopped, by :meth:`close`): one that cuts either short leaves Ray's threads running into
        the process's exit, which then crashes (SIGSEGV)."""
        if ray.is_initialized():
            return
        quiet = {"log_to_driver": False, "logging_level": logging.ERROR}
        with interrupts_held():
            self.started = True
            if address is None:
                ray.init(address="local", num_cpus=slots, resources={"slot": slots}, include_dashboard=False,
                         **quiet)
            else:
                ray.init(address=address, **quiet)

    def close(self) -> None:
        """Stop Ray if this executor started it."""
        if self.started:
            with interrupts_held():
                ray.shutdown()
                self.started = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def task_resources(worker_type: str, gpus: int, node: str | None, uses_gpus: bool, detected: bool = False) -> dict:
    """The Ray options of a lease's task: ``gpus`` GPUs (or emulated ``slot`` resources, with no
    CPU held), and on a typed cluster (``node``: where :func:`~runtime_bridge.placement.place` put
    it) as many of its worker type's label resource unless the node's type was ``detected`` from
    its GPU model, pinned to ``node`` (as ``"node"``)."""
    held: dict = {"num_gpus": gpus} if uses_gpus else {"num_cpus": 0}
    if node is not None:
        if not detected:
            held["resources"] = {worker_type: gpus}
        held["node"] = node
    elif not uses_gpus:
        held["resources"] = {"slot": gpus}
    return held


def _reason(exc: Exception) -> str:
    """One line on why a lease failed: the task's own exception, or how its worker died."""
    cause = getattr(exc, "cause", None) if isinstance(exc, ray.exceptions.RayTaskError) else None
    if cause is not None:
        return f"{type(cause).__name__}: {cause}".splitlines()[0]
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
