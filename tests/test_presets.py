"""Each published system's settings by name, for both clocks, recorded in the summary."""

import json

import pytest
from typer.testing import CliRunner

from schedopt.cli import app
from simulator.engine import SimulationConfig
from simulator.engine.presets import PRESETS
from simulator.example_table import example_table
from simulator.generator import generate_trace
from simulator.simulate import simulate


def test_the_round_defaults_are_gavels_and_shockwave_is_its_preset():
    assert SimulationConfig() == SimulationConfig.from_preset("gavel")
    sw = SimulationConfig.shockwave(seed=3)
    assert (sw.round_length, sw.reset_interval, sw.overhead, sw.max_runtime_factor, sw.preset, sw.seed) == \
        (120.0, 1000.0, 20.0, 1.5, "shockwave", 3)
    assert SimulationConfig.from_preset("shockwave", round_length=200.0).round_length == 200.0
    with pytest.raises(ValueError, match="unknown preset 'slurm'; known: gavel, shockwave, elasticflow, pollux"):
        SimulationConfig.from_preset("slurm")


@pytest.mark.parametrize("preset, slot", [(None, 60.0), ("gavel", 360.0), ("shockwave", 120.0), ("elasticflow", 60.0)])
def test_a_slot_policy_takes_the_presets_slot(preset, slot):
    trace = generate_trace(example_table(), 6, seed=1, lam=300.0)
    result = simulate(trace, policy="edf", cluster="v100=4", deadlines="uniform:1:2", preset=preset)
    assert result.summary["slot_seconds"] == slot == PRESETS[preset or "elasticflow"].slot
    assert result.summary["preset"] == (preset or "elasticflow")
    assert simulate(trace, policy="edf", cluster="v100=4", deadlines="uniform:1:2", preset=preset,
                    slot=90.0).summary["slot_seconds"] == 90.0


def test_cli_preset_sets_a_round_policys_settings_and_options_override_it(tmp_path):
    runs = {}
    for name, extra in (("plain", []), ("shockwave", ["--preset", "shockwave"]),
                        ("override", ["--preset", "shockwave", "--round", "200"])):
        out = tmp_path / name
        result = CliRunner().invoke(app, ["simulate", "--generate", "8", "--lam", "600", "--cluster", "v100=4",
                                          "--no-progress", "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        runs[name] = json.loads((out / "summary.json").read_text())
    assert (runs["plain"]["preset"], runs["plain"]["round_length"], runs["plain"]["overhead"]) == ("gavel", 360.0, 0.0)
    assert (runs["shockwave"]["preset"], runs["shockwave"]["round_length"], runs["shockwave"]["overhead"],
            runs["shockwave"]["reset_interval"]) == ("shockwave", 120.0, 20.0, 1000.0)
    assert (runs["override"]["round_length"], runs["override"]["overhead"]) == (200.0, 20.0)


def test_cli_unknown_preset_is_one_line():
    result = CliRunner().invoke(app, ["simulate", "--example", "--preset", "slurm", "--no-progress"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "unknown preset 'slurm'" in lines[0]
