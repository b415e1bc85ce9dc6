"""Hostile inputs for every reader: mutations of valid files, and the one contract each case is held to.

A :class:`Format` is a reader with a small valid seed file; :func:`cases` draws a mutation of the seed
(whole file: empty, binary, truncated mid-line, not UTF-8, NUL, BOM, CRLF; columns: missing, extra,
renamed, dropped; rows: duplicated, reordered; one field replaced by text, NaN, inf, negatives, zero,
numbers beyond 64 bits, thousands of digits; JSON and TOML values replaced, keys dropped or added,
nesting too deep). :func:`check` reads the case in-process and asserts the contract: the reader
returns, or raises its own error (a ValueError subclass) whose message is one line naming the file,
for a field the line and the column and the value as written, and no long number the file does not
hold; never another exception, never more than :data:`SECONDS`.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hypothesis import strategies as st

#: the longest a case may take to read (a hang is a failure)
SECONDS = 5.0
#: fields a mutation writes into a cell
FIELD_VALUES = (
    "", " ", "abc", "x y", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "-1", "-0",
    "0", "0.0", "0.5", "1.5", "2", "1e5", "+7", ".5", "5.", "1_000", "0x10", "٣", "²", "ü", "True", "1 2", "\x00",
    "99999999999999999999999", "-99999999999999999999999", "9223372036854775807", "9223372036854775808",
    "-9223372036854775809", "18446744073709551616", "1e19", "9.3e18", "9007199254740993", "9" * 5000,
    '"a,b"', "1,5", "strict", "best", "static", "2017-10-01 00:00:00", "2020-13-45 99:99:99",
)
#: JSON texts a mutation writes in place of a value
JSON_VALUES = (
    "null", "true", "false", '"x"', '""', "NaN", "Infinity", "-Infinity", "-1", "0", "0.5", "1e400", "-1e400",
    "1" + "0" * 30, "9" * 5000, "9223372036854775808", "[]", "{}", "[1, [2]]", '{"a": 1}', "[[[[[[1]]]]]]",
    "[" * 5000 + "]" * 5000,
)
#: TOML texts a mutation writes in place of a value
TOML_VALUES = (
    '"x"', '""', "nan", "inf", "-inf", "-1", "0", "0.5", "1e400", "1" + "0" * 30, "9" * 5000, "[]", "[1, [2]]",
    "{a = 1}", "true", '"{data}/x"', "1979-05-27", "[" * 3000 + "]" * 3000, "0x7fffffffffffffff",
)
BAD_BYTES = (b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\x00")


@dataclass(frozen=True)
class Format:
    """A reader under test: ``read(path)`` on a file (or folder) named ``name`` holding ``seed``;
    ``kind`` csv / tsv / json / toml; ``columns`` the names the reader gives a tab-separated
    file's columns (a CSV's are its header); ``errors`` the reader's own error classes."""

    label: str
    name: str
    seed: str
    kind: str
    read: Callable[[Path], object]
    errors: tuple[type[ValueError], ...]
    columns: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One mutation: the file's bytes and, where one field changed, its line, column and text."""

    op: str
    data: bytes
    line: int | None = None
    column: str | None = None
    value: str | None = None


def cases(fmt: Format) -> st.SearchStrategy[Case]:
    """Mutations of ``fmt.seed``."""
    common = [_whole_file(fmt.seed)]
    if fmt.kind in ("csv", "tsv"):
        return st.one_of(*common, _table_edit(fmt), _field(fmt), _field(fmt))
    if fmt.kind == "json":
        return st.one_of(*common, _json_edit(fmt.seed), _json_edit(fmt.seed))
    return st.one_of(*common, _toml_edit(fmt.seed), _toml_edit(fmt.seed))


def field_values() -> st.SearchStrategy[str]:
    """A cell's text: one of :data:`FIELD_VALUES`, any short text, a huge integer or any float."""
    return st.one_of(st.sampled_from(FIELD_VALUES), st.text(max_size=8),
                     st.integers(-2**70, 2**70).map(str), st.floats().map(repr))


@st.composite
def _whole_file(draw, seed: str) -> Case:
    data = seed.encode()
    op = draw(st.sampled_from(("empty", "blank", "binary", "truncate", "bad-byte", "bom", "crlf", "first-line",
                                "repeat")))
    if op == "empty":
        return Case(op, b"")
    if op == "blank":
        return Case(op, b"\n \n\t\n")
    if op == "binary":
        return Case(op, draw(st.binary(min_size=1, max_size=300)))
    at = draw(st.integers(0, len(data)))
    if op == "truncate":
        return Case(op, data[:at])
    if op == "bad-byte":
        return Case(op, data[:at] + draw(st.sampled_from(BAD_BYTES)) + data[at:])
    if op == "bom":
        return Case(op, b"\xef\xbb\xbf" + data)
    if op == "crlf":
        return Case(op, data.replace(b"\n", b"\r\n"))
    if op == "first-line":
        return Case(op, data[:data.find(b"\n") + 1])
    return Case(op, data * draw(st.integers(2, 3)))


def _grid(fmt: Format) -> tuple[list[list[str]], int, tuple[str, ...], str]:
    """The seed's rows of cells, the index of its first data row, its column names and separator."""
    sep = "\t" if fmt.kind == "tsv" else ","
    rows = [line.split(sep) for line in fmt.seed.rstrip("\n").split("\n")]
    return (rows, 0, fmt.columns, sep) if fmt.kind == "tsv" else (rows, 1, tuple(c.strip() for c in rows[0]), sep)


def _join(rows: list[list[str]], sep: str) -> bytes:
    return ("\n".join(sep.join(row) for row in rows) + "\n").encode("utf-8", "surrogatepass")


@st.composite
def _table_edit(draw, fmt: Format) -> Case:
    rows, first, names, sep = _grid(fmt)
    rows = [list(row) for row in rows]
    op = draw(st.sampled_from(("drop-column", "extra-column", "rename-header", "drop-cell", "extra-cell",
                                "duplicate-row", "reverse-rows", "swap-header", "no-header", "copy-field")))
    c = draw(st.integers(0, len(rows[0]) - 1))
    r = draw(st.integers(first, len(rows) - 1))
    if op == "drop-column":
        rows = [row[:c] + row[c + 1:] for row in rows]
    elif op == "extra-column":
        rows = [row + [draw(field_values())] for row in rows]
    elif op == "rename-header" and first:
        rows[0][c] = draw(st.sampled_from(("", "x", names[c].upper(), names[c] + " ", names[-1], "job id")))
    elif op == "swap-header" and first:
        d = draw(st.integers(0, len(rows[0]) - 1))
        rows[0][c], rows[0][d] = rows[0][d], rows[0][c]
    elif op == "drop-cell":
        rows[r] = rows[r][:c] + rows[r][c + 1:]
    elif op == "extra-cell":
        rows[r] = rows[r] + [draw(field_values())]
    elif op == "duplicate-row":
        rows.insert(draw(st.integers(first, len(rows))), list(rows[r]))
    elif op == "reverse-rows":
        rows[first:] = rows[first:][::-1]
    elif op == "no-header" and first:
        rows = rows[1:]
    elif op == "copy-field" and len(rows) - first > 1:  # duplicate ids, equal arrivals
        other = first if r != first else first + 1
        rows[r][c] = rows[other][c]
    return Case(op, _join(rows, sep))


@st.composite
def _field(draw, fmt: Format) -> Case:
    rows, first, names, sep = _grid(fmt)
    rows = [list(row) for row in rows]
    r = draw(st.integers(first, len(rows) - 1))
    c = draw(st.integers(0, len(rows[r]) - 1))
    value = draw(field_values())
    rows[r][c] = value
    plain = sep not in value and "\n" not in value and "\r" not in value and '"' not in value
    return Case("field", _join(rows, sep), r + 1 if plain else None, names[c] if c < len(names) else None, value)


def _paths(doc, prefix=()) -> list[tuple]:
    """Every path to a value of a JSON document (keys and indices)."""
    out = [prefix] if prefix else []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        out.extend(_paths(value, (*prefix, key)))
    return out


SENTINEL = "\x01MUTATED\x01"


@st.composite
def _json_edit(draw, seed: str) -> Case:
    doc = json.loads(seed)
    if draw(st.integers(0, 9)) == 0:
        return Case("deep", ("[" * 100_000).encode())
    path = draw(st.sampled_from(_paths(doc)))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    op = draw(st.sampled_from(("replace", "replace", "replace", "drop", "add")))
    if op == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
        return Case(op, json.dumps(doc).encode())
    if op == "add" and isinstance(parent, dict):
        parent[draw(st.sampled_from(("extra", "null", "('Z', 1)", "", path[-1] + "x")))] = 1
        return Case(op, json.dumps(doc).encode())
    parent[path[-1]] = SENTINEL
    value = draw(st.sampled_from(JSON_VALUES))
    return Case("replace", json.dumps(doc).replace(json.dumps(SENTINEL), value).encode(), value=value)


@st.composite
def _toml_edit(draw, seed: str) -> Case:
    lines = seed.rstrip("\n").split("\n")
    i = draw(st.integers(0, len(lines) - 1))
    key, eq, _ = lines[i].partition(" = ")
    op = draw(st.sampled_from(("replace", "replace", "drop", "rename", "duplicate")))
    if op == "drop":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "rename":
        name = draw(st.sampled_from(("x", "[x]", "[axes.x]", "policy", "round", "sweep", "fixed", "'a b'")))
        lines[i] = f"{name} = {_ or '1'}" if eq else name
    elif eq:
        value = draw(st.sampled_from(TOML_VALUES))
        lines[i] = f"{key} = {value}"
        return Case(op, ("\n".join(lines) + "\n").encode(), value=value)
    return Case(op, ("\n".join(lines) + "\n").encode())


_LONG_NUMBER = re.compile(r"\d{6,}")
_ESCAPE = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def check(fmt: Format, path: Path, case: Case) -> str | None:
    """Read ``case`` (already written at ``path``) and assert the contract (module doc); the error
    message, or None where the reader accepted the file."""
    start = time.perf_counter()
    try:
        fmt.read(path)
        message = None
    except fmt.errors as exc:
        message = str(exc)
    elapsed = time.perf_counter() - start
    assert elapsed < SECONDS, f"{fmt.label} {case.op}: {elapsed:.1f} s"
    if message is None:
        return None
    assert "\n" not in message and "\r" not in message, message
    assert str(path) in message, message
    text = case.data.decode("utf-8", "replace") + "".join(fmt.extra.values())
    body = _ESCAPE.sub("", message.replace(str(path), ""))
    for number in _LONG_NUMBER.findall(body):
        assert number in text, f"{number} is not in the file: {message}"
    if case.line is not None:
        assert re.search(re.escape(str(path)) + r":\d+: ", message), f"no line named: {message}"
    if case.line is not None and f"{path}:{case.line}:" in message and case.column is not None:
        assert case.column in message, f"column {case.column!r} not named: {message}"
        value = case.value.strip()
        if value.isascii() and value.isprintable() and value and len(value) < 50:
            assert value in message, f"value {value!r} not quoted: {message}"
    return message
