"""Helios / Philly job logs, VC configs, Lucid's measurements and the seeded workload draw."""

import re
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.lucid_profiles import UNLOOKED_MODELS, draw_profiles, pair_speeds
from simulator.readers.helios_logs import JobLog, LucidInputError, job_log_text, read_job_log
from simulator.readers.lucid_measurements import read_colocations, read_profiles, read_vc_config
from simulator.workload import Jobs, read_jobs, write_jobs

HELIOS = "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster"
WEEK = ("2017-10-01 00:00:00", "2017-10-07 23:59:00")


def same_log(a: JobLog, b: JobLog) -> bool:
    def equal(x, y):
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(equal(x[k], y[k]) for k in x)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            return x is not None and y is not None and np.array_equal(x, y)
        return x == y
    return all(equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(JobLog) if f.name != "source")


def write(tmp_path, text, name="log.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


names = st.text("abcXYZ019_-", min_size=1, max_size=6)
seconds = st.integers(0, 10**9)
rows = st.lists(st.tuples(names, names, st.sampled_from(["vcA", "vcB", "6214e9"]), st.integers(0, 64),
                          seconds, st.one_of(st.integers(0, 10**7), st.floats(0, 1e7, allow_nan=False)),
                          st.sampled_from(["COMPLETED", "FAILED", "a, quoted"])),
                min_size=1, max_size=12).filter(lambda rs: any(r[3] > 0 for r in rs))


def helios_text(rs, dated):
    def time(t):
        return str(np.datetime64(t, "s")).replace("T", " ") if dated else str(t)
    lines = [HELIOS]
    for i, (job, user, vc, gpus, submit, duration, state) in enumerate(rs):
        lines.append(f"{job}{i},{user},{vc},name{i},{gpus},4,1,\"{state}\",{time(submit)},{time(submit + 5)},"
                     f"{time(submit + 9)},{duration!r},5")
    return "\n".join(lines) + "\n"


def philly_text(rs):
    lines = [PHILLY] + [f"{np.datetime_as_string(np.datetime64(s, 's')).replace('T', ' ')},{d!r},{g},{g * d!r},{vc}"
                        for _, _, vc, g, s, d, _ in rs]
    return "\n".join(lines) + "\n"


@given(rows, st.booleans(), st.booleans())
def test_job_logs_round_trip(tmp_path_factory, rs, dated, philly):
    tmp_path = tmp_path_factory.mktemp("log")
    log = read_job_log(write(tmp_path, philly_text(rs) if philly else helios_text(rs, dated)))
    assert same_log(read_job_log(write(tmp_path, job_log_text(log), "back.csv")), log)
    assert (np.diff(log.submit) >= 0).all() and (log.gpus > 0).all() and log.arrival[0] == 0
    assert sorted(log.vc) == sorted(vc for _, _, vc, g, *_ in rs if g > 0)
    jobs = read_jobs(tmp_path / "log.csv")
    write_jobs(jobs, tmp_path / "jobs.csv")
    again = read_jobs(tmp_path / "jobs.csv")
    assert same_log(again.record, jobs.record) and np.array_equal(again.vc, log.vc)
    assert np.array_equal(jobs.work, log.duration) and np.array_equal(jobs.requested, log.gpus)
    assert jobs.unit == "seconds" and jobs.best_effort.all()


@given(rows, st.integers(0, 10**9), st.integers(0, 10**8))
def test_window_keeps_both_ends_and_round_trips(tmp_path_factory, rs, first, span):
    tmp_path = tmp_path_factory.mktemp("log")
    path = write(tmp_path, helios_text(rs, False))
    whole = read_job_log(path)
    inside = (whole.submit >= first) & (whole.submit <= first + span)
    if not inside.any():
        with pytest.raises(LucidInputError, match="no jobs left"):
            read_job_log(path, window=(first, first + span))
        return
    log = read_job_log(path, window=(first, first + span))
    assert np.array_equal(log.job_ids, whole.job_ids[inside])
    assert np.array_equal(log.arrival, whole.submit[inside] - first)
    back = read_job_log(write(tmp_path, job_log_text(log), "back.csv"), window=(first, first + span))
    assert same_log(back, log)


GOOD_HELIOS = HELIOS + "\n1,u,vcA,n,2,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:01:00,2020-04-01 00:02:00,60,60\n"


@pytest.mark.parametrize("column, value, problem", [
    ("gpu_num", "-1", "must be >= 0"), ("gpu_num", "nan", "must be finite"), ("gpu_num", "inf", "must be finite"),
    ("gpu_num", "99999999999999999999999", "out of range"), ("gpu_num", "1.5", "expected an integer"),
    ("gpu_num", "two", "expected a number"), ("duration", "-3", "must be >= 0"), ("duration", "1e400", "finite"),
    ("duration", "1e19", "out of range"), ("duration", "NaN", "finite"),
    ("submit_time", "2020-13-01 00:00:00", "not a valid date-time"), ("submit_time", "NaT", "expected a date-time"),
    ("submit_time", "20200401", "expected a date-time"), ("vc", "", "empty"),
])
def test_bad_helios_rows_name_file_line_column(tmp_path, column, value, problem):
    header = HELIOS.split(",")
    row = GOOD_HELIOS.splitlines()[1].split(",")
    row[header.index(column)] = value
    path = write(tmp_path, GOOD_HELIOS + ",".join(row) + "\n")
    for read in (read_job_log, read_jobs):
        with pytest.raises(LucidInputError) as info:
            read(path)
        message = str(info.value)
        assert "\n" not in message and message.startswith(f"{path}:3: column {column}: ") and problem in message


@pytest.mark.parametrize("text, where", [
    (PHILLY + "\n2017-10-01 00:00:00,5,1,5,vc\n2017-10-01 00:00:01,5,-2,5,vc\n", ":3: column num_gpus: must be >= 0"),
    (PHILLY + "\n2017-10-01 00:00:00,5,1,5\n", ":2: column cluster: missing"),
    (PHILLY + "\n2017-10-01 00:00:00,5,1,5,vc,x\n", ":2: column 6: extra value"),
    (PHILLY.encode() + b"\n2017-10-01 00:00:00,5,1,5,vc\n2017-10-01 00:00:00,5,1,5,v\xffc\n",
     ":3: column cluster: not UTF-8"),
    (PHILLY + "\n2017-10-01 00:00:00,5,1,5,vc\n12,5,1,5,vc\n", ":3: column timestamp: expected a date-time"),
    ("job_id,vc,gpu_num,duration\n1,a,1,5\n", ":1: not a job log header"),
])
def test_bad_philly_rows(tmp_path, text, where):
    path = write(tmp_path, text)
    with pytest.raises(LucidInputError, match=re.escape(f"{path}{where}")) as info:
        read_job_log(path)
    assert "\n" not in str(info.value)


def test_window_bounds_must_match_the_log(tmp_path):
    path = write(tmp_path, GOOD_HELIOS)
    with pytest.raises(LucidInputError, match="date-times, give one"):
        read_job_log(path, window=(0, 10))
    assert len(read_job_log(path, window=("2020-04-01", "2020-04-01 00:00:00"))) == 1


def test_vc_configs(tmp_path):
    config = read_vc_config(write(tmp_path, "vc,node num\nvcA,3\nvcB,1\n"))
    assert config.as_dict() == {"vcA": 3, "vcB": 1} and config.gpus.tolist() == [24, 8]
    assert read_vc_config(write(tmp_path, ",num\nvcA,2\n")).as_dict() == {"vcA": 2}
    for text, where in [("vc,node num\nvcA,3\nvcA,1\n", ":3: column vc: VC 'vcA' repeats line 2"),
                        ("vc,node num\nvcA,0\n", ":2: column node num: must be >= 1"),
                        ("vc,node num\nvcA,1e30\n", ":2: column node num: out of range"),
                        ("vc,node num\nvcA,x\n", ":2: column node num: expected a number"),
                        ("vc,nodes\nvcA,1\n", ":1: not a VC config header")]:
        path = write(tmp_path, text, "vc.csv")
        with pytest.raises(LucidInputError, match=re.escape(f"{path}{where}")):
            read_vc_config(path)


PROFILES = ("model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label\n"
            "A,D,32,0,10.0,50,20,1000,0\nB,D,32,1,5.0,90,60,9000,2\nNeuMF,M,64,0,7.0,20,5,800,0\n")
PAIRS = (",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2,"
         "gpu_util,gmem_util,gmem\n0,A,D,1,32,0,0.9,B,D,1,32,1,0.5,95,70,10000\n"
         "1,A,D,1,32,0,0.8,A,D,1,32,0,0.6,80,30,2000\n")


def test_pair_speeds_from_measurements(tmp_path):
    profiles = read_profiles(write(tmp_path, PROFILES, "single.csv"))
    pairs = read_colocations(write(tmp_path, PAIRS, "pairs.csv"))
    speed = pair_speeds(profiles, pairs)
    assert speed[0, 1] == 0.9 and speed[1, 0] == 0.5 and speed[0, 0] == pytest.approx(0.7)
    assert np.isnan(speed[1, 1]) and (speed[2, :] == 1).all() and (speed[:, 2] == 1).all()
    assert np.isnan(pair_speeds(profiles, pairs, published=False)[2, 0])
    bad = PAIRS + "2,B,D,1,32,1,0.4,A,D,1,32,0,0.4,1,1,1\n"
    path = write(tmp_path, bad, "bad.csv")
    with pytest.raises(LucidInputError, match=re.escape(f"{path}:4: column model: pair")):
        read_colocations(path)
    path = write(tmp_path, PROFILES.replace("2\nNeuMF", "3\nNeuMF"), "bad_label.csv")
    with pytest.raises(LucidInputError, match=re.escape(f"{path}:3: column label: expected one of 0, 1, 2")):
        read_profiles(path)


@given(st.lists(st.one_of(st.integers(-10**12, 10**12), names), min_size=1, max_size=50, unique=True),
       st.integers(0, 2**64 - 1))
def test_draw_is_seeded_per_job_and_only_profiled(tmp_path_factory, ids, seed):
    profiles = read_profiles(write(tmp_path_factory.mktemp("p"), PROFILES, "single.csv"))
    ids = np.array(ids, dtype=object)
    drawn = draw_profiles(ids, profiles, seed)
    assert drawn.dtype == np.int64 and ((drawn >= 0) & (drawn < len(profiles))).all()
    assert np.array_equal(drawn, draw_profiles(ids, profiles, seed))
    order = np.arange(len(ids))[::-1]
    assert np.array_equal(draw_profiles(ids[order], profiles, seed), drawn[order])


def test_published_files(shared_data):
    lucid = shared_data / "lucid"
    philly = shared_data / "pollux" / "traces" / "philly.csv"
    whole = read_job_log(philly)
    assert len(whole) == 82_247 and whole.dated and (np.diff(whole.submit) >= 0).all()
    jobs = read_jobs(philly)
    assert isinstance(jobs, Jobs) and len(jobs) == 82_247 and jobs.arrival.min() == 0
    config = read_vc_config(lucid / "philly" / "vc_config.csv")
    week = read_job_log(philly, window=WEEK, vcs=config.names)
    assert len(week) == 10_650 and set(week.vc) <= set(config.names) and week.arrival.min() >= 0
    assert week.arrival.max() <= 7 * 86400 and np.array_equal(week.job_ids, np.sort(week.job_ids))
    assert len(config) == 11 and read_vc_config(lucid / "venus" / "vc_config.csv").as_dict()["vcJsw"] == 32
    profiles = read_profiles(lucid / "single_data.csv")
    pairs = read_colocations(lucid / "colocate_info.csv")
    assert len(profiles) == 66 and len(pairs) == 1388 and (pairs.gpus == 1).all()
    speed = pair_speeds(profiles, pairs)
    assert not np.isnan(speed).any()  # every pair the published lookup makes is measured
    measured = ~np.isin(profiles.model, np.array(UNLOOKED_MODELS, dtype=object))
    assert measured.sum() == 52 and not np.isnan(pair_speeds(profiles, pairs, published=False)[
        np.ix_(measured, measured)]).any()
    drawn = draw_profiles(whole.job_ids, profiles, seed=0)
    assert np.bincount(drawn, minlength=66).min() > 0
    in_week = np.isin(whole.job_ids, week.job_ids)
    assert np.array_equal(draw_profiles(week.job_ids, profiles, seed=0), drawn[in_week])
