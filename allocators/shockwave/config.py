"""Shockwave's parameters, from the published ``configurations/*.json`` format or by hand.

Published keys: ``future_rounds`` (T), ``k``, ``lambda``, ``rhomax``, ``solver_rel_gap``,
``solver_timeout`` (s), ``log_approximation_bases`` (progress points of the published
secant interpolation of the log utility, used under ``gavel_compat``; otherwise the log
is exact or cut to a reported gap), and ``gpu_ram``, ``solver_num_threads``, which do not
apply here (no GPU-memory model; threads are the solver's default). This project's
own: ``reoptimize_every`` (rounds, published 8) and ``oracle`` (true: exact remaining
times instead of the Dirichlet predictor, for ablations).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from formulations.shockwave import valid_log_bases

#: published keys with no effect here
IGNORED_KEYS = ("gpu_ram", "solver_num_threads", "num_gpus", "time_per_iteration")
_KEYS = {"future_rounds": "rounds", "k": "k", "lambda": "lam", "rhomax": "rho_max",
         "solver_rel_gap": "mip_gap", "solver_timeout": "time_limit", "reoptimize_every": "reoptimize_every",
         "oracle": "oracle", "log_approximation_bases": "log_bases"}
#: keys of this project's own (true / false)
FLAGS = ("oracle",)


class ShockwaveConfigError(ValueError):
    """A malformed configuration; names the file and the key."""


@dataclass(frozen=True)
class ShockwaveConfig:
    """``rounds``: planning window T; ``k``: weight of the makespan term; ``lam``: priority
    exponent λ; ``rho_max``: FTF bound; ``mip_gap`` and ``time_limit`` (s) per solve;
    ``reoptimize_every``: rounds between scheduled re-plans; ``oracle``: exact remaining
    times instead of the Dirichlet predictor; ``log_bases``: the published log
    interpolation's progress points (rising from 0 to 1; used under ``gavel_compat``)."""

    rounds: int = 20
    k: float = 1e-3
    lam: float = 12.0
    rho_max: float = 1.0
    mip_gap: float = 1e-3
    time_limit: float = 15.0
    reoptimize_every: int = 8
    oracle: bool = False
    log_bases: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

    def __post_init__(self) -> None:
        checks = {"rounds": self.rounds >= 1 and int(self.rounds) == self.rounds,
                  "k": math.isfinite(self.k) and self.k >= 0, "lam": math.isfinite(self.lam) and self.lam >= 0,
                  "rho_max": math.isfinite(self.rho_max) and self.rho_max > 0,
                  "mip_gap": math.isfinite(self.mip_gap) and self.mip_gap > 0,
                  "time_limit": self.time_limit > 0,
                  "reoptimize_every": self.reoptimize_every >= 1
                  and int(self.reoptimize_every) == self.reoptimize_every,
                  "log_bases": valid_log_bases(self.log_bases)}
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{b}={getattr(self, b)!r}" for b in bad)
            raise ShockwaveConfigError(f"shockwave config: invalid {values}")


def read_shockwave_config(path: str | os.PathLike) -> ShockwaveConfig:
    """Read a published Shockwave configuration JSON (errors name the file and key)."""
    src = os.fspath(path)
    try:
        raw = json.loads(Path(src).read_text())
    except OSError as exc:
        raise ShockwaveConfigError(f"{src}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ShockwaveConfigError(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(raw, dict):
        raise ShockwaveConfigError(f"{src}: expected a JSON object of parameters")
    fields = {}
    for key, value in raw.items():
        if key in IGNORED_KEYS:
            continue
        if key not in _KEYS:
            raise ShockwaveConfigError(f"{src}: unknown key {key!r} (known: {', '.join([*_KEYS, *IGNORED_KEYS])})")
        if key == "log_approximation_bases":
            if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                      for v in value):
                raise ShockwaveConfigError(f"{src}: key {key!r}: expected a list of numbers, got {value!r}")
            value = tuple(float(v) for v in value)
        elif key in FLAGS:
            if not isinstance(value, bool):
                raise ShockwaveConfigError(f"{src}: key {key!r}: expected true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ShockwaveConfigError(f"{src}: key {key!r}: expected a number, got {value!r}")
        fields[_KEYS[key]] = value
    try:
        return ShockwaveConfig(**fields)
    except ShockwaveConfigError as exc:
        raise ShockwaveConfigError(f"{src}: {exc}") from None
