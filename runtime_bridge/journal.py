"""A real run's journal: what every round's leases did, so a run whose driver stopped (Ctrl-C, a
crash, a lost head machine) resumes from its run folder (``schedopt run --resume``).

``journal.jsonl`` holds one JSON line per round executed: the round's plan (start, jobs, worker
types, GPUs, planned steps) and what its leases did (the :class:`~simulator.executor.LeaseResults`
credited and every lease's record). A round is appended, and flushed to disk, after its leases
have all reported and before their checkpoints become the jobs' (the executor commits them
after :meth:`Journal.append`), so a journaled round's successful leases are never lost and an
unjournaled round left nothing behind but its ``.next-<round>`` checkpoints (removed on resuming).

Resuming, the engine (deterministic) plans the same rounds again: each journaled round is answered
from the journal after checking that its plan is the one journaled (else the run was started with
other inputs, and resuming stops with the round that differs); the first round past the journal
runs for real. Floats round-trip exactly through JSON, so the replayed run credits to the bit what
the first did.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from simulator.executor import LeaseResults, Leases

#: the journal's format, in its first line
VERSION = 1


class JournalError(ValueError):
    """A journal that cannot be resumed from (the message names the file and the round)."""


class Journal:
    """The journal at ``path``: a new one (any journal there is replaced), or with ``resume`` the
    one there, whose rounds :meth:`replay` answers in order."""

    def __init__(self, path: str | os.PathLike, resume: bool = False):
        self.path = Path(path)
        self.rounds: list[dict] = []
        if resume:
            self.rounds = _read(self.path)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"journal": VERSION}) + "\n")
        self.replayed = 0

    def replay(self, leases: Leases) -> tuple[LeaseResults, list[dict]] | None:
        """The next journaled round's results and lease records, where one is left (None: run
        this round for real); :class:`JournalError` where its plan is not ``leases``."""
        if self.replayed >= len(self.rounds):
            return None
        entry = self.rounds[self.replayed]
        self.replayed += 1
        plan = _plan(leases)
        for key, value in plan.items():
            if entry[key] != value:
                raise JournalError(f"{self.path}: round {self.replayed} was journaled with other {key} than this run "
                                   "plans (was the run started with other inputs or options?)")
        done = entry["results"]
        results = LeaseResults(np.array(done["steps"], dtype=np.int64), np.array(done["failed"], dtype=bool),
                               {int(job): reason for job, reason in done["reasons"].items()},
                               None if done["seconds"] is None else np.array(done["seconds"], dtype=float))
        return results, entry["leases"]

    def append(self, leases: Leases, results: LeaseResults, records: list[dict]) -> None:
        """Journal one round executed for real, on disk before this returns."""
        seconds = None if results.seconds is None else results.seconds.tolist()
        entry = _plan(leases) | {
            "results": {"steps": results.steps.tolist(), "failed": results.failed.tolist(),
                        "reasons": {str(job): reason for job, reason in results.reasons.items()},
                        "seconds": seconds},
            "leases": records}
        with open(self.path, "a") as fh:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.rounds.append(entry)
        self.replayed = len(self.rounds)


def _plan(leases: Leases) -> dict:
    return {"start": float(leases.start), "jobs": leases.jobs.tolist(), "types": leases.types.tolist(),
            "gpus": leases.gpus.tolist(), "steps": leases.steps.tolist()}


def _read(path: Path) -> list[dict]:
    """The rounds journaled at ``path`` (a last line cut short by the crash is left out)."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise JournalError(f"{path}: no journal to resume from (was the run started with this --out?)") from None
    try:
        head = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("journal") != VERSION:
        raise JournalError(f"{path}:1: not a schedopt run journal (version {VERSION})")
    rounds = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break  # the crash cut the last round's line: that round runs again
            raise JournalError(f"{path}:{number}: not a JSON line") from None
        if not isinstance(entry, dict) or not {"start", "jobs", "results", "leases"} <= entry.keys():
            raise JournalError(f"{path}:{number}: not a journaled round")
        rounds.append(entry)
    return rounds
