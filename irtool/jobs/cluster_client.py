"""The harness's Dask client, in a process of its own (``python -m irtool.jobs.cluster_client ADDRESS``).

Importing dask distributed and connecting to a scheduler costs about a second of CPU, a tenth
of a short run on two local workers when the harness paid it on its own critical path.  The
client process is started as soon as ``irtool harness --cluster`` has parsed its command line
(:func:`start`), imports and connects on another core while the harness reads its suites and
expands its jobs, as ``-j 2``'s pool processes start, and then only relays:

* to the harness: ``("ready", published, workers)`` once connected (what each worker published,
  the scheduler's view of each worker), or ``("error", message)``; ``("workers", workers)`` every
  POLL seconds; ``("done", task, answer)``, ``("failed", task, kind, message)`` or
  ``("cancelled", task, why)`` as each task ends; ``("lost", why)`` when the scheduler is gone;
* from the harness: ``("submit", task, resource, args)`` (a call of
  :func:`irtool.jobs.cluster_task.run_group`, by :func:`run_task`, on a worker offering
  ``resource``), ``("cancel", task)``, ``("close",)``.

Messages are pickled over the process's stdin and a duplicate of its stdout (Dask's logs go to
stderr, which the harness's stderr is).  The process ends when the harness closes its end, however
the harness ends.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
import warnings
from multiprocessing.connection import Connection
from typing import Any

from irtool.core.errors import IrtoolError
from irtool.jobs.cluster import CONNECT_TIMEOUT, EXTRA, ClusterError

POLL = 0.5  # seconds between the scheduler's views of its workers sent to the harness
LOST = "the connection to the scheduler was lost"
IMPORT_TIMEOUT = 60.0  # seconds for the client process to import dask, beside CONNECT_TIMEOUT to connect
ANSWER_TIMEOUT = 5.0  # seconds for the scheduler to say what workers it holds
CLOSE_TIMEOUT = 10.0  # seconds the client process has to close its connection before it is killed

_started: dict[str, ClientProcess] = {}  # scheduler address -> the client process started for it


class ClientProcess:
    """The harness's end of a client process (see the module docstring)."""

    def __init__(self, where: str):
        if importlib.util.find_spec("distributed") is None:
            raise ClusterError(f"the cluster needs dask distributed, which is not installed here: {EXTRA}")
        self.where = where
        self.process = subprocess.Popen([sys.executable, "-m", __name__, where], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
        self._send = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self._receive = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self.workers: dict[str, dict] = {}  # the scheduler's last view of each worker, by address
        self.published: dict[str, Any] = {}

    def connected(self) -> ClientProcess:
        """This, once its client has connected and read what the workers published; ClusterError if it cannot."""
        message = self._next(CONNECT_TIMEOUT + IMPORT_TIMEOUT)
        if not message or message[0] != "ready":
            self.close()
            raise ClusterError(message[1] if message and message[0] == "error" else
                               f"--cluster {self.where}: the cluster's client process "
                               + ("did not connect in time" if message is False else "ended"))
        self.published, self.workers = message[1], message[2]
        return self

    def submit(self, task: int, resource: str, args: tuple) -> None:
        self._tell(("submit", task, resource, args))

    def cancel(self, task: int) -> None:
        self._tell(("cancel", task))

    def events(self, timeout: float) -> list[tuple]:
        """The tasks' ends that arrive within ``timeout`` seconds (all that have arrived by the first),
        the view of the workers kept up to date; ``("lost", why)`` when the scheduler or this process is gone."""
        ends: list[tuple] = []
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(0 if ends else max(0.0, deadline - time.monotonic()))
            if message is False:
                return ends
            if message is None:
                return [*ends, ("lost", "the cluster's client process ended")]
            if message[0] == "workers":
                self.workers = message[1]
            else:
                ends.append(message)
                if message[0] == "lost":
                    return ends

    def close(self) -> None:
        self._tell(("close",))
        for connection in (self._send, self._receive):
            connection.close()
        try:
            self.process.wait(CLOSE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        _started.pop(self.where, None)

    def _tell(self, message: tuple) -> None:
        try:
            self._send.send(message)
        except (OSError, ValueError):  # the process has ended (events() says so) or this end is closed
            pass

    def _next(self, timeout: float) -> tuple | None | bool:
        """The next message, False if none came within ``timeout``, None if the process has ended."""
        try:
            if not self._receive.poll(timeout):
                return False
            return self._receive.recv()
        except (EOFError, OSError):
            return None


def start(where: str) -> None:
    """Start the client process for the scheduler at ``where`` now, for :func:`connect` to take later
    (ClusterError if distributed is not installed)."""
    if where not in _started:
        _started[where] = ClientProcess(where)


def connect(where: str) -> ClientProcess:
    """The client process of the scheduler at ``where`` (the one :func:`start` began, or a new one), connected."""
    return (_started.pop(where, None) or ClientProcess(where)).connected()


def main() -> None:
    """The client process: connect to the scheduler named by argv[1], then relay (module docstring)."""
    out = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # whatever prints goes to stderr, not into the messages
    inbox = Connection(0, writable=False)
    lock = threading.Lock()

    def send(message: tuple) -> None:
        with lock:
            try:
                out.send(message)
            except OSError:  # the harness has gone
                os._exit(0)

    try:
        from irtool.jobs.cluster import distributed, published

        dask = distributed()
        client = dask.Client(sys.argv[1], timeout=CONNECT_TIMEOUT, set_as_default=False)
        infos = client.run(published, on_error="return")
        send(("ready", {address: info if isinstance(info, dict) else None for address, info in infos.items()},
              _workers(client)))
    except IrtoolError as error:
        send(("error", error.message))
        os._exit(0)  # not Dask's: a Client that failed to connect waits 60 s in its __del__ at exit
    except (OSError, TimeoutError, ValueError) as error:
        send(("error", f"--cluster {sys.argv[1]}: cannot reach the scheduler ({error})"))
        os._exit(0)
    futures: dict[int, Any] = {}
    threading.Thread(target=_watch, args=(client, send), name="irtool-workers", daemon=True).start()

    def ended(task: int, future: Any) -> None:
        if futures.pop(task, None) is None:  # cancelled by the harness
            return
        try:
            send(("done", task, future.result()))
        except Exception as error:  # KilledWorker, a task that raised, or cancelled by the scheduler's loss
            kind = type(error).__name__
            send(("cancelled", task, LOST if "scheduler-connection-lost" in str(error) else str(error))
                 if future.cancelled() or "Cancelled" in kind else ("failed", task, kind, str(error)))
        finally:
            future.release()

    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            break
        if message[0] == "submit":
            _, task, name, args = message
            if client.status != "running":  # a task held now would wait out Dask's reconnecting
                send(("lost", LOST))
                continue
            with warnings.catch_warnings():  # a large task: its files, bounded (cluster_files.MAX_BYTES)
                warnings.simplefilter("ignore", UserWarning)
                futures[task] = future = client.submit(run_task, *args, resources={name: 1}, pure=False)
            future.add_done_callback(lambda future, task=task: ended(task, future))
        elif message[0] == "cancel" and message[1] in futures:
            futures.pop(message[1]).cancel()
        elif message[0] == "close":
            break
    if client.status == "running":
        client.close()
    os._exit(0)  # not Dask's 30 s of reconnecting to a scheduler gone


def run_task(*args: Any) -> dict[str, Any]:
    """:func:`irtool.jobs.cluster_task.run_group`, imported on the worker: what the client process
    submits (Dask pickles it by name), so that it need not import irtool's pool and worker modules
    before it sends the first task (a tenth of a second of CPU, half a second late on a busy machine)."""
    from irtool.jobs.cluster_task import run_group

    return run_group(*args)


def _workers(client: Any) -> dict[str, dict]:
    """The scheduler's view of each connected worker, by address (its name, resources, threads); TimeoutError
    if the scheduler does not answer within ANSWER_TIMEOUT."""
    info = client.sync(client.scheduler.identity, n_workers=-1, callback_timeout=ANSWER_TIMEOUT)
    return {address: {key: worker.get(key) for key in ("name", "resources", "nthreads")}
            for address, worker in info.get("workers", {}).items()}


def _watch(client: Any, send: Any) -> None:
    """Send the harness the scheduler's view of its workers every POLL, or that the scheduler is lost:
    the client reconnects (its status "connecting") only once it has lost the connection, and has then
    cancelled every task it held."""
    while True:
        time.sleep(POLL)
        if client.status != "running":
            send(("lost", LOST))
            return
        try:
            send(("workers", _workers(client)))
        except Exception:  # a busy scheduler (TimeoutError), the connection lost mid-call: the last view stands
            continue


if __name__ == "__main__":
    main()
