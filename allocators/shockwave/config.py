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
        bad = invalid_fields(vars(self))
        if bad:
            values = ", ".join(f"{b}={getattr(self, b)!r}" for b in bad)
            raise ShockwaveConfigError(f"shockwave config: invalid {values}")


def invalid_fields(values: dict) -> list[str]:
    """The :class:`ShockwaveConfig` fields of ``values`` whose value is out of its range."""
    def count(v) -> bool:
        return math.isfinite(v) and v >= 1 and int(v) == v

    checks = {"rounds": count, "k": lambda v: math.isfinite(v) and v >= 0, "lam": lambda v: math.isfinite(v) and v >= 0,
              "rho_max": lambda v: math.isfinite(v) and v > 0, "mip_gap": lambda v: math.isfinite(v) and v > 0,
              "time_limit": lambda v: v > 0, "reoptimize_every": count, "log_bases": valid_log_bases}
    return [name for name, ok in checks.items() if name in values and not ok(values[name])]


class _Written(float):
    """A JSON number with its text (a message quotes the file): a fraction, an exponent, ``NaN``,
    ``Infinity``, or an integer of more than 20 digits (Python reads none of over 4,300)."""

    text: str

    def __new__(cls, text: str) -> _Written:
        value = super().__new__(cls, text)
        value.text = text
        return value


def _integer(digits: str) -> int | _Written:
    return int(digits) if len(digits) <= 20 else _Written(digits)


def _text(value) -> str:
    return value.text if isinstance(value, _Written) else json.dumps(value)


def read_shockwave_config(path: str | os.PathLike) -> ShockwaveConfig:
    """Read a published Shockwave configuration JSON (errors name the file and key)."""
    src = os.fspath(path)
    try:
        data = Path(src).read_bytes()
    except OSError as exc:
        raise ShockwaveConfigError(f"{src}: cannot read: {exc.strerror}") from None
    try:
        raw = json.loads(data.decode("utf-8-sig"), parse_float=_Written, parse_constant=_Written, parse_int=_integer)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ShockwaveConfigError(f"{src}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    except json.JSONDecodeError as exc:
        raise ShockwaveConfigError(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ShockwaveConfigError(f"{src}: invalid JSON: nested too deeply") from None
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
                raise ShockwaveConfigError(f"{src}: key {key!r}: expected a list of numbers, got {_shown(value)}")
            numbers = value
            value = tuple(float(v) for v in value)
        elif key in FLAGS:
            if not isinstance(value, bool):
                raise ShockwaveConfigError(f"{src}: key {key!r}: expected true or false, got {_shown(value)}")
            numbers = []
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ShockwaveConfigError(f"{src}: key {key!r}: expected a number, got {_shown(value)}")
        else:
            numbers = [value]
        fields[_KEYS[key]] = value
        if any(abs(v) >= 2.0**63 and (math.isfinite(v) or _text(v).lstrip("-").isdigit()) for v in numbers):
            raise ShockwaveConfigError(f"{src}: key {key!r}: out of range (beyond 64 bits), got {_shown(raw[key])}")
    bad = invalid_fields(fields)
    if bad:
        keys = {field: key for key, field in _KEYS.items()}
        raise ShockwaveConfigError(f"{src}: shockwave config: invalid " + ", ".join(
            f"{b}={_shown(raw[keys[b]])}" for b in bad))
    return ShockwaveConfig(**{name: v if isinstance(v, (bool, tuple)) else int(v) if type(v) is int else float(v)
                              for name, v in fields.items()})


def _shown(value) -> str:
    """``value`` as the file has it, at most 60 characters."""
    if isinstance(value, list) and len(value) < 100:
        text = "[" + ", ".join(_text(v) if isinstance(v, (int, float)) else json.dumps(v) for v in value) + "]"
    else:
        text = _text(value) if isinstance(value, (int, float, str, type(None))) else f"a JSON {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."
