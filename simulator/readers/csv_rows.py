"""Comma-separated input files as checked rows: the one reader core of the CSV formats
(:mod:`.elasticflow_traces`, :mod:`.node_cluster`, :mod:`.iteration_tables`, :mod:`.helios_logs`,
:mod:`.lucid_measurements`). Every error is the reader's own input-error class, one line naming
file, line and column; numbers are converted and checked by :mod:`.fields`."""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from typing import Sequence, TypeVar

import numpy as np

from simulator.readers.fields import parse_numbers, read_text


@dataclass(frozen=True)
class CsvRows:
    """A comma-separated file: stripped header, rows of equal width, 1-based line numbers (blank lines
    skipped); ``failure``: the reader's input-error class."""

    source: str
    header: tuple[str, ...]
    header_line: int
    rows: list[list[str]]
    lines: list[int]
    failure: type[ValueError] = ValueError

    def error(self, row: int, column: str, problem: str) -> ValueError:
        return self.failure(f"{self.source}:{self.lines[row]}: column {column}: {problem}")

    def missing(self, names: Sequence[str]) -> list[str]:
        return [name for name in names if name not in self.header]

    def require(self, names: Sequence[str], what: str) -> None:
        if missing := self.missing(names):
            raise self.failure(f"{self.source}:{self.header_line}: not a {what} header: missing column(s) "
                               f"{', '.join(missing)} (expected {','.join(names)})")

    def column(self, name: str) -> list[str]:
        i = self.header.index(name)
        return [row[i].strip() for row in self.rows]

    def names(self, name: str) -> np.ndarray:
        """The column as non-empty strings (object array)."""
        texts = self.column(name)
        for i, text in enumerate(texts):
            if not text:
                raise self.error(i, name, "empty")
        return np.array(texts, dtype=object)

    def numbers(self, name: str, *, minimum: float = -math.inf, strict: bool = False, integer: bool = False,
                finite: bool = True) -> np.ndarray:
        """The column as floats (int64 when ``integer``), each >= ``minimum`` (> when ``strict``)."""
        return parse_numbers(self.column(name), lambda i, problem: self.error(i, name, problem),
                             minimum=minimum, strict=strict, integer=integer, finite=finite)


R = TypeVar("R", bound=CsvRows)


def _header_name(data: bytes, line: int, field: int) -> str:
    """The name of field ``field`` (from 0) in the header of a file whose line ``line`` it is on (its number
    on the header line or where the header is shorter)."""
    head = data[:data.find(b"\n")].decode("utf-8", "replace").split(",") if line > 1 else []
    return head[field].strip() if field < len(head) else str(field + 1)


def read_csv_rows(path: str | os.PathLike, what: str, failure: type[ValueError], rows: type[R] = CsvRows) -> R:
    """Read a CSV file whose first non-blank line is a header; every row must have its width; bytes that
    are not UTF-8 are an error naming their line and column. Errors are ``failure``; the result a ``rows``."""
    src = os.fspath(path)
    text = read_text(src, failure, ",", _header_name)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        records = [(reader.line_num, row) for row in reader if len(row) > 1 or (row and row[0].strip())]
    except csv.Error as exc:
        raise failure(f"{src}:{reader.line_num}: {exc}") from None
    if not records:
        raise failure(f"{src}:1: empty file, expected a {what} header")
    header = tuple(cell.strip() for cell in records[0][1])
    for line, row in records[1:]:
        if len(row) < len(header):
            raise failure(f"{src}:{line}: column {header[len(row)]}: missing (the row has {len(row)} of the "
                          f"header's {len(header)} columns)")
        if len(row) > len(header):
            raise failure(f"{src}:{line}: column {len(header) + 1}: extra value {row[len(header)]!r} (the header "
                          f"has {len(header)} columns)")
    return rows(src, header, records[0][0], [row for _, row in records[1:]], [line for line, _ in records[1:]],
                failure)
