"""The regression harness: suites of cases run across devices and precisions in isolated
workers, results kept as they finish, and reports (json, junit, html, baseline diff).

Modules: ``suite`` reads TOML suites into cases; ``matrix`` crosses them with devices and
precisions into jobs (and skips what cannot run here); ``worker`` runs jobs in a child
process; ``pool`` drives the workers with timeouts and crash recovery; ``store`` appends
results to JSONL and resumes; ``expectations`` applies the known-failures file;
``reports``, ``junit``, ``html``, ``reproducer``, ``baseline`` and ``merge`` write and
compare what a run found.
"""
