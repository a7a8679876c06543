"""The regression harness: suites of cases run across devices, precisions and OpenVINO releases
in isolated workers, results kept as they finish, and reports (json, junit, html, baseline diff).

Modules: ``session`` runs a harness run (the matrix, the workers, the store, the reports);
``matrix`` crosses cases with devices and precisions into jobs (and skips what cannot run
here); ``store`` appends results to JSONL and resumes; ``expectations`` applies the
known-failures file; ``coverage`` gathers the implementations reached; ``reports``, ``junit``,
``html``, ``report_files``, ``baseline`` and ``merge`` write and compare what a run found;
``lock`` and ``marker`` keep a report dir one run's; ``pytest_plugin`` runs suites as tests;
``cluster`` places a run's jobs on the workers of a Dask scheduler (``--cluster``).

May import jobs, the pipeline and every layer below them; never reduce (a sibling) or cli.
"""
