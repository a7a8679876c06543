"""Shared test fixtures: paths of the repository's samples."""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

# A test run started as a background job of a non-interactive shell (`pytest ... &`) inherits SIGINT
# ignored, and so would every irtool process the tests start: the SIGINT a test sends them would do
# nothing.  A handler here is reset to the default in each child, as an interactive shell leaves it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# In CI (CI=true) the property and fuzz tests draw the same examples every run, so a landing
# never depends on luck; on a developer's machine they draw new ones each run and keep what
# failed in .hypothesis/ (a failure found there becomes an example test, as in test_fuzz_inputs).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "ir"


# The longest modules, longest first (seconds on 2 cores, measured with --junitxml): pytest-xdist's
# loadscope hands out whole modules in collection order, one or two to a worker at a time, so the
# long ones go first and the run ends on short ones on both workers.  (xdist's own order, by number
# of tests, put these few-test long modules last: a minute with one worker idle.)
LONGEST_FIRST = [
    "test_harness_cluster", "test_docs_walkthroughs", "test_cli_reduce", "test_harness_pytest_plugin",
    "test_cli_harness", "test_docs_commands", "test_harness_openvino", "test_cli_run_releases", "test_harness_guard",
    "test_environments", "test_hostile_writes", "test_hostile_time", "test_harness_onnx", "test_run_lowered",
    "test_harness_resume", "test_harness_axes", "test_lowered_soundness", "test_hostile_crash", "test_run_bodies",
    "test_run_real_models", "test_packaging", "test_harness_rejudge", "test_harness_models", "test_hostile_text",
]


def pytest_collection_modifyitems(items: list) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: the rest as collected


def pytest_sessionstart(session) -> None:
    """irtool's bytecode, written once for the run (each xdist worker finds it current), even where
    PYTHONDONTWRITEBYTECODE is set: without it every irtool process the tests start (hundreds: the
    commands, their workers, pytest sessions of the plugin) compiled irtool again, half of what an
    ``irtool harness`` that refuses its input costs (1.1 s of CPU, 0.6 s with it)."""
    import compileall

    import irtool

    compileall.compile_dir(str(Path(irtool.__file__).resolve().parent), quiet=1)


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    return SAMPLES


def tracked_copy(target: Path) -> Path:
    """The repository's tracked files, as they are in the work tree, copied into ``target``:
    nothing generated, installed or ignored."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def shared_folder(tmp_path_factory, name: str) -> Path:
    """A folder of this test run that every xdist worker shares (lock it while filling it)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(exist_ok=True)
    return folder


OLDER_OPENVINO = "2025.4.1"  # the older release tests install (once per run: the cache is shared by xdist workers)


@pytest.fixture(scope="session")
def openvino_cache(tmp_path_factory) -> Path:
    """The environments' cache of this test run: one folder for every xdist worker (ensure() locks a
    release while it makes it), so that the older release is installed once."""
    return shared_folder(tmp_path_factory, "openvino-cache")


@pytest.fixture(scope="session")
def older_openvino(openvino_cache):
    """(Environment of OLDER_OPENVINO, what ensure() logged making it; empty if another worker made it)."""
    from irtool.jobs.environments import ensure

    log: list[str] = []
    return ensure(OLDER_OPENVINO, openvino_cache, log.append), log


@pytest.fixture(scope="session")
def cpu_precisions() -> tuple[str, ...]:
    """The precisions this machine's CPU lists in OPTIMIZATION_CAPABILITIES (bf16 only on CPUs
    with AVX512_BF16 or AMX): tests of reduced precision assert the run where the CPU has it, and
    the skip with its reason where it does not."""
    from irtool.runtime.devices import list_devices

    return next(d.precisions for d in list_devices().available if d.name == "CPU")


@pytest.fixture(scope="session")
def cpu_default_precision() -> str:
    """The precision the CPU runs at without a hint, as its capabilities imply (OpenVINO's CPU
    plugin: bf16 where OPTIMIZATION_CAPABILITIES lists BF16, i.e. AVX512_BF16 or AMX; else f16
    where it lists FP16, as on ARM; else f32), so that a test of ``--precision default`` asserts
    what it means on a CPU with or without bf16."""
    from irtool.runtime.devices import list_devices

    capabilities = next(d.capabilities for d in list_devices().available if d.name == "CPU")
    return "bf16" if "BF16" in capabilities else "f16" if "FP16" in capabilities else "f32"
@pytest.fixture
def device_node():
    """Make a character device (/dev/null's numbers) at a path; root only, else the test is skipped."""
    def make(path: Path) -> Path:
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device node needs root")
        return path
    return make


@pytest.fixture
def small_disk(tmp_path):
    """A 96 KiB tmpfs (needs root and mount(8)); skipped where it cannot be made."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(folder)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)
