"""``python -m schedopt`` and the ``schedopt`` console script.

The models schedopt builds are small, so BLAS thread pools only spin: the command line
runs them on one thread unless the user's environment says otherwise. The garbage collector
is off while the modules load and their objects are then frozen out of its generations: a
collection during the imports only walks objects that live as long as the process (about
30 ms of CPU per run, ``benchmarks/README.md``).

An interrupt (Ctrl-C) ends any command with one line on stderr and exit status 130 at once, and
leaves every file it wrote whole (``simulator.files``); once a command has ended, Ctrl-C is
ignored while the interpreter exits.
"""

import gc
import os
import signal
import sys


def main() -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:
        gc.disable()
        try:
            from .cli import main as cli_main
        finally:
            gc.freeze()
            gc.enable()
        cli_main()
    except KeyboardInterrupt:  # while the modules load (the command line reports its own)
        sys.stderr.write("schedopt: interrupted\n")
        exit_now(130)
    except SystemExit as end:
        if end.code == 130:  # interrupted, and said so
            exit_now(130)
        raise
    finally:  # the command has ended: a later Ctrl-C would only break the interpreter's exit
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def exit_now(status: int) -> None:
    """End the process with ``status`` at once, its output flushed. After an interrupt the
    interpreter's own exit could end it by SIGINT instead (CPython marks a KeyboardInterrupt
    raised inside ``exec`` of a string, as dataclasses build their methods, unhandled even once
    caught) or crash in a library's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":
    main()
