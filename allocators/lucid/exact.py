"""``lucid-exact``: Lucid with its greedy packing walk replaced by one integer program per decision
and virtual cluster (:mod:`formulations.lucid_pairing`), solved by the policy's solver.

The waiting jobs, the running jobs that may host (alone, in the VC) and the pairs Lucid's rules
allow (:mod:`allocators.lucid.lucid`: the same GPU count of at most 8, memory, packing labels,
priority) go into the program; each job is worth its speed over its estimated duration, a pair its
guest's worth at its pair speed less its host's loss over the host's estimated remaining time.
The jobs it starts alone are placed in priority order (consolidated; one that no longer fits a
node waits), the pairs on their hosts' GPUs. Everything else (estimators, release, the engine's
pair speeds) is Lucid's. A VC's program is solved again only when its queue, hosts or free GPUs
changed.
"""

from __future__ import annotations

import numpy as np

from allocators.lucid.lucid import LABEL_BUDGET, SHARE_MAX_GPUS, Lucid
from allocators.slot_plans import JobsView, NodePlan
from formulations.lucid_pairing import PairingProblem, solve_pairing
from optim import SolveOptions


class LucidExact(Lucid):
    name = "lucid-exact"

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, retrain_every: int = 500,
                 profile_seconds: float = 80.0, profile_gpus: int = 4, tuner: bool = False):
        super().__init__(solver, options, retrain_every, profile_seconds, profile_gpus, tuner)
        self.decisions = self.solves = 0
        self.unsolved: list[str] = []
        self._seen: dict[int, tuple] = {}

    def allocate(self, view: JobsView) -> NodePlan:
        arrived = self.profile(view, self.arrivals(view))
        if not self.may_share(view):  # the system tuner turned sharing off: Lucid's walk, alone
            self._hosts = {}
            for k, new in enumerate(arrived):
                self.walk(view, k, new, False)
            self._seen.clear()
            return self.plan()
        for k, new in enumerate(arrived):
            queue = self.queues[k]
            if new.size:
                queue.extend(new.tolist())
                queue.sort(key=self.priority.__getitem__)
            if queue:
                started = self._decide(view, k, queue)
                self.queues[k] = [j for j in queue if j not in started]
        return self.plan()

    def _decide(self, view: JobsView, k: int, queue: list[int]) -> set[int]:
        hosts = np.array([h for h in self.running[k] if not self.sharing_now[h]], dtype=np.int64)
        lo, hi = int(self.bounds[k]), int(self.bounds[k + 1])
        free = int(self.free[lo:hi].sum())
        signature = (tuple(queue), tuple(hosts.tolist()), free)
        if self._seen.get(k) == signature:
            return set()
        self._seen[k] = signature
        waiting = np.array(queue, dtype=np.int64)
        w_idx, h_idx = self._pairs(view, waiting, hosts)
        speed_w, speed_h = self.sharing.pair(waiting[w_idx], hosts[h_idx])
        duration = np.maximum(self.estimated[waiting], 1.0)
        paired_hosts = hosts[h_idx]
        remaining = np.maximum(np.maximum(self.estimated[paired_hosts], 1.0) - view.executed[paired_hosts], 1.0)
        value = speed_w / duration[w_idx] - (1.0 - speed_h) / remaining
        keep = value > 0
        problem = PairingProblem(view.requested[waiting].astype(np.int64), 1.0 / duration, w_idx[keep],
                                 h_idx[keep], value[keep], free)
        pairing = solve_pairing(problem, self.solver)
        self.decisions += 1
        self.solves += pairing.solved
        if pairing.note:
            self.unsolved.append(pairing.note)
        started = set()
        for w in np.flatnonzero(pairing.host >= 0).tolist():
            j, h = int(waiting[w]), int(hosts[pairing.host[w]])
            self.host_of[j] = h
            self.sharing_now[[j, h]] = True
            self.paired += 1
            started.add(j)
        for w in np.flatnonzero(pairing.alone).tolist():
            if self.start(view, int(waiting[w])):
                started.add(int(waiting[w]))
        self.running[k].extend(j for j in queue if j in started)
        self.in_running[list(started)] = True
        return started

    def _pairs(self, view: JobsView, waiting: np.ndarray, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(waiting index, host index) of every pair Lucid's rules allow, with measured speeds."""
        w, h = np.meshgrid(np.arange(waiting.size), np.arange(hosts.size), indexing="ij")
        w, h = w.ravel(), h.ravel()
        a, b = waiting[w], hosts[h]
        gpus = view.requested[a]
        ok = (gpus <= SHARE_MAX_GPUS) & (gpus == view.requested[b]) & \
            (self.gmem[b] < self.sharing.memory_mb - self.gmem[a]) & (self.label[a] + self.label[b] <= LABEL_BUDGET) & \
            (self.priority[a] <= 2 * self.priority[b])
        w, h = w[ok], h[ok]
        mine, theirs = self.sharing.pair(waiting[w], hosts[h])
        measured = np.isfinite(mine) & np.isfinite(theirs)
        return w[measured], h[measured]

    def notes(self) -> list[str]:
        out = super().notes()
        if hasattr(self, "tree"):
            out.append(f"lucid-exact: {self.decisions} pairing decision(s), {self.solves} of them solved by "
                       f"{self.solver} (the others plain: every job fits and is worth most alone, or none fits "
                       f"and none may pair)"
                       + (f"; {len(self.unsolved)} gave no solution (first: {self.unsolved[0]})" if self.unsolved
                          else ""))
        return out


__all__ = ["LucidExact"]
