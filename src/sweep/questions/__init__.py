"""Real questions into a prioritised labelling queue (issue 27, the producing half).

    rows      read questions from logs (CSV, TSV, JSONL, text; gzip too) and OpenTelemetry
              exports, one `Row` at a time, with feedback and time
    merge     normalise, redact, merge exact and near duplicates into `Candidate`s
    priority  the queue's order and each candidate's reason
    locate    where BM25 and dense search put each question (disagreement, coverage)
    generate  synthetic candidates from passages of the corpus through a chat endpoint
    queue     the queue file, its decisions file and the import report

The package sits with the stages (pyproject's layers contract): it takes plain rows, specs and
arrays, and imports no config, tracking or command. MLflow traces are read by
`sweep.outputs.tracking`, and `sweep.application.questions` turns them into the same `Row`s
(`questions.traces`) and joins the two.
"""
