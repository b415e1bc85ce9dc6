"""Every reader under hostile inputs (:mod:`fuzzing`): mutations of a small valid file of each published
format and of this project's own files, read in-process; each case returns or is one error line naming
the file (line, column and value for a field), never a traceback or a hang."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from fuzzing import Case, Format, cases, check, field_values
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators.shockwave.config import ShockwaveConfigError, read_shockwave_config
from schedopt.experiments.spec import ExperimentError, read_experiment
from simulator import example_table
from simulator.cluster import ClusterSpecError, parse_cluster
from simulator.jobs import JobsFileError, read_jobs_csv
from simulator.problem_files import ProblemFileError, read_problem_json
from simulator.readers.elasticflow_traces import DeadlineInputError
from simulator.readers.helios_logs import LucidInputError
from simulator.readers.iteration_tables import read_throughput_dir
from simulator.readers.lucid_measurements import read_colocations, read_profiles, read_vc_config
from simulator.readers.node_cluster import read_cluster_spec
from simulator.readers.pollux_traces import PolluxInputError
from simulator.readers.traces import COLUMNS, LEGACY_COLUMNS, SHOCKWAVE_COLUMNS, TraceError
from simulator.throughputs import ThroughputTableError, read_gavel_json
from simulator.workload import read_jobs

#: generated cases per format and run (the formats below: over 2,000 in all)
CASES = 110
#: what read_jobs may raise: it picks the reader from the first line, which a mutation may change
TRACE_ERRORS = (TraceError, DeadlineInputError, PolluxInputError, LucidInputError)
TABLE = example_table()

GAVEL = ("ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t4000\t1\t1\t-1\t0\n"
         "Transformer (batch size 64)\tpython3 train.py\ttranslation\t-step\t1\t2000\t2\t1\t1.2\t30.5\n"
         "LM (batch size 20)\tpython main.py\tlanguage_modeling\t--steps\t0\t1000\t1\t5\t-1\t60\n")
LEGACY = ("ResNet-18 (batch size 64)\tpython3 main.py\t--num_steps\t1\t4000\t0\t1\n"
          "LM (batch size 20)\tpython main.py\t--steps\t0\t1000\t12.5\t4\n")
SHOCKWAVE = ("ResNet-18 (batch size 64)\tpython3 main.py\tcifar10\t--num_steps\t1\t4000\t1\tstatic\t1\t-1\t310.5\t0\n"
             "ResNet-50 (batch size 64)\tpython3 main.py\tin\t--num_steps\t1\t9000\t2\taccordion\t1\t-1\t900\t12\n"
             "LM (batch size 20)\tpython main.py\tlm\t--steps\t0\t1000\t1\tgns\t5\t1.5\t120\t40\n")
ELASTICFLOW = ("job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration,best_effort\n"
               "0,0,77215,resnet50,4426,256,1,3930,0\n7,2811.5,94898,vgg16,0,64,8,4830,1\n"
               "9,3000,1000,bert,90000,64,2,100,0\n")
ITP = ("job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
       "d36ea58c-460e,3793,4847,gpt2,4573,256,1,1183\n3d84456b-6929,3794,4441,resnet50,5346,128,4,1215\n")
CHRONUS = ("job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
           "expect_value_list,best_effort,job_type\n0,vc_6214e9,1,8555,5049,vgg16,747,14,1105-1300,10-5,0,strict\n"
           "1,vc_ed69ec,2,832,296,mobilenet_v2,98,8,832,0,1,best\n2,vc_a,1,900,100,bert,50,8,128,10,0,soft\n")
POLLUX = "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\nncf-1,110,ncf,1,256\n" \
         "bert-2,200.5,bert,2,12\n"
HELIOS = ("job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
          "1,u1,vcA,n1,2,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:01:00,2020-04-01 00:02:00,60,60\n"
          "2,u2,vcB,n2,0,4,1,FAILED,2020-04-01 00:05:00,2020-04-01 00:05:00,2020-04-01 00:06:00,60,0\n"
          "3,u1,vcA,n3,8,8,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 01:00:00,3360,60\n")
PHILLY = ("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,5,1,5,vc1\n"
          "2017-10-01 00:00:09,60,4,240,vc2\n")
CLUSTER = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,16,4,64,256\n"
VC = "vc,node num\nvcA,3\nvcB,1\n"
PROFILES = ("model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label\n"
            "resnet18,cifar10,64,0,1200.5,87,40,3000,2\nbert,squad,32,1,80,95,70,9000,1\n")
PAIRS = (",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2,"
         "gpu_util,gmem_util,gmem\n0,resnet18,cifar10,1,64,0,0.8,bert,squad,1,32,1,0.6,99,80,12000\n"
         "1,resnet18,cifar10,1,64,0,0.9,resnet18,cifar10,1,64,0,0.9,98,60,6000\n")
JOBS = ("job_id,job_type,scale_factor,priority_weight,total_steps,slo\n7,LM (batch size 20),1,5,1000,\n"
        "8,ResNet-50 (batch size 64),1,1,20000,3600\n9,Transformer (batch size 64),1,,500.5,\n")
ITERATIONS = "global_batch_size,1,2,4,8\n64,6.03,8.64,10.36,nan\n128,3.1,5.2,,9.9\n"
OTHER_TABLE = "global_batch_size,1,2,4,8\n32,1,2,3,4\n"
GAVEL_JSON = ('{"v100": {"(\'A\', 1)": {"null": 2.0, "(\'B\', 1)": [1.0, 0.5]}, "(\'B\', 1)": {"null": 1.5}, '
              '"(\'A\', 2)": {"null": 3.5}}, "k80": {"(\'A\', 1)": {"null": 0.5}}, '
              '"v100_unconsolidated": {"(\'A\', 2)": {"null": 3.0}}}')
SHOCKWAVE_CONFIG = ('{"future_rounds": 20, "k": 1e-3, "lambda": 12, "rhomax": 1.0, "solver_rel_gap": 1e-3, '
                    '"solver_timeout": 15, "gpu_ram": 16, "reoptimize_every": 8, "oracle": false, '
                    '"log_approximation_bases": [0, 0.5, 1]}')
PROBLEM = ('{"policy": "max_min_fairness_perf", "solver": "highs", "check": "invariants", "message": "m", '
           '"problem": {"worker_types": ["v100", "k80"], "capacities": [2, 1], "job_ids": [0, 5], '
           '"job_types": ["A", "B"], "scale_factors": [1, 1], "weights": [1, 2.5], "throughputs": [[2, 1], '
           '[1, 0.5]], "remaining_steps": [100, 200], "time_since_arrival": null, "slo_remaining": '
           '[Infinity, 3600], "prices": null, "pairs": {"first": [0], "second": [1], "rates": [[[1, 0.5], '
           '[0.5, 0.25]]]}}}')
EXPERIMENT = """[experiment]
name = "fuzz"
sweep = "lam"
x_label = "seconds"

[fixed]
generate = 8
cluster = "v100=2,p100=2"
round = 360.0

[axes]
policy = ["max_min_fairness_perf", "fifo"]
lam = [900.0, 1_800.5]
seed = [0, 1]
"""


def _tables(path: Path):
    """The folder of ``path`` (the mutated table) and a valid one, as ElasticFlow lays its tables out."""
    (path.parent / "resnet50.csv").write_text(OTHER_TABLE)
    return read_throughput_dir(path.parent)


def _experiment(path: Path):
    return read_experiment(path).cells()


FORMATS = [
    Format("gavel", "g.trace", GAVEL, "tsv", read_jobs, TRACE_ERRORS, COLUMNS),
    Format("gavel-legacy", "legacy.trace", LEGACY, "tsv", read_jobs, TRACE_ERRORS, LEGACY_COLUMNS),
    Format("shockwave", "s.trace", SHOCKWAVE, "tsv", read_jobs, TRACE_ERRORS, SHOCKWAVE_COLUMNS),
    Format("elasticflow", "ef.csv", ELASTICFLOW, "csv", read_jobs, TRACE_ERRORS),
    Format("itp", "itp.csv", ITP, "csv", read_jobs, TRACE_ERRORS),
    Format("chronus", "chronus.csv", CHRONUS, "csv", read_jobs, TRACE_ERRORS),
    Format("pollux", "workload-1.csv", POLLUX, "csv", read_jobs, TRACE_ERRORS),
    Format("helios", "cluster_log.csv", HELIOS, "csv", read_jobs, TRACE_ERRORS),
    Format("philly", "philly.csv", PHILLY, "csv", read_jobs, TRACE_ERRORS),
    Format("cluster-spec", "n16g4.csv", CLUSTER, "csv", read_cluster_spec, (DeadlineInputError,)),
    Format("iteration-tables", "tables/bert.csv", ITERATIONS, "csv", _tables, (DeadlineInputError,),
           extra={"resnet50.csv": OTHER_TABLE}),
    Format("vc-config", "vc_config.csv", VC, "csv", read_vc_config, (LucidInputError,)),
    Format("lucid-profiles", "single_data.csv", PROFILES, "csv", read_profiles, (LucidInputError,)),
    Format("lucid-pairs", "colocate_info.csv", PAIRS, "csv", read_colocations, (LucidInputError,)),
    Format("jobs-csv", "jobs.csv", JOBS, "csv", lambda p: read_jobs_csv(p, TABLE), (JobsFileError,)),
    Format("gavel-json", "simulation_throughputs.json", GAVEL_JSON, "json", read_gavel_json, (ThroughputTableError,)),
    Format("shockwave-config", "tacc_32gpus.json", SHOCKWAVE_CONFIG, "json", read_shockwave_config,
           (ShockwaveConfigError,)),
    Format("counterexample", "max_min.invariants.json", PROBLEM, "json", read_problem_json, (ProblemFileError,)),
    Format("experiment", "fuzz.toml", EXPERIMENT, "toml", _experiment, (ExperimentError,)),
]


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory(prefix="schedopt-fuzz-") as folder:
        yield Path(folder)


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.label for f in FORMATS])
def test_every_seed_reads(fmt, scratch):
    path = scratch / fmt.name
    path.parent.mkdir(exist_ok=True)
    path.write_text(fmt.seed)
    assert check(fmt, path, Case("seed", fmt.seed.encode())) is None


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.label for f in FORMATS])
def test_a_mutated_file_reads_or_is_one_error_line(fmt, scratch):
    """CASES generated files of the format (over 2,000 in all), each read or refused in one line; the
    format both accepted and refused some."""
    path = scratch / fmt.name
    path.parent.mkdir(exist_ok=True)
    outcomes: Counter = Counter()

    @settings(max_examples=CASES)
    @given(case=cases(fmt))
    def run(case: Case) -> None:
        path.write_bytes(case.data)
        outcomes[check(fmt, path, case) is None] += 1

    run()
    assert outcomes.total() >= CASES and outcomes[False] > 0, outcomes


@settings(max_examples=CASES)
@given(spec=st.lists(st.tuples(st.sampled_from(("v100", "p100", "", "A-1", "ü", "1x", "v100 ")),
                               st.sampled_from(("=", "", "==", ":")), field_values()),
                     min_size=1, max_size=4).map(lambda parts: ",".join(n + s + c for n, s, c in parts)))
def test_a_mutated_cluster_spec_runs_or_is_one_error_line(spec):
    try:
        cluster = parse_cluster(spec)
    except ClusterSpecError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(f"cluster spec {spec!r}: ")
    else:
        assert (cluster.gpus >= 1).all() and cluster.gpus.dtype == np.int64
