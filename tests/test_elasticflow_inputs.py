import math

import numpy as np
import pytest

from simulator.readers.elasticflow_traces import DeadlineInputError, read_chronus_trace, read_deadline_trace
from simulator.readers.iteration_tables import elasticflow_max_gpus, read_throughput_dir
from simulator.readers.node_cluster import NodeCluster, read_cluster_spec

EF_HEADER = "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration,best_effort\n"
ITP_HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
CHRONUS_HEADER = ("job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
                  "expect_value_list,best_effort,job_type\n")
SPEC_HEADER = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
TABLE_HEADER = "global_batch_size,1,2,4,8,16,32,64\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def data_lines(path):
    return sum(1 for line in path.read_text().splitlines()[1:] if line.strip())


def raises(reader, path, fragment, *, where=None):
    """The reader fails with a message that starts with the file (``where``, else ``path``) and contains
    ``fragment``."""
    with pytest.raises(DeadlineInputError) as info:
        reader(path)
    message = str(info.value)
    assert message.startswith(f"{where or path}:"), message
    assert fragment in message, message
    assert info.value.__suppress_context__ or info.value.__context__ is None  # no chained traceback
    return message


# --- ElasticFlow / ITP / Philly traces ------------------------------------------------------------


def test_elasticflow_trace_with_best_effort(tmp_path):
    path = write(tmp_path, "t.csv", EF_HEADER + "0,0,77215,resnet50,4426,256,1,3930,0\n\n"
                                                "7,2811.5,94898,vgg16,0,64,8,4830,1\n")
    trace = read_deadline_trace(path)
    assert len(trace) == 2 and trace.source == str(path)
    assert trace.job_ids.tolist() == ["0", "7"] and trace.model.tolist() == ["resnet50", "vgg16"]
    np.testing.assert_array_equal(trace.submit, [0.0, 2811.5])
    np.testing.assert_array_equal(trace.iterations, [77215.0, 94898.0])
    np.testing.assert_array_equal(trace.deadline, [4426.0, np.inf])  # best effort: no deadline
    np.testing.assert_array_equal(trace.batch_size, [256, 64])
    np.testing.assert_array_equal(trace.num_gpus, [1, 8])
    np.testing.assert_array_equal(trace.duration, [3930.0, 4830.0])
    np.testing.assert_array_equal(trace.best_effort, [False, True])
    assert trace.batch_size.dtype == np.int64 and trace.num_gpus.dtype == np.int64
    assert trace.job_ids.dtype == object and trace.best_effort.dtype == bool


def test_itp_and_philly_headers(tmp_path):
    itp = read_deadline_trace(write(tmp_path, "itp.csv",
                                    ITP_HEADER + "bdd6-40fb,3715485,3249,deepspeech2,3716178,32,1,1075\n"))
    assert itp.job_ids[0] == "bdd6-40fb" and itp.deadline[0] == 3716178 and itp.iterations[0] == 3249
    assert not itp.best_effort.any()
    philly = write(tmp_path, "philly.csv", "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,"
                                           "real_duration,duration,iteration\n1,10,999,vgg16,5000,64,4,888,1792,2644\n")
    trace = read_deadline_trace(philly)
    assert trace.iterations[0] == 2644 and trace.duration[0] == 1792  # not the real_* columns
    assert trace.submit[0] == 10 and trace.deadline[0] == 5000 and trace.num_gpus[0] == 4


def test_published_deadline_traces(shared_data):
    ef = shared_data / "elasticflow"
    assert len(read_deadline_trace(ef / "traces" / "elasticVpollux_e.csv")) == 195
    # 1,595 jobs: the file has no trailing newline, so `wc -l` counts 1,595 lines with the header
    assert len(read_deadline_trace(ef / "itp" / "cluster01.csv")) == 1595
    assert sum(len(read_deadline_trace(path)) for path in (ef / "itp").glob("cluster*.csv")) == 69351
    assert len(read_deadline_trace(ef / "traces" / "philly_103959.csv")) == 876
    paths = sorted((ef / "traces").glob("*.csv")) + sorted((ef / "itp").glob("*.csv"))
    paths += sorted((ef / "generated").glob("*.csv"))
    assert len(paths) == 17
    for path in paths:
        trace = read_deadline_trace(path)
        assert len(trace) == data_lines(path)
        assert (trace.deadline >= trace.submit).all() and (trace.iterations > 0).all()
        assert (trace.num_gpus >= 1).all() and (trace.batch_size >= 1).all()


def test_published_traces_match_their_tables(shared_data):
    ef = shared_data / "elasticflow"
    a100 = read_throughput_dir(ef / "throughputs_A100")
    t4 = read_throughput_dir(ef / "throughputs_T4")
    for path, table in [(ef / "itp" / "cluster04.csv", a100), (ef / "traces" / "philly_103959.csv", a100),
                        (ef / "generated" / "1000job_1500lam.csv", a100),
                        (ef / "traces" / "resnet_cifar_trace.csv", a100), (ef / "traces" / "elasticVpollux_e.csv", t4)]:
        trace = read_deadline_trace(path)
        curves = table.curves(trace.model, trace.batch_size)
        assert curves.shape == (len(trace), 7)
        assert np.isfinite(curves[:, 0]).all() and (curves[:, 0] > 0).all()  # every job runs on one GPU


@pytest.mark.parametrize(
    "body, line, fragment",
    [
        ("0,soon,10,m,100,32,1,5,0\n", 2, "column submit_time: expected a number, got 'soon'"),
        ("0,-5,10,m,100,32,1,5,0\n", 2, "column submit_time: must be >= 0, got '-5'"),
        ("0,0,0,m,100,32,1,5,0\n", 2, "column iteration: must be > 0, got '0'"),
        ("0,0,10,m,100,32,1.5,5,0\n", 2, "column num_gpu: expected an integer, got '1.5'"),
        ("0,0,10,m,100,32,0,5,0\n", 2, "column num_gpu: must be >= 1, got '0'"),
        ("0,0,10,m,100,0,1,5,0\n", 2, "column batch_size: must be >= 1, got '0'"),
        ("0,0,10,m,100,32,1,nan,0\n", 2, "column duration: must be finite, got 'nan'"),
        ("0,0,10,m,100,32,1,5,2\n", 2, "column best_effort: expected 0 or 1, got '2'"),
        ("0,0,10,m,100,32,1,5,0\n1,50,10,m,40,32,1,5,0\n", 3,
         "column ddl: deadline 40 is before submit_time 50"),
        ("0,0,10,m,inf,32,1,5,0\n", 2, "column ddl: must be finite unless best_effort is 1"),
        ("0,0,10,m,100,32,1,5,0\n1,0,10,m,100,32,1,5\n", 3, "column best_effort: missing (the row has 8"),
        ("0,0,10,m,100,32,1,5,0,9\n", 2, "column 10: extra value '9'"),
        ("0,0,10,,100,32,1,5,0\n", 2, "column model_name: empty"),
        ("0,0,10,m,100,32,1,5,0\n\n\n1,0,-1,m,100,32,1,5,0\n", 5, "column iteration: must be > 0, got '-1'"),
    ],
)
def test_malformed_elasticflow_rows(tmp_path, body, line, fragment):
    path = write(tmp_path, "bad.csv", EF_HEADER + body)
    message = raises(read_deadline_trace, path, fragment)
    assert message.startswith(f"{path}:{line}: column ")


def test_malformed_itp_deadline_names_its_column(tmp_path):
    path = write(tmp_path, "itp.csv", ITP_HEADER + "a,100,10,bert,99,64,1,5\n")
    raises(read_deadline_trace, path, ":2: column deadline: deadline 99 is before submission_time 100")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", ":1: empty file"),
        ("\n  \n", ":1: empty file"),
        (EF_HEADER, ":1: no jobs after the header"),
        ("job,submit,iters,model,deadline,batch,gpus,time\n0,0,1,m,1,1,1,1\n",
         ":1: unknown deadline trace header: missing column(s) job_id, submission_time, num_iteration"),
        (EF_HEADER.replace(",num_gpu", "") + "0,0,10,m,100,32,5,0\n",
         ":1: unknown deadline trace header: missing column(s) num_gpu (expected job_id,submit_time"),
    ],
)
def test_malformed_trace_files(tmp_path, text, fragment):
    raises(read_deadline_trace, write(tmp_path, "bad.csv", text), fragment)


def test_unreadable_trace(tmp_path):
    raises(read_deadline_trace, tmp_path / "absent.csv", ": cannot read")
    (tmp_path / "latin.csv").write_bytes(b"job_id\xff\n")
    raises(read_deadline_trace, tmp_path / "latin.csv", ": not UTF-8 text")


# --- Chronus traces --------------------------------------------------------------------------------


def test_chronus_trace_in_minutes(tmp_path):
    path = write(tmp_path, "c.csv", CHRONUS_HEADER
                 + "0,vc_a,1,10,5049,vgg16,30,14,50,10,0,strict\n"
                 + "1,vc_b,0,20,296,alexnet,40,8,100-150-200,10-8-5,0,soft\n"
                 + "2,vc_a,2,30,900,resnet101,50,5,30,10,1,best\n")
    trace = read_chronus_trace(path)
    assert len(trace) == 3 and trace.users.tolist() == ["vc_a", "vc_b", "vc_a"]
    np.testing.assert_array_equal(trace.submit, [600.0, 1200.0, 1800.0])
    np.testing.assert_array_equal(trace.duration, [1800.0, 2400.0, 3000.0])
    np.testing.assert_array_equal(trace.interval, [14.0, 8.0, 5.0])  # kept as written
    np.testing.assert_array_equal(trace.num_gpus, [1, 0, 2])  # zero-GPU rows kept
    np.testing.assert_array_equal(trace.iterations, [5049.0, 296.0, 900.0])
    assert trace.job_type.tolist() == ["strict", "soft", "best"]
    np.testing.assert_array_equal(trace.best_effort, [False, False, True])
    # options are offsets from the submission; the best-effort placeholder is dropped
    np.testing.assert_array_equal(trace.option_offsets, [0, 1, 4, 4])
    np.testing.assert_array_equal(trace.option_job, [0, 1, 1, 1])
    np.testing.assert_array_equal(trace.option_time, [600 + 3000, 1200 + 6000, 1200 + 9000, 1200 + 12000])
    np.testing.assert_array_equal(trace.option_value, [10, 10, 8, 5])
    np.testing.assert_array_equal(trace.deadline, [3600.0, 7200.0, np.inf])
    assert trace.batch_size is None


def test_chronus_trace_in_seconds_with_batch_size(tmp_path):
    # the layout chronus-scheduler's converter writes from an ElasticFlow trace
    header = CHRONUS_HEADER.replace("num_gpu,", "num_gpu,batch_size,")
    path = write(tmp_path, "conv.csv", header + "0,user0,1,256,0,7246,resnet50,3930,0,5896,10,0,strict\n")
    trace = read_chronus_trace(path, minutes=False)
    assert trace.submit[0] == 0 and trace.duration[0] == 3930 and trace.deadline[0] == 5896
    np.testing.assert_array_equal(trace.batch_size, [256])


def test_chronus_options_need_not_be_ordered(tmp_path):
    trace = read_chronus_trace(write(tmp_path, "c.csv", CHRONUS_HEADER + "0,u,1,0,9,m,5,1,20-10,2-8,0,soft\n"))
    np.testing.assert_array_equal(trace.option_time, [1200.0, 600.0])
    np.testing.assert_array_equal(trace.option_value, [2.0, 8.0])


def test_published_chronus_traces(shared_data):
    for name in ("SLO", "MIX1", "MIX2"):
        path = shared_data / "chronus" / f"trace_job_Philly_{name}.csv"
        trace = read_chronus_trace(path)
        assert len(trace) == 30940
        kinds = set(trace.job_type.tolist())
        assert kinds == {"SLO": {"strict"}, "MIX1": {"strict", "best"}, "MIX2": {"strict", "soft", "best"}}[name]
        assert (trace.best_effort == (trace.job_type == "best")).all()
        counts = np.diff(trace.option_offsets)
        assert (counts[trace.job_type == "strict"] == 1).all() and (counts[trace.best_effort] == 0).all()
        assert (counts[trace.job_type == "soft"] == 4).all()
        assert len(trace.option_time) == counts.sum() == len(trace.option_job)
        assert (trace.option_time > trace.submit[trace.option_job]).all()
        assert (trace.submit % 60 == 0).all() and trace.submit.max() > 24 * 3600  # minutes -> seconds
        assert (trace.num_gpus == 0).sum() > 0  # the published reader skips these rows; kept here


@pytest.mark.parametrize(
    "row, fragment",
    [
        ("0,u,1,0,9,m,5,1,20,10,0,urgent\n", ":2: column job_type: expected one of strict, soft, best, got 'urgent'"),
        ("0,u,1,0,9,m,5,1,20,10,0,best\n", ":2: column job_type: 'best' contradicts best_effort 0"),
        ("0,u,1,0,9,m,5,1,20,10,1,strict\n", ":2: column job_type: 'strict' contradicts best_effort 1"),
        ("0,u,1,0,9,m,5,1,20-30-40,10-5,0,soft\n",
         ":2: column expect_value_list: 2 values ('10-5') for 3 expect_time_list"),
        ("0,u,1,0,9,m,5,1,20-x,10-5,0,soft\n",
         ":2: column expect_time_list: item 2 of '20-x': expected a number, got 'x'"),
        ("0,u,1,0,9,m,5,1,20-30,10-inf,0,soft\n", ":2: column expect_value_list: item 2 of '10-inf': must be finite"),
        ("0,u,1,0,9,m,5,1,20--30,10-5-1,0,soft\n",
         ":2: column expect_time_list: item 2 of '20--30': expected a number, got ''"),
        ("0,u,-1,0,9,m,5,1,20,10,0,strict\n", ":2: column num_gpu: must be >= 0, got '-1'"),
        ("0,u,1,0,9,m,0,1,20,10,0,strict\n", ":2: column duration: must be > 0, got '0'"),
        ("0,,1,0,9,m,5,1,20,10,0,strict\n", ":2: column user: empty"),
        ("0,u,1,0,9,m,5,1,20,10,0\n", ":2: column job_type: missing"),
    ],
)
def test_malformed_chronus_rows(tmp_path, row, fragment):
    raises(read_chronus_trace, write(tmp_path, "c.csv", CHRONUS_HEADER + row), fragment)


def test_malformed_chronus_files(tmp_path):
    raises(read_chronus_trace, write(tmp_path, "empty.csv", ""), ":1: empty file")
    raises(read_chronus_trace, write(tmp_path, "head.csv", CHRONUS_HEADER), ":1: no jobs after the header")
    header = CHRONUS_HEADER.replace(",job_type", "")
    raises(read_chronus_trace, write(tmp_path, "h.csv", header + "0,u,1,0,9,m,5,1,20,10,0\n"),
           ":1: not a Chronus trace header: missing column(s) job_type")
    # an ElasticFlow trace is not a Chronus trace
    raises(read_chronus_trace, write(tmp_path, "ef.csv", EF_HEADER + "0,0,1,m,1,1,1,1,0\n"), "missing column(s) user")


# --- cluster specs ---------------------------------------------------------------------------------


def test_cluster_spec_without_trailing_newline(tmp_path):
    cluster = read_cluster_spec(write(tmp_path, "n.csv", SPEC_HEADER + "5,32,8,128,256"))
    assert cluster == NodeCluster(5, 32, 8, 128, 256)
    assert cluster.num_nodes == 160 and cluster.num_gpus == 1280


def test_published_cluster_specs(shared_data):
    specs = shared_data / "elasticflow" / "cluster_specs"
    assert read_cluster_spec(specs / "n16g4.csv").num_gpus == 64
    assert read_cluster_spec(specs / "n1g1.csv") == NodeCluster(1, 1, 1, 40, 256)  # with a trailing newline
    paths = sorted(specs.glob("*.csv"))
    assert len(paths) == 16
    for path in paths:
        cluster = read_cluster_spec(path)
        assert cluster.num_gpus == cluster.num_switches * cluster.nodes_per_switch * cluster.gpus_per_node > 0


@pytest.mark.parametrize(
    "text, fragment",
    [
        (SPEC_HEADER + "1,16,4,64,256\n1,8,8,64,256\n", ":3: expected exactly one data row after the header, got 2"),
        (SPEC_HEADER, ":1: expected exactly one data row after the header, got 0"),
        ("", ":1: empty file"),
        ("switches,nodes,gpus\n1,2,3\n",
         ":1: not a cluster spec header: missing column(s) num_switch, num_node_p_switch"),
        (SPEC_HEADER + "1,16,four,64,256\n", ":2: column num_gpu_p_node: expected a number, got 'four'"),
        (SPEC_HEADER + "1,16,0,64,256\n", ":2: column num_gpu_p_node: must be >= 1, got '0'"),
        (SPEC_HEADER + "1,-16,4,64,256\n", ":2: column num_node_p_switch: must be >= 1, got '-16'"),
        (SPEC_HEADER + "1,16,4,64\n", ":2: column mem_p_node: missing"),
        (SPEC_HEADER + "1,16,4,64,256,7\n", ":2: column 6: extra value '7'"),
    ],
)
def test_malformed_cluster_specs(tmp_path, text, fragment):
    raises(read_cluster_spec, write(tmp_path, "spec.csv", text), fragment)


# --- throughput tables -----------------------------------------------------------------------------


def write_tables(tmp_path, **files):
    folder = tmp_path / "tables"
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.csv").write_text(text)
    return folder


def test_throughput_dir(tmp_path):
    folder = write_tables(
        tmp_path,
        bert=TABLE_HEADER + "64,6,8,10,11,10.9,10.6,9.2\n128,3.5,5.6,8.4,9.9,10.7,10.7,9.4\n",
        ds2=TABLE_HEADER + "2,3,5.3,7.5,9.8,12.8,14.4,\n32,1.5,2.9,nan,NaN,9.4,0,0",
    )
    table = read_throughput_dir(folder)
    assert table.models == ("bert", "ds2") and table.directory == str(folder)
    np.testing.assert_array_equal(table.gpu_counts, [1, 2, 4, 8, 16, 32, 64])
    np.testing.assert_array_equal(table.curve("bert", 128), [3.5, 5.6, 8.4, 9.9, 10.7, 10.7, 9.4])
    ds2 = table.curve("ds2", 32)
    assert np.isnan(ds2[2]) and np.isnan(ds2[3]) and ds2[4] == 9.4 and ds2[6] == 0
    assert np.isnan(table.curve("ds2", 2)[6])  # empty cell
    assert table.max_gpus("bert", 64) == 64
    assert table.max_gpus("ds2", 32) == 16  # zeros and NaN are unsupported
    assert table.max_gpus("ds2", 2) == 2  # at most one GPU per sample of the global batch
    curves = table.curves(np.array(["ds2", "bert", "ds2", "bert"], dtype=object), np.array([32, 64, 32, 128]))
    assert curves.shape == (4, 7)
    for row, (model, batch) in zip(curves, [("ds2", 32), ("bert", 64), ("ds2", 32), ("bert", 128)]):
        np.testing.assert_array_equal(row, table.curve(model, batch))
    assert table.curves([], []).shape == (0, 7)
    table.curve("bert", 64)[0] = -1  # a copy: the table is unchanged
    assert table.curve("bert", 64)[0] == 6


def test_throughput_lookup_is_exact(tmp_path):
    table = read_throughput_dir(write_tables(tmp_path, bert=TABLE_HEADER + "64,6,8,10,11,10.9,10.6,9.2\n"))
    with pytest.raises(DeadlineInputError, match=r"unknown model 'gpt2': no gpt2\.csv in .*tables \(models: bert\)"):
        table.curve("gpt2", 64)
    with pytest.raises(DeadlineInputError, match=r"bert\.csv: no row for global batch size 96 \(rows: 64\)"):
        table.curve("bert", 96)
    with pytest.raises(DeadlineInputError, match="unknown model 'gpt2'"):
        table.curves(["bert", "gpt2"], [64, 64])
    with pytest.raises(ValueError, match="equal length"):
        table.curves(["bert"], [64, 64])


def test_published_throughput_tables(shared_data):
    a100 = read_throughput_dir(shared_data / "elasticflow" / "throughputs_A100")
    t4 = read_throughput_dir(shared_data / "elasticflow" / "throughputs_T4")
    assert a100.models == ("bert", "deepspeech2", "gpt2", "inception3", "resnet50", "resnet50_cifar10", "vgg16")
    assert t4.models == ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
    np.testing.assert_array_equal(a100.gpu_counts, [1, 2, 4, 8, 16, 32, 64])
    assert math.isnan(a100.curve("deepspeech2", 32)[6]) and math.isnan(t4.curve("yolov3", 64)[5])
    assert a100.max_gpus("deepspeech2", 32) == 32 and a100.max_gpus("resnet50_cifar10", 64) == 8
    assert t4.max_gpus("yolov3", 64) == 16 and t4.max_gpus("deepspeech2", 320) == 32


def test_elasticflow_max_gpus():
    assert [elasticflow_max_gpus("bert", b) for b in (64, 128)] == [8, 16]
    assert [elasticflow_max_gpus("gpt2", b) for b in (128, 256)] == [16, 32]
    assert [elasticflow_max_gpus("inception3", b) for b in (64, 128)] == [16, 32]
    assert [elasticflow_max_gpus("resnet50", b) for b in (64, 128, 256)] == [32, 64, 64]
    assert [elasticflow_max_gpus("vgg16", b) for b in (64, 256)] == [32, 64]
    assert [elasticflow_max_gpus("deepspeech2", b) for b in (32, 64)] == [32, 64]
    assert elasticflow_max_gpus("resnet50_cifar10", 64) == 64
    t4 = {m: elasticflow_max_gpus(m, b, "T4") for m, b in
          [("bert", 384), ("cifar10", 2048), ("yolov3", 64), ("ncf", 32768), ("imagenet", 3200)]}
    assert t4 == {"bert": 16, "cifar10": 16, "yolov3": 4, "ncf": 1, "imagenet": 64}
    assert [elasticflow_max_gpus("deepspeech2", b, "T4") for b in (320, 640)] == [32, 64]
    with pytest.raises(ValueError, match="gpu_type"):
        elasticflow_max_gpus("bert", 64, "V100")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("global_batch_size,1,2,4,8,16,32\n64,1,2,3,4,5,6\n", ":1: column 8: GPU counts 1,2,4,8,16,32 differ from"),
        ("global_batch_size,1,2,3,8,16,32,64\n64,1,2,3,4,5,6,7\n", ":1: column 4: GPU counts 1,2,3,8,16,32,64 differ"),
        ("global_batch_size,1,2,8,4,16,32,64\n64,1,2,3,4,5,6,7\n", ":1: column 5: GPU counts must increase"),
        ("global_batch_size,1,2,4,eight,16,32,64\n64,1,2,3,4,5,6,7\n", ":1: column 5: GPU count expected a number"),
        ("batch,1,2,4,8,16,32,64\n64,1,2,3,4,5,6,7\n", ":1: column 1: expected the header global_batch_size"),
        (TABLE_HEADER + "64,1,2,fast,4,5,6,7\n", ":2: column '4': expected a number, got 'fast'"),
        (TABLE_HEADER + "64,1,2,3,4,5,6,7\n128,1,2,3,-4,5,6,7\n", ":3: column '8': must be >= 0, got '-4'"),
        (TABLE_HEADER + "64,1,2,3,4,5,6,inf\n", ":2: column '64': must be finite, got 'inf'"),
        (TABLE_HEADER + "64,1,2,3,4,5,6,7\n64,1,2,3,4,5,6,7\n", ":3: column global_batch_size: batch size 64 appears"),
        (TABLE_HEADER + "6.5,1,2,3,4,5,6,7\n", ":2: column global_batch_size: expected an integer, got '6.5'"),
        (TABLE_HEADER + "64,1,2,3,4,5,6\n", ":2: column 64: missing"),
        (TABLE_HEADER, ":1: no batch-size rows after the header"),
        ("", ":1: empty file"),
    ],
)
def test_malformed_throughput_tables(tmp_path, text, fragment):
    folder = write_tables(tmp_path, a=TABLE_HEADER + "64,1,2,3,4,5,6,7\n", b=text)
    raises(read_throughput_dir, folder, fragment, where=folder / "b.csv")


def test_throughput_dir_must_hold_tables(tmp_path):
    with pytest.raises(DeadlineInputError, match="no \\*.csv throughput tables"):
        read_throughput_dir(tmp_path)
    with pytest.raises(DeadlineInputError, match="not a directory"):
        read_throughput_dir(tmp_path / "absent")
