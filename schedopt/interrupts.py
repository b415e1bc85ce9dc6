"""Ctrl-C on the command line: whenever it comes, one line on stderr and exit status 130.

Inside a command :func:`interrupt_said` (through ``cli.user_errors``) says what ``--out`` was
left holding; :class:`Commands`, the command group, covers the moments the command line is
read; ``__main__`` covers the moments the modules load.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer
from typer.core import TyperGroup

from simulator.files import held_results

from .output import err


def say_interrupted(note: str = "", out: Path | None = None) -> None:
    """One line on stderr: the command was interrupted (Ctrl-C), then ``note``, or what the output
    folder ``out`` was left holding (every file in it whole)."""
    held = held_results(out)
    if not note and held:
        note = (f"{out} holds part of the results ({', '.join(held[:3])}{', ...' if len(held) > 3 else ''}; "
                f"each file whole): run the command again with --overwrite to replace them"
                + (", or with --resume to continue the run" if "journal.jsonl" in held else ""))
    err.print("schedopt: interrupted" + (f"; {note}" if note else ""), markup=False, highlight=False,
              soft_wrap=True)


@contextlib.contextmanager
def interrupt_said(out: Path | None = None):
    """End an interrupt (KeyboardInterrupt) in the block with one line (:func:`say_interrupted`:
    what ``out`` holds) and exit status 130."""
    try:
        yield
    except KeyboardInterrupt:
        say_interrupted(out=out)
        raise typer.Exit(130) from None


class Commands(TyperGroup):
    """The command group: an interrupt while it reads the command line ends as one inside a
    command does."""

    def make_context(self, *args, **kwargs):
        with interrupt_said():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx):
        with interrupt_said():
            return super().invoke(ctx)
