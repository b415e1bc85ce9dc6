import math

import numpy as np
import pytest

from simulator.readers.traces import TraceError, read_trace, trace_text, write_trace


def test_published_traces_read_and_round_trip(shared_data, tmp_path):
    paths = sorted((shared_data / "gavel" / "traces").glob("*.trace"))
    paths += sorted((shared_data / "gavel_generated").glob("*.trace"))
    paths += sorted((shared_data / "shockwave" / "traces").glob("*.trace"))
    assert paths
    for path in paths:
        trace = read_trace(path)
        assert len(trace) == sum(1 for line in path.read_text().splitlines() if line.strip())
        assert (trace.total_steps > 0).all() and (trace.scale_factors >= 1).all()
        if path.parent.name == "gavel_generated":  # continuous arrivals, line i = job i
            assert (np.diff(trace.arrival_times) >= 0).all()
        out = tmp_path / path.name
        write_trace(trace, out)
        again = read_trace(out)
        assert again.job_types == trace.job_types and again.commands == trace.commands
        np.testing.assert_array_equal(again.total_steps, trace.total_steps)
        np.testing.assert_allclose(again.arrival_times, trace.arrival_times, rtol=1e-9)
        np.testing.assert_array_equal(again.slo, trace.slo)
        assert again.modes == trace.modes
        np.testing.assert_array_equal(again.durations, trace.durations)


def test_ten_columns_with_slo_and_priority(tmp_path):
    path = tmp_path / "a.trace"
    path.write_text("ResNet-18 (batch size 64)\tpython3 main.py\tcifar10\t--num_steps\t1\t1000\t2\t5\t3600.5\t12.0\n"
                    "LM (batch size 20)\tpython main.py\tlm\t--steps\t0\t50\t1\t1\t-1.000000\t30\n")
    trace = read_trace(path)
    assert trace.job_types == ("ResNet-18 (batch size 64)", "LM (batch size 20)")
    np.testing.assert_array_equal(trace.scale_factors, [2, 1])
    np.testing.assert_array_equal(trace.weights, [5.0, 1.0])
    assert trace.slo[0] == 3600.5 and math.isinf(trace.slo[1])
    np.testing.assert_array_equal(trace.arrival_times, [12.0, 30.0])
    assert trace_text(trace).count("\n") == 2


def test_legacy_seven_columns(tmp_path):
    path = tmp_path / "legacy.trace"
    path.write_text("Transformer (batch size 16)\tpython3 train.py\t-step\t1\t11005\t120\t4\n")
    trace = read_trace(path)
    assert trace.total_steps[0] == 11005 and trace.arrival_times[0] == 120 and trace.scale_factors[0] == 4
    assert trace.weights[0] == 1.0 and math.isinf(trace.slo[0]) and trace.working_dirs == ("",)


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("A\tcmd\tdir\targ\t1\t100\t1\t1\t-1\n", "expected 10 tab-separated columns"),
        ("A\tcmd\tdir\targ\t1\tmany\t1\t1\t-1\t0\n", "column 6 (total_steps): expected a number"),
        ("A\tcmd\tdir\targ\t1\t100\t0\t1\t-1\t0\n", "column 7 (scale_factor): must be > 0, got '0'"),
        ("A\tcmd\tdir\targ\t1\t99999999999999999999999\t1\t1\t-1\t0\n",
         "column 6 (total_steps): out of range (beyond 64 bits), got '99999999999999999999999'"),
        ("A\tcmd\tdir\targ\t1\t100\t1e30\t1\t-1\t0\n", "column 7 (scale_factor): out of range (beyond 64 bits)"),
        ("A\tcmd\tdir\targ\t1\t100\t1.5\t1\t-1\t0\n", "column 7 (scale_factor): expected an integer"),
        ("A\tcmd\tdir\targ\t2\t100\t1\t1\t-1\t0\n", "column 5 (needs_data_dir): expected 0 or 1"),
        ("A\tcmd\tdir\targ\t1\t100\t1\t1\t0\t0\n", "column 9 (SLO): must be > 0, or -1"),
        ("A\tcmd\tdir\targ\t1\t100\t1\t1\t-1\t-5\n", "column 10 (arrival_time): must be >= 0, got '-5'"),
        ("\tcmd\tdir\targ\t1\t100\t1\t1\t-1\t0\n", "column 1 (job_type): empty"),
    ],
)
def test_malformed_lines_name_file_line_and_column(tmp_path, line, fragment):
    path = tmp_path / "bad.trace"
    good = "A\tcmd\tdir\targ\t1\t100\t1\t1\t-1\t0\n"
    path.write_text(good + line)
    with pytest.raises(TraceError, match=rf"{path}:2: .*{fragment}".replace("(", r"\(").replace(")", r"\)")):
        read_trace(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        read_trace(tmp_path / "nope.trace")
    (tmp_path / "empty.trace").write_text("\n")
    with pytest.raises(TraceError, match="no jobs"):
        read_trace(tmp_path / "empty.trace")


def test_shockwave_twelve_columns(tmp_path):
    path = tmp_path / "s.trace"
    path.write_text("LM (batch size 10)\tpython3 main.py\tlm\t--steps\t1\t134583\t1\tgns\t1\t-1.000000\t1418\t0\n"
                    "ResNet-18 (batch size 32)\tpython3 main.py\tcifar10\t--n\t1\t143450\t2\taccordion\t1\t-1\t3338\t55"
                    "\n")
    trace = read_trace(path)
    assert trace.modes == ("gns", "accordion") and trace.adaptive
    np.testing.assert_array_equal(trace.durations, [1418.0, 3338.0])
    np.testing.assert_array_equal(trace.arrival_times, [0.0, 55.0])
    np.testing.assert_array_equal(trace.scale_factors, [1, 2])
    bad = tmp_path / "bad.trace"
    bad.write_text(path.read_text().replace("accordion", "sometimes"))
    with pytest.raises(TraceError, match=r"bad.trace:2: column 8 \(mode\): expected one of static, accordion, gns"):
        read_trace(bad)
