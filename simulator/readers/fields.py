"""Fields read from files, converted and range-checked in one place before they reach numpy.

Every reader converts its numbers here (:func:`parse_numbers` for a column, :func:`parse_number` for
one field, :func:`json_number` for a value of a JSON document) and decodes its bytes with
:func:`read_text`. A number is decimal ASCII text (sign, digits, point, exponent; ``inf`` and ``nan``
spelt out), finite unless the field allows infinity, of magnitude below 2**63 so that no count wraps
and no time overflows downstream, and an integer, held exactly, where the field counts something.
A field that fails raises the reader's own error, built by the caller's ``error`` from the problem,
which quotes the text as written (:func:`shown`), so a message never names a number the file does
not hold.
"""

from __future__ import annotations

import json
import math
import os
import re
from decimal import Decimal
from typing import Callable, Sequence

import numpy as np

#: the largest magnitude a number may have (the int64 range)
LIMIT = 2.0**63
#: the largest magnitude below which every integer is a float exactly
EXACT = 2.0**53
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE | re.ASCII)
#: characters of a quoted value in a message, at most
SHOWN = 60


def shown(text: str) -> str:
    """``text`` quoted for a message: its first characters where it is long, never a newline."""
    return repr(text if len(text) <= SHOWN else text[:SHOWN - 3] + "...")


def parse_numbers(texts: Sequence[str], error: Callable[[int, str], Exception], *, minimum: float = -math.inf,
                  strict: bool = False, integer: bool = False, finite: bool = True) -> np.ndarray:
    """The texts as float64 (int64 when ``integer``), each >= ``minimum`` (> when ``strict``), finite
    unless ``finite`` is False (an integer always is), of magnitude below :data:`LIMIT`;
    ``error(i, problem)`` builds the exception for the first item that is not."""
    texts = list(texts)
    finite = finite or integer
    joined = "".join(texts)
    try:
        if not joined.isascii() or "_" in joined:
            raise ValueError
        array = np.array(texts, dtype=float)
    except ValueError:  # find the culprit
        for i, text in enumerate(texts):
            if not _NUMBER.fullmatch(text.strip()):
                raise error(i, f"expected a number, got {shown(text)}") from None
        array = np.array(texts, dtype=float)
    real = np.isfinite(array)
    large: dict[int, str] = {}  # beyond LIMIT, or beyond 2**53 in an integer field: read exactly
    exact: dict[int, int] = {}
    for i in np.flatnonzero(real & (np.abs(array) >= (EXACT if integer else LIMIT))).tolist():
        value = Decimal(texts[i].strip())
        if abs(value) >= LIMIT:
            large[i] = "out of range (beyond 64 bits)"
        elif value != value.to_integral_value():
            large[i] = "expected an integer"
        else:
            exact[i] = int(value)
    bad = (array <= minimum) if strict else (array < minimum)
    if finite:
        bad |= ~real
    if integer:
        bad |= real & (array != np.floor(array))
    bad[list(large)] = True
    if bad.any():
        i = int(np.argmax(bad))
        if not real[i]:
            problem = "must be finite"
        elif i in large:
            problem = large[i]
        elif array[i] < minimum or (strict and array[i] == minimum):
            problem = f"must be {'>' if strict else '>='} {minimum:g}"
        else:
            problem = "expected an integer"
        raise error(i, f"{problem}, got {shown(texts[i])}")
    if not integer:
        return array
    array[list(exact)] = 0.0
    out = array.astype(np.int64)
    for i, value in exact.items():
        out[i] = value
    return out


def parse_number(text: str, error: Callable[[str], Exception], **checks) -> float | int:
    """One field as :func:`parse_numbers` reads a column (``checks`` its keywords); ``error(problem)``."""
    return parse_numbers([text], lambda _, problem: error(problem), **checks)[0].item()


def json_number(value, error: Callable[[str], Exception], **checks) -> float | int:
    """A JSON (or TOML) document's value as a number checked as :func:`parse_numbers` checks text, an
    int where the document has an integer (a boolean, string, null or container is not a number);
    ``error(problem)``, the value quoted as written where :func:`load_json` read it, else as JSON
    writes it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"expected a number, got {_kind(value)}")
    if isinstance(value, int):
        return parse_number(str(value), error, **{**checks, "integer": True})
    return parse_number(value.text if isinstance(value, Written) else json.dumps(value), error, **checks)


def _kind(value) -> str:
    if isinstance(value, str):
        return shown(value)
    return json.dumps(value) if value is None or isinstance(value, bool) else f"a JSON {type(value).__name__}"


class Written(float):
    """A JSON number with a fraction, an exponent or a constant (``NaN``, ``Infinity``), or an integer
    of more than 20 digits (beyond 64 bits; Python reads none of over 4,300), with its text: ``1e400``
    reads as inf, and a message quotes the text."""

    text: str

    def __new__(cls, text: str) -> Written:
        value = super().__new__(cls, text)
        value.text = text
        return value


def _integer(digits: str) -> int | Written:
    return int(digits) if len(digits) <= 20 else Written(digits)


def read_text(path: str | os.PathLike, failure: type[ValueError], separator: str | None = None,
              columns: Callable[[bytes, int, int], str] | None = None) -> str:
    """The file's text; unreadable is ``failure`` naming the file, bytes that are not UTF-8 (a BOM is
    dropped) ``failure`` naming their line and, where fields are split by ``separator``, their column
    (``columns(data, line, k)``: the name of field k, counted from 0, on that line; else its number)."""
    src = os.fspath(path)
    try:
        with open(src, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise failure(f"{src}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        where = f"{src}:{line}"
        if separator is not None:
            field = data.count(separator.encode(), start, exc.start)
            where += f": column {columns(data, line, field) if columns is not None else field + 1}"
        raise failure(f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def load_json(path: str | os.PathLike, failure: type[ValueError]):
    """The file's JSON document; what is not JSON (too deep, an integer of thousands of digits
    included) is one ``failure`` line naming the file and, where known, line and column."""
    src = os.fspath(path)
    text = read_text(src, failure)
    try:
        return json.loads(text, parse_float=Written, parse_constant=Written, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise failure(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise failure(f"{src}: invalid JSON: nested too deeply") from None
