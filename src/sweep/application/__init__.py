"""The application layer: what the commands call, over plain data (issue 42).

- `sweep.application.job.run_job(JobSpec) -> JobResult`: one configuration, end to end.
- `sweep.application.corpus.open_corpus_view(JobSpec)`: its corpus, golden set, chunks,
  indexes and search, each built once.
- `sweep.application.sweep.finish_sweep(SweepSpec, reports) -> SweepOutcome`: the end of a
  sweep (table, verdicts, power, axis effects, Pareto fronts, audit, shared-work totals).

Below it, `sweep.pipeline` holds the steps and the stages do the work; above it, `sweep.cli`
and `sweep.label` parse arguments, print, and talk to Hydra and MLflow. No Hydra, no printing
and no MLflow call here (import contracts in pyproject.toml).
"""
