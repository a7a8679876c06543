"""The job machinery that the harness and reduce both run on, below both of them.

Suites of cases (:mod:`.suite`), the records of cases, jobs and results (:mod:`.records`),
the worker that runs a job through the one pipeline of :mod:`irtool.execute` with its caches
(:mod:`.worker`), the pool of isolated worker processes with timeouts (:mod:`.pool`), the
lifeline that ends workers with their parent (:mod:`.lifeline`), and fault injection for
tests (:mod:`.faults`).  Neither harness nor reduce imports the other.
"""
