"""``python -m schedopt`` and the ``schedopt`` console script.

The models schedopt builds are small, so BLAS thread pools only spin: the command line
runs them on one thread unless the user's environment says otherwise. The garbage collector
is off while the modules load and their objects are then frozen out of its generations: a
collection during the imports only walks objects that live as long as the process (about
30 ms of CPU per run, ``benchmarks/README.md``).
"""

import gc
import os


def main() -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    gc.disable()
    try:
        from .cli import main as cli_main
    finally:
        gc.freeze()
        gc.enable()
    cli_main()


if __name__ == "__main__":
    main()
