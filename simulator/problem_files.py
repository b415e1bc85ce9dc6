"""An allocation snapshot as JSON: what ``schedopt check`` writes for a counterexample and
``schedopt solve --problem FILE.json`` replays.

The document holds the :class:`~formulations.AllocationProblem`'s fields by name (arrays as lists,
``null`` for an optional field that is absent, ``Infinity`` for an unlimited SLO) under
``"problem"``; anything else in the document (the policy, the property that failed, the
allocation) is the writer's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from formulations import AllocationProblem, JobPairs, ProblemError
from formulations.problem import OPTIONAL_ARRAYS

#: the required fields, in the order they are written
FIELDS = ("worker_types", "capacities", "job_ids", "job_types", "scale_factors", "weights", "throughputs")


class ProblemFileError(ValueError):
    """A problem file that cannot be read; the message names the file and field."""


def problem_to_dict(problem: AllocationProblem) -> dict:
    """``problem`` as plain JSON values (see the module docstring)."""
    doc = {name: _plain(getattr(problem, name)) for name in (*FIELDS, *OPTIONAL_ARRAYS)}
    pairs = problem.pairs
    doc["pairs"] = None if pairs is None else {"first": pairs.first.tolist(), "second": pairs.second.tolist(),
                                               "rates": pairs.rates.tolist()}
    return doc


def problem_from_dict(doc: dict, source: str = "problem") -> AllocationProblem:
    """The problem a :func:`problem_to_dict` document describes; a missing or malformed field
    is a :class:`ProblemFileError` naming ``source`` and the field."""
    if not isinstance(doc, dict):
        raise ProblemFileError(f"{source}: expected a JSON object with the fields {', '.join(FIELDS)}")
    missing = [name for name in FIELDS if name not in doc]
    if missing:
        raise ProblemFileError(f"{source}: missing field(s) {', '.join(missing)}")
    fields = {}
    for name in (*FIELDS, *OPTIONAL_ARRAYS):
        value = doc.get(name)
        if value is None:
            continue
        if name in ("worker_types", "job_types"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ProblemFileError(f"{source}: field {name}: expected a list of strings")
            fields[name] = tuple(value)
            continue
        try:
            fields[name] = np.array(value, dtype=np.int64 if name == "job_ids" else float)
        except (TypeError, ValueError, OverflowError):
            raise ProblemFileError(f"{source}: field {name}: expected numbers, got {str(value)[:60]}") from None
    pairs = doc.get("pairs")
    if pairs is not None:
        try:
            first = np.array(pairs["first"], dtype=np.int64)
            rates = np.array(pairs["rates"], dtype=float).reshape(first.size, len(doc["worker_types"]), 2)
            fields["pairs"] = JobPairs(first, np.array(pairs["second"], dtype=np.int64), rates)
        except (KeyError, TypeError, ValueError, OverflowError):
            raise ProblemFileError(f"{source}: field pairs: expected first, second and rates lists") from None
    try:
        return AllocationProblem(**fields)
    except ProblemError as exc:
        raise ProblemFileError(f"{source}: {exc}") from None


def read_problem_json(path: str | os.PathLike) -> tuple[AllocationProblem, dict]:
    """The problem in ``path`` (under ``"problem"``, or the document itself) and the whole document."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ProblemFileError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise ProblemFileError(f"{path}: not UTF-8 text") from None
    body = doc.get("problem", doc) if isinstance(doc, dict) else doc
    return problem_from_dict(body, str(path)), doc if isinstance(doc, dict) else {}


def _plain(value):
    """A JSON-ready copy of a problem field (numpy arrays as nested lists, tuples as lists)."""
    if value is None:
        return None
    return list(value) if isinstance(value, tuple) else np.asarray(value).tolist()
