"""irtool.core.files: what a user names is read only if it is a regular file, bounded, without ever
blocking; writes replace only regular files, whole, with the user's umask, and pairs together."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from irtool.core import files
from irtool.core.files import FileError, read_bytes, read_text, replace_files, writable_target, write_atomic


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def umask():
    """Set a umask for one test, and give the old one back."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


# ----------------------------------------------------------------------------- reading

def test_a_fifo_is_refused_without_waiting_for_a_writer(fifo):
    with pytest.raises(FileError, match=r"pipe: the suite file is a named pipe \(FIFO\); irtool reads only regular"):
        read_text(fifo, "suite file")


@pytest.mark.parametrize("path, kind", [("/dev/zero", "a character device"), (".", "a directory")])
def test_devices_and_directories_are_refused(path, kind):
    with pytest.raises(FileError, match=f"the results file is {kind}"):
        read_bytes(path, "results file")


def test_a_file_over_the_bound_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.toml"
    big.write_bytes(b"x" * 2000)
    assert read_bytes(big, "suite file", limit=2000) == b"x" * 2000
    with pytest.raises(FileError, match=r"big.toml: the suite file is 2.0 KiB, more than the 1.0 KiB irtool reads"):
        read_bytes(big, "suite file", limit=1024)


def test_an_interrupt_as_a_file_is_opened_stays_an_interrupt(tmp_path, monkeypatch):
    """Ctrl-C landing just as open_regular hands its file object back: the object alone closes the
    descriptor, so the interrupt reaches the command (which says "interrupted", 130) rather than an
    OSError (EBADF) from closing it twice, which a copy reported as a failed write."""
    path = tmp_path / "model.xml"
    path.write_bytes(b"<net/>")
    fdopen = os.fdopen

    def interrupted(fd, *args, **kwargs):
        fdopen(fd, *args, **kwargs)  # made, then dropped by the interrupt
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fdopen", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.open_regular(path)


def test_missing_unreadable_and_not_utf8(tmp_path):
    with pytest.raises(FileError, match="none.toml: no such suite file"):
        read_text(tmp_path / "none.toml", "suite file")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"name = '\xe9'")
    with pytest.raises(FileError, match=r"latin.toml: the suite file is not UTF-8 text \(byte 8\)"):
        read_text(latin, "suite file")
    if os.geteuid() != 0:  # root reads anything
        secret = tmp_path / "secret.toml"
        secret.write_text("x")
        secret.chmod(0)
        with pytest.raises(FileError, match="cannot read the suite file"):
            read_text(secret, "suite file")


# ----------------------------------------------------------------------------- writing over what

def test_a_device_node_is_never_replaced(tmp_path, device_node):
    node = device_node(tmp_path / "null")
    with pytest.raises(FileError, match="null: a character device; irtool writes the outputs file only as a new"):
        write_atomic(node, b"data", "outputs file")
    assert stat.S_ISCHR(os.stat(node).st_mode)


def test_a_fifo_or_directory_target_is_refused(tmp_path, fifo):
    for target, kind in ((fifo, "a named pipe"), (tmp_path, "a directory"), (Path("."), "a directory")):
        with pytest.raises(FileError, match=kind):
            write_atomic(target, "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary left behind


def test_a_symlink_is_followed_the_link_kept_and_its_target_replaced(tmp_path):
    (tmp_path / "runs").mkdir()
    real = tmp_path / "runs" / "out.npz"
    real.write_text("old")
    link = tmp_path / "out.npz"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    dangling = tmp_path / "later.txt"
    dangling.symlink_to(tmp_path / "runs" / "later.txt")
    write_atomic(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "runs" / "later.txt").read_text() == "made"


def test_a_symlink_to_a_device_is_refused(tmp_path, device_node):
    node = device_node(tmp_path / "null")
    link = tmp_path / "out.npz"
    link.symlink_to(node)
    with pytest.raises(FileError, match=r"out.npz \(-> .*null\): a character device"):
        write_atomic(link, "x")
    assert link.is_symlink() and stat.S_ISCHR(os.stat(node).st_mode)


def test_folder_missing_or_read_only(tmp_path):
    with pytest.raises(FileError, match="folder .*missing does not exist"):
        writable_target(tmp_path / "missing" / "x.txt")
    (tmp_path / "dangling.npz").symlink_to("nowhere/x.npz")  # the folder missing is the link's target's
    with pytest.raises(FileError, match=r"dangling.npz \(-> .*nowhere/x.npz\): folder .*/nowhere does not exist"):
        writable_target(tmp_path / "dangling.npz")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(FileError, match="cannot write the report"):
            write_atomic(locked / "x.html", "x", "report")


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_get_the_umask_mode_and_replaced_files_keep_theirs(tmp_path, umask, mask, mode):
    umask(mask)
    assert files.user_file_mode() == mode
    write_atomic(tmp_path / "new.json", "{}")
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == mode
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new")
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o640 and kept.read_text() == "new"


def test_an_error_while_writing_leaves_the_old_file(tmp_path):
    target = tmp_path / "results.json"
    target.write_text("old")
    with pytest.raises(ZeroDivisionError):
        with files.atomic_writer(target) as handle:
            handle.write(b"half")
            1 / 0
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["results.json"]


# ----------------------------------------------------------------------------- pairs

def _pair(tmp_path: Path, xml: str | None, binary: str | None) -> tuple[Path, Path]:
    paths = (tmp_path / "m.xml", tmp_path / "m.bin")
    for path, text in zip(paths, (xml, binary)):
        if text is not None:
            path.write_text(text)
    return paths


def _new(tmp_path: Path) -> tuple[Path, Path]:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    (scratch / "m.xml").write_text("new xml")
    (scratch / "m.bin").write_text("new bin")
    return scratch / "m.xml", scratch / "m.bin"


def test_a_pair_is_replaced_together(tmp_path):
    xml, binary = _pair(tmp_path, "old xml", "old bin")
    new_xml, new_bin = _new(tmp_path)
    replace_files([(new_bin, binary), (new_xml, xml)])
    assert (xml.read_text(), binary.read_text()) == ("new xml", "new bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin", "m.xml", "scratch"]  # no backups left


@pytest.mark.parametrize("old", [("old xml", "old bin"), (None, None), ("old xml", None)],
                         ids=["both-existed", "neither-existed", "only-xml-existed"])
def test_a_failed_second_rename_leaves_the_old_pair(tmp_path, monkeypatch, old):
    """The .bin is renamed first; when the .xml rename fails, the .bin gets its old content back
    (or goes away, if there was none)."""
    xml, binary = _pair(tmp_path, *old)
    new_xml, new_bin = _new(tmp_path)
    real_replace, calls = os.replace, []

    def failing_replace(source, target):
        calls.append(Path(target).name)
        if Path(target) == xml:
            raise OSError(28, "No space left on device", str(target))
        real_replace(source, target)

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(FileError, match="m.xml: disk full"):
        replace_files([(new_bin, binary), (new_xml, xml)], "model file")
    monkeypatch.undo()
    assert calls[:2] == ["m.bin", "m.xml"]
    for path, text in zip((xml, binary), old):
        assert (path.read_text() if path.exists() else None) == text
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".old"))
    assert leftovers == []


def test_a_pair_with_a_bad_target_touches_nothing(tmp_path):
    xml, binary = _pair(tmp_path, "old xml", None)
    binary.mkdir()
    new_xml, new_bin = _new(tmp_path)
    with pytest.raises(FileError, match="m.bin: a directory"):
        replace_files([(new_bin, binary), (new_xml, xml)])
    assert xml.read_text() == "old xml" and binary.is_dir()


# ----------------------------------------------------------------------------- inputs, locks, faults

def test_an_input_is_known_by_any_name(tmp_path):
    from irtool.core.files import check_holds_no_input, check_not_input

    model = tmp_path / "m.xml"
    model.write_text("<net/>")
    (tmp_path / "link.xml").symlink_to(model)
    os.link(model, tmp_path / "hard.xml")
    inputs = [("the model", model)]
    for target in (model, tmp_path / "link.xml", tmp_path / "hard.xml", tmp_path / "sub" / ".." / "m.xml"):
        with pytest.raises(FileError, match="would replace the model .*m.xml, which this command reads"):
            check_not_input(target, inputs, "output")
    check_not_input(tmp_path / "new.npz", inputs, "output")
    with pytest.raises(FileError, match="holds the model"):
        check_holds_no_input(tmp_path, inputs)
    check_holds_no_input(tmp_path / "elsewhere", inputs)


def test_a_lock_file_is_regular_and_never_followed_nor_waited_on(tmp_path):
    from irtool.core.files import open_lock_file

    os.mkfifo(tmp_path / "fifo.lock")
    with pytest.raises(FileError, match="named pipe"):
        open_lock_file(tmp_path / "fifo.lock")
    (tmp_path / "link.lock").symlink_to(tmp_path / "elsewhere.lock")
    with pytest.raises(FileError, match="is a symlink"):
        open_lock_file(tmp_path / "link.lock")
    assert not (tmp_path / "elsewhere.lock").exists()
    os.close(open_lock_file(tmp_path / "ok.lock"))
    assert (tmp_path / "ok.lock").is_file()


def test_a_symlink_is_refused_where_links_are_not_followed(tmp_path):
    from irtool.core.files import open_regular

    (tmp_path / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "f")
    with pytest.raises(FileError, match="is a symlink"):
        open_regular(tmp_path / "l", follow=False)
    with open_regular(tmp_path / "f", follow=False) as handle:
        assert handle.read() == b"x"
