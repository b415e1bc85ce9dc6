"""Lucid (ASPLOS '23) on Helios' virtual clusters, as its published simulator runs it
(S-Lab-System-Group/Lucid, ``simulation/policy/lucid.py``, ``placer/consolidateWithShare.py``,
``updater.py``; facts restated, no code taken), with its two models trained here on the past only:

- **Priority**: a job's estimated service, its duration estimated by the Workload Estimate Model
  (:mod:`allocators.lucid.additive`, refit every ``retrain_every`` ended jobs on the jobs that ended
  by then; features: VC, GPUs, the profiled workload's AMP flag, GPU and memory utilization and
  memory, hour of submission; the user too where the log names users) times its GPUs, fixed at its
  arrival. Before the first fit: the mean duration of the ended jobs (1 s without any), times its GPUs.
- **Indolent packing** (each decision, after ended jobs release their GPUs: a sharing partner that
  stays runs alone again at full speed and may host anew): the VC's queue, in priority order, is
  walked; a job of at most 8 GPUs shares the GPUs of the first running job, in start order, that
  runs alone on the same GPU count, whose memory beside it stays under the GPU's (24,576 MB), whose
  packing label plus its own is at most 2 (labels from the Packing Analyze Model,
  :mod:`allocators.lucid.packing_tree`) and whose priority is at least half its own; otherwise it
  starts alone where the consolidated placement finds its GPUs; otherwise it waits and the walk goes
  on (the artifact's sharing walk does not stop at the first job that cannot start). Both jobs of a
  pair run at their measured pair speeds (:mod:`simulator.sharing`).

- **Profiler** (on a cluster with an open VC, ``--profiling-nodes``: the artifact's Philly runs
  carve 2 nodes out of the cluster): an arriving job of at most ``profile_gpus`` GPUs (Philly: 2
  nodes x factor 2 = 4) queues for the profiling VC first, least GPUs first (ties in arrival
  order), and runs there for at most ``profile_seconds`` (Philly: 80 s), placed consolidated while
  the queue's head fits; a job done by then is done, the others join their VC's queue (their
  progress kept: the artifact starts them over in a parallel simulation of the VCs, here the
  profiler's run is real work on one timeline).

- **System tuner** (``tuner=True``; :mod:`allocators.lucid.tuner`): sharing off while the Throughput
  Predict Model forecasts at most 2 GPU jobs per 10 minutes, checked every 100 s; while it is off the
  walk starts jobs alone and stops at the first that cannot start (the artifact's walk without
  sharing). The artifact runs it on Venus only, from forecasts made offline; on Philly its sharing is
  always on, as ``lucid`` keeps it by default.

Not modelled: the profiler's echo scaling (Venus only, read from a log of an earlier run).
"""

from __future__ import annotations

import numpy as np

from allocators.helios.queued import HeliosPolicy
from allocators.lucid.additive import AdditiveModel
from allocators.lucid.packing_tree import PackingTree, profile_features
from allocators.lucid.tuner import SharingTuner
from allocators.slot_plans import JobState, JobsView, NodePlan
from optim import SolveOptions

_RUNNING, _DONE = int(JobState.RUNNING), int(JobState.DONE)
#: the largest job that may share GPUs, and the most a pair's packing labels may add to
SHARE_MAX_GPUS = 8
LABEL_BUDGET = 2
FEATURES = ("vc", "gpus", "amp", "gpu_util", "gmem_util", "gmem", "hour")
CATEGORICAL = (True, True, True, False, False, False, False)


class Lucid(HeliosPolicy):
    name = "lucid"
    system = "Lucid"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, retrain_every: int = 500,
                 profile_seconds: float = 80.0, profile_gpus: int = 4, tuner: bool = False):
        super().__init__(solver, options)
        if retrain_every < 1:
            raise ValueError(f"lucid: retrain_every must be >= 1, got {retrain_every}")
        if not profile_seconds > 0 or profile_gpus < 1:
            raise ValueError(f"lucid: profile_seconds must be > 0 and profile_gpus >= 1, got {profile_seconds} and "
                             f"{profile_gpus}")
        self.retrain_every = retrain_every
        self.profile_seconds, self.profile_gpus = float(profile_seconds), int(profile_gpus)
        #: the profiling VC (None: none), its queue, and each job on it with its start there
        self.prof: int | None = None
        self.prof_queue: list[int] = []
        self.profiling: dict[int, float] = {}
        self.profiled = 0
        self.queues: list[list[int]] = []
        #: guest job -> the job whose GPUs it shares
        self.host_of: dict[int, int] = {}
        self.model: AdditiveModel | None = None
        self.fits = 0
        self.use_tuner = bool(tuner)
        self.tuner: SharingTuner | None = None
        self.share = True

    def laid_out(self, view: JobsView) -> None:
        sharing = view.sharing
        if sharing is None:
            raise ValueError("policy lucid packs jobs by their profiled workloads and measured pair speeds: give "
                             "the jobs' profiles (--lucid-data DIR holding Lucid's single_data.csv and "
                             "colocate_info.csv)")
        J = len(view.state)
        self.queues = [[] for _ in range(len(self.bounds) - 1)]
        self.sharing = sharing
        self.tree = PackingTree.train(profile_features(sharing.profiles), sharing.profiles.label.astype(np.int64))
        self.label = self.tree.predict(profile_features(sharing.profiles))[sharing.profile]
        self.gmem = sharing.gmem(np.arange(J))
        p = sharing.profiles
        w = sharing.profile
        columns = [self.vc, view.requested, p.amp[w], p.gpu_util[w], p.gmem_util[w], p.gmem[w],
                   (view.submit % 86400) // 3600]
        self.feature_names, self.categorical = FEATURES, CATEGORICAL
        if view.user is not None:  # a log that names users (Helios'): the user too, as Lucid's model has it
            columns.append(view.user)
            self.feature_names, self.categorical = FEATURES + ("user",), CATEGORICAL + (True,)
        self.features = np.stack(columns, axis=1).astype(float)
        self.priority = np.zeros(J)
        self.estimated = np.full(J, np.nan)
        self.by_model = np.zeros(J, dtype=bool)
        self.ended: list[int] = []
        self.fitted_on = 0
        #: per VC, its running jobs in start order; a VC's version counts the changes that may let a job
        #: that could not start start now (GPUs freed, a job alone that may host); a job that failed
        #: at the current version is not tried again
        self.running: list[list[int]] = [[] for _ in self.queues]
        #: the jobs in ``running`` (so the jobs that ended since are found without walking it)
        self.in_running = np.zeros(J, dtype=bool)
        self.version = [0] * len(self.queues)
        self.failed_at = np.full(J, -1)
        #: the jobs in a pair now (neither may take another partner)
        self.sharing_now = np.zeros(J, dtype=bool)
        self.paired = 0
        self._duration = view.duration
        if view.vc_open is not None and view.vc_open.any():
            self.prof = int(np.flatnonzero(view.vc_open)[0])
        if self.use_tuner:
            self.tuner = SharingTuner(view.submit, view.requested > 0)

    def allocate(self, view: JobsView) -> NodePlan:
        arrived = self.profile(view, self.arrivals(view))
        self._hosts: dict[int, tuple] = {}
        share = self.may_share(view)
        for k, new in enumerate(arrived):
            self.walk(view, k, new, share)
        return self.plan()

    def may_share(self, view: JobsView) -> bool:
        """Whether jobs may share GPUs now (always, without the system tuner); when sharing comes
        back on, every VC's waiting jobs are tried again."""
        share = self.tuner is None or self.tuner.sharing(view.now)
        if share and not self.share:
            self.version = [v + 1 for v in self.version]
        self.share = share
        return share

    def walk(self, view: JobsView, k: int, new: np.ndarray, share: bool) -> None:
        """VC k's queue, with its arrivals ``new``, walked in priority order: each job shares or
        starts alone where it can; without ``share`` it starts alone and the first job that
        cannot stops the walk."""
        queue = self.queues[k]
        if new.size:
            queue.extend(new.tolist())
            queue.sort(key=self.priority.__getitem__)
        started = set()
        for j in queue:
            if self.failed_at[j] != self.version[k] and self._start_or_share(view, j, k, share):
                started.add(j)
                continue
            self.failed_at[j] = self.version[k]
            if not share:
                break
        self.queues[k] = [j for j in queue if j not in started]

    def profile(self, view: JobsView, arrived: list[np.ndarray]) -> list[np.ndarray]:
        """Ended jobs released, arrivals estimated; with a profiling VC, the arrivals it takes queue
        for it, the jobs whose profiling time is up leave it, and its queue starts (module doc).
        Returns the jobs that join each VC's queue now."""
        self.release_ended(view)
        for new in arrived:
            if new.size:
                self._estimate(view, new)
        if self.prof is None:
            return arrived
        if not any(new.size for new in arrived) and not self.profiling and not self.prof_queue:
            return arrived
        new = np.concatenate(arrived)
        large = view.requested[new] > self.profile_gpus
        out: list[list[int]] = [[] for _ in arrived]
        for j in new[large].tolist():
            out[int(self.vc[j])].append(j)
        small = new[~large]
        small = small[np.argsort(view.submit[small], kind="stable")].tolist()
        self.prof_queue.extend(small)
        self.prof_queue.sort(key=view.requested.__getitem__)
        up = [j for j, t in self.profiling.items() if view.now >= t + self.profile_seconds - 1e-9]
        if up:
            leaving = np.zeros(self.sharing_now.size, dtype=bool)
            leaving[up] = True
            self.release(leaving[self.entries[0]])
            for j in up:
                del self.profiling[j]
                out[int(self.vc[j])].append(j)
        started = 0
        for j in self.prof_queue:
            if not self.start(view, j, self.prof):
                break
            self.profiling[j] = view.now
            started += 1
        self.profiled += started
        del self.prof_queue[:started]
        return [np.array(sorted(jobs, key=view.submit.__getitem__), dtype=np.int64) for jobs in out]

    def next_decision(self, view: JobsView) -> float:
        """When the first job on the profiling VC is due to leave it; while the system tuner keeps
        sharing off and jobs wait, its next check (sharing may come back on)."""
        due = min(self.profiling.values(), default=np.inf) + self.profile_seconds
        if self.tuner is not None and not self.share and any(self.queues):
            due = min(due, self.tuner.next_check(view.now))
        return due

    def _start_or_share(self, view: JobsView, j: int, k: int, share: bool = True) -> bool:
        host = self._partner(view, j, k) if share and view.requested[j] <= SHARE_MAX_GPUS else None
        if host is not None:
            self.host_of[j] = host
            self.sharing_now[[j, host]] = True
            self.paired += 1
        elif self.start(view, j):
            self.version[k] += 1
        else:
            return False
        self.running[k].append(j)
        self.in_running[j] = True
        return True

    def _partner(self, view: JobsView, j: int, k: int) -> int | None:
        """The first running job, in start order, that job ``j`` may share with (module doc)."""
        running = self.running[k]
        if not running:
            return None
        cached = self._hosts.get(k)
        if cached is None or cached[0].size != len(running):
            hosts = np.array(running)
            cached = self._hosts[k] = (hosts, view.requested[hosts], self.gmem[hosts], self.label[hosts],
                                       self.priority[hosts], self.sharing.profile[hosts])
        hosts, gpus, gmem, label, priority, profile = cached
        p = self.sharing.profile[j]
        ok = (gpus == view.requested[j]) & ~self.sharing_now[hosts] & (gmem < self.sharing.memory_mb - self.gmem[j]) \
            & (label + self.label[j] <= LABEL_BUDGET) & (self.priority[j] <= 2 * priority) & \
            np.isfinite(self.sharing.speed[p, profile]) & np.isfinite(self.sharing.speed[profile, p])
        return int(hosts[np.argmax(ok)]) if ok.any() else None

    def release_ended(self, view: JobsView) -> None:
        """Ended guests leave their hosts; a host that ended hands its GPUs to its guest; then the
        ended jobs' GPUs are freed and the ended jobs join the estimator's history."""
        state = view.state
        jobs = self.entries[0]
        guests = np.fromiter(self.host_of, dtype=np.int64, count=len(self.host_of))
        hosts = np.fromiter(self.host_of.values(), dtype=np.int64, count=guests.size)
        held = np.concatenate([jobs, guests])
        guest_ended, host_ended = state[guests] != _RUNNING, state[hosts] != _RUNNING
        parted = np.flatnonzero(guest_ended | host_ended)
        for g, h, guest_gone in zip(guests[parted].tolist(), hosts[parted].tolist(), guest_ended[parted].tolist()):
            if not guest_gone:
                jobs[jobs == h] = g
            del self.host_of[g]
            self.sharing_now[[g, h]] = False
            self.version[int(self.vc[h])] += 1
        self.release(state[jobs] != _RUNNING)
        left = np.unique(held[self.in_running[held] & (state[held] != _RUNNING)])
        done = []
        if left.size:
            self.in_running[left] = False
            gone, ended = set(left.tolist()), set(left[state[left] == _DONE].tolist())
            for k in np.unique(self.vc[left]).tolist():
                done += [j for j in self.running[k] if j in ended]
                self.running[k] = [j for j in self.running[k] if j not in gone]
        for j in [j for j in self.profiling if state[j] != _RUNNING]:
            del self.profiling[j]
            done.append(j)
        self.ended.extend(done)

    def release(self, gone: np.ndarray) -> None:
        """The entries ``gone`` released; their VCs' versions move on."""
        if gone.any():
            for k in np.unique(np.searchsorted(self.bounds, self.entries[1][gone], side="right") - 1).tolist():
                self.version[k] += 1
        super().release(gone)

    def plan(self) -> NodePlan:
        own = super().plan()
        if not self.host_of:
            return own
        guests = np.fromiter(self.host_of.keys(), dtype=np.int64, count=len(self.host_of))
        hosts = np.fromiter(self.host_of.values(), dtype=np.int64, count=guests.size)
        order = np.argsort(hosts)
        hosts, guests = hosts[order], guests[order]
        at = np.minimum(np.searchsorted(hosts, own.jobs), hosts.size - 1)
        on = hosts[at] == own.jobs
        host_rows = own.jobs[on]
        guest_jobs = guests[at[on]]
        return NodePlan(np.concatenate([own.jobs, guest_jobs]), np.concatenate([own.nodes, own.nodes[on]]),
                        np.concatenate([own.gpus, own.gpus[on]]),
                        np.concatenate([np.full(own.jobs.size, -1), host_rows]))

    def _estimate(self, view: JobsView, new: np.ndarray) -> None:
        """Priorities of the arrivals ``new``: estimated duration x GPUs (module doc)."""
        if len(self.ended) - self.fitted_on >= self.retrain_every or (self.model is None and len(self.ended) >= 50):
            past = np.array(self.ended)
            self.model = AdditiveModel.fit(self.features[past], np.log1p(self._duration[past]), self.categorical,
                                           self.feature_names)
            self.fitted_on = len(self.ended)
            self.fits += 1
        if self.model is not None:
            duration = np.expm1(self.model.predict(self.features[new]))
            self.by_model[new] = True
        else:
            duration = np.full(new.size, self._duration[self.ended].mean() if self.ended else 1.0)
        self.estimated[new] = np.maximum(duration, 0.0)
        self.priority[new] = self.estimated[new] * view.requested[new]

    def notes(self) -> list[str]:
        if not hasattr(self, "tree"):
            return []
        jobs = np.flatnonzero(self.by_model)
        error = np.abs(self.estimated[jobs] - self._duration[jobs])
        mae = f"{error.mean():.0f} s (median {np.median(error):.0f} s)" if jobs.size else "none"
        return [f"lucid: Packing Analyze Model: a CART tree (depth <= 3) on Lucid's {len(self.sharing.profiles)} "
                f"profiled workloads, held-out accuracy {self.tree.accuracy:.2f} on {self.tree.held_out}",
                f"lucid: Workload Estimate Model: an additive model (EBM's model class by cyclic boosting, no "
                f"interactions) on {', '.join(self.feature_names)}, refit {self.fits} time(s) on ended jobs only, "
                f"every {self.retrain_every} ends; {jobs.size} jobs estimated by it, mean absolute error of their "
                f"durations {mae}; {self.paired} jobs started on another job's GPUs",
                f"lucid: profiler: {self.profiled} jobs of at most {self.profile_gpus} GPUs profiled for at most "
                f"{self.profile_seconds:g} s" if self.prof is not None else
                "lucid: no profiling VC (--profiling-nodes): every job queues in its VC at once"] + \
            ([self.tuner.note()] if self.tuner is not None else [])


__all__ = ["Lucid"]
