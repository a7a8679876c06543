"""The job machinery that the harness and reduce both run on, below both of them.

Suites of cases (:mod:`.suite`, their frontends :mod:`.frontends`), the records of cases,
jobs and results (:mod:`.records`), the worker that runs a job through the one pipeline
(:mod:`irtool.pipeline`) with its caches (:mod:`.worker`) and the results it makes
(:mod:`.job_results`), the pool of isolated worker
processes with timeouts (:mod:`.pool`), the zygote its workers are forked from
(:mod:`.zygote`), the lifeline that ends workers with their parent (:mod:`.lifeline`), environments of other OpenVINO releases that workers run in
(:mod:`.environments`), fault injection for tests (:mod:`.faults`), and the Dask side of a run
across machines: the scheduler and ``irtool worker`` (:mod:`.cluster`) and the task a worker
runs (:mod:`.cluster_task`) with the files its jobs name (:mod:`.cluster_files`), and the
harness's client in a process of its own (:mod:`.cluster_client`); distributed is imported only
there, only when used.

May import the pipeline and every layer below it; never harness, reduce or cli.
"""
