"""Small file helpers shared by readers and writers.

Every file schedopt writes goes through :func:`atomic_file` (or :func:`write_atomically`): it is
written to a temporary sibling ``.NAME.*.tmp`` and renamed over ``NAME``, with Ctrl-C held back
until the rename is done, so an interrupt leaves each file whole or absent and no temporary file
(only a process killed outright, ``kill -9``, can leave one).
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w") -> Iterator:
    """A file object (``mode`` ``"w"`` or ``"wb"``) whose content becomes ``path`` when the block
    ends, whole, or never, when it raises; the file gets the user's umask, as ``open`` would give it
    (the temporary file is created private)."""
    path = Path(path)
    with interrupts_held():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        except OSError as exc:
            raise OSError(f"cannot write {path}: {exc.strerror}") from None
        try:
            with os.fdopen(fd, mode) as fh:
                yield fh
            os.chmod(tmp, 0o666 & ~current_umask())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def write_atomically(path: str | os.PathLike, text: str | bytes) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, "wb" if isinstance(text, bytes) else "w") as fh:
        fh.write(text)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold back SIGINT (Ctrl-C) while the block runs and deliver it when the block ends (in the
    main thread, where Python handles it; elsewhere, or where a handler outside Python holds it, the
    block just runs)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    caught: list = []
    signal.signal(signal.SIGINT, lambda *received: caught.append(received))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and callable(previous):
            previous(*caught[0])
        elif caught and previous == signal.SIG_DFL:
            os.kill(os.getpid(), signal.SIGINT)


def current_umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: what schedopt writes as a run's or a benchmark's results (``checkpoints``: the folder of a real
#: run's checkpoints, counted when it holds a file)
RESULT_FILES = ("summary.json", "jobs.csv", "timeline.csv", "solves.csv", "allocations.csv", "leases.csv",
                "fidelity.csv", "checkpoints", "journal.jsonl", "bench.csv", "bench.parquet", "bench_summary.csv",
                "bench.png", "machine.json", "results.csv", "results.parquet", "experiment.json", "report.html")


class ResultsExistError(ValueError):
    """An output folder already holds results and ``--overwrite`` was not given."""


def held_results(out: str | os.PathLike | None) -> list[str]:
    """The names of :data:`RESULT_FILES` that the folder ``out`` holds."""
    if out is None or not Path(out).is_dir():
        return []
    return [name for name in RESULT_FILES if _holds(Path(out) / name)]


def _holds(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and any(path.iterdir()))


def check_out_dir(out: str | os.PathLike | None, overwrite: bool, option: str = "--out") -> None:
    """Refuse an output folder that is a file, or that holds results (:func:`held_results`: of an
    earlier run, finished or interrupted) unless ``overwrite``: a new run never silently replaces
    an earlier one."""
    if out is None:
        return
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{option} {out}: exists and is not a directory")
    held = held_results(out)
    if held and not overwrite:
        raise ResultsExistError(f"{option} {out}: holds results of an earlier run ({', '.join(held[:3])}"
                                f"{', ...' if len(held) > 3 else ''}); give --overwrite to replace them, or "
                                f"another folder")
