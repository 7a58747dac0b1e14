"""The one JSON reader and the one atomic writer against real OS failures.

No mocks: read-only folders (as an unprivileged process where the tests run as
root), directories, FIFOs, devices, a path under a file, and a full disk
produced by RLIMIT_FSIZE in a subprocess.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from specmodel.errors import SpecmodelError
from specmodel.formats.jsonio import (
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    read_json_file,
    write_json_atomic,
)

_NOBODY = 65534


def _unprivileged(fn: Callable[[], object]) -> str:
    """Run ``fn`` as an ordinary user (a forked child that drops root, where the tests
    run as root: root ignores permission bits); return 'ok' or the error's class and
    message."""

    def outcome() -> str:
        try:
            fn()
        except Exception as e:  # reported to the parent, which asserts
            return f"{type(e).__name__}: {e}"
        return "ok"

    if os.geteuid() != 0:
        return outcome()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, try, report
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
            msg = outcome()
        except BaseException as e:
            msg = f"child failed: {e!r}"
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        msg = fh.read().decode()
    os.waitpid(pid, 0)
    return msg


def _open_to_all(tmp_path: Path) -> Path:
    """A folder every user can reach (pytest's base folder is 0700 to root)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="jsonio-", dir="/tmp"))
    d.chmod(0o755)
    return d


# --- writer ---------------------------------------------------------------------------


def test_read_only_folder_is_one_line_and_leaves_nothing(tmp_path) -> None:
    base = _open_to_all(tmp_path)
    try:
        ro = base / "ro"
        ro.mkdir()
        old = write_json_atomic({"v": 1}, ro / "x.json")
        ro.chmod(0o555)
        msg = _unprivileged(lambda: write_json_atomic({"v": 2}, old))
        assert msg.startswith("SpecmodelError: cannot write ")
        assert str(old) in msg and "permission denied" in msg
        assert "\n" not in msg
        assert sorted(p.name for p in ro.iterdir()) == ["x.json"]  # no temp file
        assert json.loads(old.read_text()) == {"v": 1}  # the old file intact
    finally:
        ro.chmod(0o755)
        for p in ro.iterdir():
            p.unlink()
        ro.rmdir()
        base.rmdir()


def test_directory_target(tmp_path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    with pytest.raises(SpecmodelError, match=r"cannot write .*out: it is a directory"):
        write_json_atomic({"a": 1}, target)
    assert list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("under", ["f.json/x.json", "f.json/deeper/x.json"])
def test_path_under_a_file(tmp_path, under) -> None:
    (tmp_path / "f.json").write_text("{}")
    with pytest.raises(SpecmodelError, match=r"f\.json is not a directory") as err:
        write_json_atomic({"a": 1}, tmp_path / under)
    assert "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_full_disk_leaves_no_temp_file_and_the_old_file_intact(tmp_path) -> None:
    """RLIMIT_FSIZE with SIGXFSZ ignored: write() fails with EFBIG, as on a full disk."""
    target = tmp_path / "big.json"
    target.write_text('{"old": true}\n')
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from specmodel.errors import SpecmodelError
        from specmodel.formats.jsonio import write_json_atomic
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            write_json_atomic({{"data": "x" * 100_000}}, {str(target)!r})
        except SpecmodelError as e:
            print(e)
            sys.exit(2)
        sys.exit(0)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2, res.stderr
    line = res.stdout.strip()
    assert line.startswith(f"cannot write {target}: ") and "file too large" in line
    assert res.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json"]
    assert target.read_text() == '{"old": true}\n'


def test_replaced_file_keeps_its_mode(tmp_path) -> None:
    target = tmp_path / "x.json"
    target.write_text("{}")
    target.chmod(0o640)
    write_json_atomic({"a": 1}, target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    target.chmod(0o604)
    write_json_atomic({"a": 2}, target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o604
    assert json.loads(target.read_text()) == {"a": 2}


def test_new_file_gets_the_umask_mode(tmp_path) -> None:
    old = os.umask(0o027)
    try:
        path = write_json_atomic({"a": 1}, tmp_path / "new.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


# --- reader ---------------------------------------------------------------------------


def test_missing_file(tmp_path) -> None:
    with pytest.raises(SpecmodelError, match=r"calibration .*nope\.json does not exist"):
        read_json_file(tmp_path / "nope.json", "calibration")


def test_directory_is_named_as_such(tmp_path) -> None:
    with pytest.raises(SpecmodelError, match="is a directory, not a regular file"):
        read_json_file(tmp_path, "run record")


def test_fifo_is_named_and_never_blocks(tmp_path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(SpecmodelError, match=r"pipe\.json is a named pipe \(FIFO\)"):
        read_json_file(fifo, "calibration")  # no writer: a blocking open would hang


def test_device_is_named() -> None:
    with pytest.raises(SpecmodelError, match="/dev/null is a device"):
        read_json_file("/dev/null", "calibration")


def test_unreadable_file_says_permission_denied(tmp_path) -> None:
    base = _open_to_all(tmp_path)
    try:
        secret = base / "secret.json"
        secret.write_text("{}")
        secret.chmod(0o000)
        msg = _unprivileged(lambda: read_json_file(secret, "calibration"))
        assert msg == f"SpecmodelError: cannot read calibration {secret}: permission denied"
    finally:
        secret.unlink()
        base.rmdir()


def test_non_utf8_file_names_the_file(tmp_path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"name": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(SpecmodelError, match=r"latin1\.json is not UTF-8 text \(byte 0xe9"):
        read_json_file(path, "calibration")


def test_too_deep_is_refused_without_recursion(tmp_path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SpecmodelError, match=rf"deep\.json nests .* {MAX_JSON_DEPTH} levels"):
        read_json_file(path, "calibration")
    ok = tmp_path / "ok.json"
    ok.write_text('{"a": ' * (MAX_JSON_DEPTH - 1) + '"[[[[{{{{"' + "}" * (MAX_JSON_DEPTH - 1))
    assert read_json_file(ok, "calibration") is not None  # brackets in strings don't count


def test_too_big_is_refused(tmp_path) -> None:
    path = tmp_path / "big.json"
    with open(path, "wb") as fh:  # sparse: no disk used
        fh.truncate(MAX_JSON_BYTES + 1)
    with pytest.raises(SpecmodelError, match=rf"big\.json is {MAX_JSON_BYTES + 1} bytes, "
                                             r"larger than .*64 MiB\) limit"):
        read_json_file(path, "calibration")


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": -Infinity}', '{"a": 1e400}',
                                  '{"a": ' + "9" * 5000 + "}"])
def test_non_finite_and_huge_numbers_are_bad_json(tmp_path, text) -> None:
    path = tmp_path / "n.json"
    path.write_text(text)
    with pytest.raises(SpecmodelError, match=r"n\.json is not valid JSON") as err:
        read_json_file(path, "calibration")
    assert "\n" not in str(err.value)
