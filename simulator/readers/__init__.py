"""Readers of published workload file formats: each turns one format into arrays, checked, with errors
that name the file, the line and the column. To read a new format, add a module here and a
``Jobs.from_<format>`` in :mod:`simulator.workload`, whose :func:`~simulator.workload.read_jobs` picks
the reader from the file.

In this package (nothing is imported here: ``from simulator.readers.traces import read_trace``):

- :mod:`.traces`: Gavel's tab-separated job traces (10 columns, the legacy 7, Shockwave's 12 with
  ``mode`` and ``duration``). :func:`~.traces.read_trace` yields a :class:`~.traces.Trace` (jobs as
  arrays in file order); :func:`~.traces.write_trace` / :func:`~.traces.trace_text` write it back.
  Errors: :class:`~.traces.TraceError`.
- :mod:`.elasticflow_traces`: deadline traces. :func:`~.elasticflow_traces.read_deadline_trace` reads
  ElasticFlow's CSV and its ITP and Philly variants (format chosen by the header) into a
  :class:`~.elasticflow_traces.DeadlineTrace`; :func:`~.elasticflow_traces.read_chronus_trace` reads
  Chronus's SLO CSV (times in minutes by default) into a :class:`~.elasticflow_traces.ChronusTrace`
  (deadline options in CSR form); ``deadline_trace_text`` / ``chronus_trace_text`` write them back.
  Errors: :class:`~.elasticflow_traces.DeadlineInputError`.
- :mod:`.csv_rows`: the CSV layer every CSV reader here shares (:func:`~.csv_rows.read_csv_rows`, a
  :class:`~.csv_rows.CsvRows` raising the reader's own input-error class, one line naming file,
  line and column, also for bytes that are not UTF-8).
- :mod:`.fields`: the one conversion of fields every reader (here and outside) shares, before numpy:
  numbers (:func:`~.fields.parse_numbers` for a column, :func:`~.fields.parse_number`,
  :func:`~.fields.json_number`: decimal ASCII, finite, below 2**63, integers exact), text
  (:func:`~.fields.read_text`) and JSON (:func:`~.fields.load_json`); a message quotes the value as
  written (:func:`~.fields.shown`).
- :mod:`.node_cluster`: ElasticFlow's cluster spec CSV (one row: switches, nodes per switch, GPUs,
  CPUs and memory per node). :func:`~.node_cluster.read_cluster_spec` yields a
  :class:`~.node_cluster.NodeCluster`.
- :mod:`.iteration_tables`: ElasticFlow's throughput tables, a folder of ``MODEL.csv`` (iterations/s
  per global batch size and GPU count). :func:`~.iteration_tables.read_throughput_dir` yields an
  :class:`~.iteration_tables.IterationTable` (exact lookups by model and batch size);
  :func:`~.iteration_tables.elasticflow_max_gpus` restates the GPU caps ElasticFlow's own policy sets
  by hand.
- :mod:`.pollux_traces`: Pollux's workload CSV (``workloads*/workload-N.csv``: name, time,
  application, num_replicas, batch_size). :func:`~.pollux_traces.read_pollux_trace` yields a
  :class:`~.pollux_traces.PolluxTrace`; :func:`~.pollux_traces.is_pollux_workload` tells one by its
  header; :func:`~.pollux_traces.pollux_trace_text` writes it back. Errors:
  :class:`~.pollux_traces.PolluxInputError`.
- :mod:`.helios_logs`: job logs with virtual clusters: Helios' job-log CSV (Venus, Saturn, Philly as
  Helios and Lucid released them) and the Philly CSV (``timestamp,duration,num_gpus,gpu_time,cluster``).
  :func:`~.helios_logs.read_job_log` (GPU jobs, VC and submission-window filters) yields a
  :class:`~.helios_logs.JobLog`; :func:`~.helios_logs.job_log_text` writes it back. Errors:
  :class:`~.helios_logs.LucidInputError`.
- :mod:`.lucid_measurements`: Lucid's VC configs (:func:`~.lucid_measurements.read_vc_config`, a
  :class:`~.lucid_measurements.VcConfig`), profiled workloads (``single_data.csv``,
  :func:`~.lucid_measurements.read_profiles`) and measured co-locations (``colocate_info.csv``,
  :func:`~.lucid_measurements.read_colocations`). Each job's drawn workload and the pair-speed matrix are
  in :mod:`simulator.lucid_profiles`.

Readers that stay next to the model they build, outside this package:

- :mod:`simulator.throughputs`: Gavel's throughput JSON (``simulation_throughputs.json``: steps/s per
  job type and worker type, alone and co-located). :func:`~simulator.throughputs.read_gavel_json`
  yields a :class:`~simulator.throughputs.ThroughputTable`, the rate table the round clock, the
  snapshots and the job sampler compute with (co-located pairs included), so the module is that
  model's home; :func:`~simulator.throughputs.find_gavel_table` finds the file beside a trace,
  :func:`~simulator.throughputs.write_gavel_json` writes one.
- :mod:`simulator.applications`: Pollux's application measurements (``traces/<app>/``:
  ``placements.csv``, ``scalability.csv``, ``validation-<B>.csv``).
  :func:`~simulator.applications.read_application` / ``read_applications`` yield
  :class:`~simulator.applications.Application` objects, which mostly hold Pollux's job model (step
  times interpolated over placements, gradient statistics, epoch boundaries).
- :mod:`simulator.workload`: :func:`~simulator.workload.read_jobs` reads any trace above, chosen from
  the file, into the one job model (:class:`~simulator.workload.Jobs`).
- :mod:`simulator.jobs`: :func:`~simulator.jobs.read_jobs_csv` reads this project's own jobs CSV
  (one allocation snapshot's jobs) into a :class:`~simulator.jobs.JobSet`.
"""
