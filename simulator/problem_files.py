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
from simulator.readers.fields import LIMIT, Written, load_json, shown

#: the required fields, in the order they are written
FIELDS = ("worker_types", "capacities", "job_ids", "job_types", "scale_factors", "weights", "throughputs")
#: the fields of integers
INTEGERS = ("job_ids", "scale_factors")


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
    missing = [name for name in FIELDS if doc.get(name) is None]
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
        fields[name] = _numbers(value, f"{source}: field {name}", integer=name in INTEGERS,
                                infinite=name == "slo_remaining")
    pairs = doc.get("pairs")
    if pairs is not None:
        where = f"{source}: field pairs"
        if not isinstance(pairs, dict) or not {"first", "second", "rates"} <= set(pairs):
            raise ProblemFileError(f"{where}: expected first, second and rates lists")
        first = _numbers(pairs["first"], f"{where}.first", integer=True)
        rates = _numbers(pairs["rates"], f"{where}.rates")
        if rates.size != first.size * len(fields["worker_types"]) * 2:
            raise ProblemFileError(f"{where}.rates: expected {first.size} x {len(fields['worker_types'])} x 2 rates, "
                                   f"got {rates.size}")
        fields["pairs"] = JobPairs(first, _numbers(pairs["second"], f"{where}.second", integer=True),
                                   rates.reshape(first.size, len(fields["worker_types"]), 2))
    try:
        return AllocationProblem(**fields)
    except ProblemError as exc:
        raise ProblemFileError(f"{source}: {exc}") from None


def _numbers(value, where: str, integer: bool = False, infinite: bool = False) -> np.ndarray:
    """A (nested) list of numbers as an array: finite (``Infinity`` too where ``infinite``), below 2**63
    in magnitude, int64 integers where ``integer``; the first that is not is quoted as written."""
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ProblemFileError(f"{where}: expected numbers, got {shown(str(value))}") from None
    finite = np.isfinite(array)
    bad = np.isnan(array) | (~finite if not infinite else False) | (np.abs(np.where(finite, array, 0)) >= LIMIT)
    if integer:
        bad |= ~finite | (array != np.floor(array))
    if bad.any():
        k = int(np.argmax(bad.reshape(-1)))
        item = _flat(value)[k]
        text = "null" if item is None else item.text if isinstance(item, Written) else json.dumps(item)
        problem = ("expected an integer" if integer and np.isfinite(array.flat[k]) and abs(array.flat[k]) < LIMIT
                   else "out of range (beyond 64 bits)" if np.isfinite(array.flat[k]) else "must be finite")
        raise ProblemFileError(f"{where}: item {k + 1}: {problem}, got {shown(text)}")
    return array.astype(np.int64) if integer else array


def _flat(value) -> list:
    """The items of a nested list, in order (as numpy flattens its array)."""
    return [x for item in value for x in _flat(item)] if isinstance(value, list) else [value]


def read_problem_json(path: str | os.PathLike) -> tuple[AllocationProblem, dict]:
    """The problem in ``path`` (under ``"problem"``, or the document itself) and the whole document."""
    path = Path(path)
    doc = load_json(path, ProblemFileError)
    body = doc.get("problem", doc) if isinstance(doc, dict) else doc
    return problem_from_dict(body, str(path)), doc if isinstance(doc, dict) else {}


def _plain(value):
    """A JSON-ready copy of a problem field (numpy arrays as nested lists, tuples as lists)."""
    if value is None:
        return None
    return list(value) if isinstance(value, tuple) else np.asarray(value).tolist()
