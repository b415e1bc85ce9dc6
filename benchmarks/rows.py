"""Writing a benchmark's result rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from simulator.files import write_atomically


def write_rows(rows: list[dict], path: Path) -> None:
    """``rows`` (dicts with the same keys) as a CSV file, written atomically."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text.getvalue())
