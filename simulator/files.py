"""Small file helpers shared by readers and writers."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: str | os.PathLike, text: str | bytes) -> None:
    """Write ``text`` to ``path`` via a temporary file, so no half-written file is left (an
    interrupt, Ctrl-C included, removes the temporary file); the file gets the user's umask, as
    ``open`` would give it (the temporary file is created private)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def current_umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: the files schedopt writes as a run's or a benchmark's results
RESULT_FILES = ("summary.json", "jobs.csv", "timeline.csv", "solves.csv", "allocations.csv", "leases.csv",
                "bench.csv", "bench.parquet", "bench.png", "machine.json", "results.csv", "results.parquet",
                "experiment.json", "report.html")


class ResultsExistError(ValueError):
    """An output folder already holds results and ``--overwrite`` was not given."""


def check_out_dir(out: str | os.PathLike | None, overwrite: bool, option: str = "--out") -> None:
    """Refuse an output folder that is a file, or that holds results (:data:`RESULT_FILES`) unless
    ``overwrite``: a new run never silently replaces an earlier one."""
    if out is None:
        return
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{option} {out}: exists and is not a directory")
    held = [name for name in RESULT_FILES if (out / name).exists()]
    if held and not overwrite:
        raise ResultsExistError(f"{option} {out}: holds results of an earlier run ({', '.join(held[:3])}"
                                f"{', ...' if len(held) > 3 else ''}); give --overwrite to replace them, or "
                                f"another folder")
