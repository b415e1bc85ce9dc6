import json

import numpy as np
import pytest

from simulator import (
    ClusterSpecError,
    JobsFileError,
    ThroughputTableError,
    example_table,
    parse_cluster,
    read_gavel_json,
    read_jobs_csv,
    sample_jobs,
    write_gavel_json,
)


def test_example_table_has_the_advertised_heterogeneity():
    table = example_table()
    assert table.worker_types == ("v100", "p100", "k80")
    single = table.isolated[[k for k, key in enumerate(table.keys) if key[1] == 1]]
    newest_fastest = single[:, 0] >= single[:, 1]
    assert not newest_fastest.all(), "one job type should be faster on an older GPU"
    assert (single == 0).any(), "one combination should be unsupported"
    assert (single[:, 0] / np.maximum(single[:, 2], 1e-9) > 3).any(), "large speed-ups exist"
    assert example_table().isolated.tobytes() == table.isolated.tobytes()  # deterministic


def test_example_table_round_trips_through_gavel_json(tmp_path):
    table = example_table()
    path = tmp_path / "table.json"
    write_gavel_json(table, path)
    back = read_gavel_json(path)
    assert back.worker_types == table.worker_types
    assert back.keys == table.keys
    np.testing.assert_allclose(back.isolated, table.isolated)
    np.testing.assert_allclose(back.unconsolidated, table.unconsolidated)
    assert back.pair_keys == table.pair_keys
    np.testing.assert_allclose(back.pair_rates, table.pair_rates)


def test_published_gavel_table(shared_data):
    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    assert set(table.worker_types) == {"v100", "p100", "k80"}
    scales = np.array([s for _, s in table.keys])
    assert (scales == 1).sum() == 26 and all((scales == s).sum() == 19 for s in (2, 4, 8))
    k = table.index_of("ResNet-18 (batch size 16)", 1)
    assert table.isolated[k, table.worker_types.index("v100")] == pytest.approx(32.353384328946916)
    multi = scales > 1
    assert np.isfinite(table.unconsolidated[multi]).any()
    assert len(table.pair_keys) > 0


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", r"t\.json:1:2: invalid JSON"),
        ("[]", "expected an object of worker types"),
        ('{"v100": {"(\'A\', 1)": {"null": "fast"}}}', r"v100 -> \('A', 1\) -> null: expected a number"),
        ('{"v100": {"(\'A\', 1)": {"null": NaN}}}', "null: must be finite, got 'NaN'"),
        ('{"v100": {"(\'A\', 1)": {"null": 1e400}}}', "null: must be finite, got '1e400'"),
        ('{"v100": {"(\'A\', 1)": {"null": -2}}}', "null: must be >= 0, got '-2'"),
        ('{"v100": {"(\'A\', 1)": {"null": 1' + "0" * 30 + '}}}', r"null: out of range \(beyond 64 bits\)"),
        ('{"v100": {"A": {"null": 1}}}', "is not of the form"),
        ('{"v100": {"(\'A\', 1)": {"x": 1}}}', "'null'"),
        ('{"v100": {"(\'A\', 1)": {"null": 1, "(\'A\', 1)": [1]}}}', r"pair \[own, other\]"),
    ],
)
def test_malformed_tables_name_file_and_entry(tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(ThroughputTableError, match=message):
        read_gavel_json(path)


def test_missing_table_file(tmp_path):
    with pytest.raises(ThroughputTableError, match="cannot read"):
        read_gavel_json(tmp_path / "absent.json")


def test_job_missing_under_a_worker_type_cannot_run_there(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"v100": {"('A', 1)": {"null": 2.0}, "('B', 1)": {"null": 1.0}},
                                "k80": {"('A', 1)": {"null": 1.0}}}))
    table = read_gavel_json(path)
    assert table.rates(np.array([table.index_of("B", 1)]), ("v100", "k80")).tolist() == [[1.0, 0.0]]
    with pytest.raises(ThroughputTableError, match="no throughputs for worker type 'a100'"):
        table.type_columns(["a100"])


@pytest.mark.parametrize(
    "spec, message",
    [("v100", "is not TYPE=COUNT"), ("v100=0", "positive integer"), ("v100=-3", "positive integer"),
     ("v100=2,v100=3", "given twice"), ("v100=1.5", "positive integer"), ("=3", "is not TYPE=COUNT")],
)
def test_bad_cluster_specs(spec, message):
    with pytest.raises(ClusterSpecError, match=message):
        parse_cluster(spec)


def test_cluster_spec_round_trip():
    assert str(parse_cluster(" v100=36, p100=36,k80=36")) == "v100=36,p100=36,k80=36"


def test_job_sampler_is_seeded_and_follows_the_table():
    table = example_table()
    a, b = sample_jobs(table, 500, 3, multi_gpu=True), sample_jobs(table, 500, 3, multi_gpu=True)
    assert a.keys.tolist() == b.keys.tolist()
    assert set(a.scale_factors.tolist()) <= {1, 2, 4}
    assert (a.scale_factors == 1).mean() > 0.6
    for model, scale, key in zip(a.models, a.scale_factors, a.keys):
        assert table.keys[key] == (model, scale)
    assert set(sample_jobs(table, 50, 1).scale_factors.tolist()) == {1}


def test_jobs_csv(tmp_path):
    table = example_table()
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,job_type,scale_factor,priority_weight\n"
                    "7,LM (batch size 20),2,5\n8,ResNet-50 (batch size 64),,\n")
    jobs = read_jobs_csv(path, table)
    assert jobs.job_ids.tolist() == [7, 8]
    assert jobs.scale_factors.tolist() == [2, 1]
    assert jobs.weights.tolist() == [5.0, 1.0]


@pytest.mark.parametrize(
    "content, message",
    [
        ("model\nLM (batch size 20)\n", r"jobs\.csv:1: header must name a 'job_type'"),
        ("job_type\nGPT-9\n", r"jobs\.csv:2: column job_type: 'GPT-9' at scale_factor 1 is not in"),
        ("job_type,scale_factor\nLM (batch size 20),two\n", r"jobs\.csv:2: column scale_factor: expected a number"),
        ("job_type,scale_factor\nLM (batch size 20),1" + "0" * 30 + "\n",
         r"jobs\.csv:2: column scale_factor: out of range \(beyond 64 bits\), got '10{30}'"),
        ("job_type,priority_weight\nLM (batch size 20),1\nLM (batch size 20),-1\n",
         r"jobs\.csv:3: column priority_weight: must be > 0, got '-1'"),
        ("job_type,total_steps\nLM (batch size 20),1\nLM (batch size 20),\n",
         r"jobs\.csv:3: column total_steps: missing"),
        ("job_type,scale_factor\nLM (batch size 20),8\n", "at scale_factor 8 is not in"),
        ("job_type\n", "no jobs"),
        ("job_id,job_type\n1,LM (batch size 20)\n1,LM (batch size 20)\n", r"jobs\.csv:3: column job_id: 1 repeats"),
    ],
)
def test_bad_jobs_csv_names_file_line_and_field(tmp_path, content, message):
    path = tmp_path / "jobs.csv"
    path.write_text(content)
    with pytest.raises(JobsFileError, match=message):
        read_jobs_csv(path, example_table())
