"""How ``irtool harness --cluster`` cuts a run into Dask tasks and what a task carries back, without a
cluster: the order tasks go out in, how many jobs each takes, the worker's paths said back as the
harness's, and where a worker keeps a task's files."""
from __future__ import annotations

import json
from collections import Counter, deque
from pathlib import Path

import pytest

from irtool.harness import cluster
from irtool.harness.matrix import make_jobs
from irtool.jobs import cluster_task
from irtool.jobs.cluster_files import unland
from irtool.jobs.pool import groups_of
from irtool.jobs.records import RecordError
from irtool.jobs.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "samples" / "suites" / "smoke.toml"


def _groups(devices: list[str]) -> list[list]:
    return groups_of(make_jobs(load_suite(SMOKE).cases, devices, ["f32"], None, [None]))


def test_tasks_take_whole_groups_fewer_jobs_as_the_queue_empties_and_files_within_the_bound(monkeypatch):
    groups = _groups(["CPU"])
    queue = deque(groups)
    tasks = []
    while queue:
        tasks.append(cluster._task_jobs(queue, 2))
    assert [job for task in tasks for job in task] == [job for group in groups for job in group]  # in order, once
    assert all(any(all(job in task for job in group) for task in tasks) for group in groups)  # none split
    sizes = [len(task) for task in tasks]
    assert sizes[0] == -(-36 // (2 * cluster.CHUNKS_PER_LANE)) and sizes == sorted(sizes, reverse=True)
    assert len(tasks) < len(groups) and sizes[-1] == 1
    monkeypatch.setattr(cluster, "files_size", lambda jobs: cluster.MAX_BYTES // 2 + 1)  # two groups' files: too many
    assert len(cluster._task_jobs(deque(groups), 2)) == len(groups[0])


def test_tasks_go_out_in_the_runs_order_whatever_their_device():
    """A run on CPU and AUTO:CPU orders each case's jobs CPU, AUTO:CPU: its tasks go out in that
    order, the devices taking turns, not every CPU job before the first of AUTO:CPU."""
    groups = _groups(["CPU", "AUTO:CPU"])
    position = {group[0].key: index for index, group in enumerate(groups)}
    waiting: dict[str, deque] = {}
    for group in groups:
        waiting.setdefault(group[0].device, deque()).append(group)
    room = {"CPU": 1, "AUTO:CPU": 1}
    busy: Counter = Counter()
    firsts, devices = [], []
    while (name := cluster._next_resource(waiting, position, busy, room)) is not None:
        task = cluster._task_jobs(waiting[name], 2)
        firsts.append(position[task[0].key])
        devices.append(name)
        busy[name] += 1
        if not cluster._next_resource(waiting, position, busy, room):  # both lanes busy: the older task ends
            busy.clear()
    assert len(devices) > 4 and firsts == sorted(firsts)
    assert all(devices[k] != devices[k + 1] for k in range(len(devices) - 1))
    assert cluster._next_resource(waiting, position, Counter(), room) is None and not any(waiting.values())
    assert cluster._next_resource({"CPU": deque(groups[:1])}, position, Counter({"CPU": 1}), room) is None  # no room


def test_paths_a_worker_landed_are_said_back_as_the_harness_own_however_json_spells_them(tmp_path):
    landed = "/tmp/irtool-files-a\"b"
    folders = {"0": str(tmp_path / 'mo"dels\\ü'), "1": "/suites/x"}
    results = [{"file": f"{landed}/0/lstm.xml", "message": f"{landed}/1/in.npz and {landed}/10/other.npz"}]
    back = json.loads(unland(json.dumps(results), landed, folders))
    assert back == [{"file": f"{folders['0']}/lstm.xml",
                     "message": f"/suites/x/in.npz and {landed}/10/other.npz"}]  # folder 10 was not sent: kept
    assert unland(json.dumps(results), landed, {}) == json.dumps(results)
    with pytest.raises(RecordError, match="not irtool's JSON"):  # the harness gives its jobs up as lost, with why
        cluster_task.results_of({"results": '[{"case": "a"', "landed": landed}, folders)


def test_a_worker_keeps_a_tasks_files_in_memory_where_it_has_room_else_in_the_temp_folder(monkeypatch, tmp_path):
    found = cluster_task._scratch()
    assert found is None or (Path(found).is_dir() and Path(found) == cluster_task.MEMORY)
    monkeypatch.setattr(cluster_task, "MEMORY_FREE", 1 << 62)  # more than any machine has
    assert cluster_task._scratch() is None
    monkeypatch.setattr(cluster_task, "MEMORY_FREE", 0)
    monkeypatch.setattr(cluster_task, "MEMORY", tmp_path / "absent")
    assert cluster_task._scratch() is None
    monkeypatch.setattr(cluster_task, "MEMORY", tmp_path)
    assert cluster_task._scratch() == str(tmp_path)
