"""``python -m schedopt`` and the ``schedopt`` console script.

The models schedopt builds are small, so BLAS thread pools only spin: the command line
runs them on one thread unless the user's environment says otherwise.
"""

import os


def main() -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
