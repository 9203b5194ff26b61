"""series.ops.fs: the one atomic write. Its temporary file is created afresh (O_CREAT|O_EXCL),
so nothing planted at its name is written through, and a failed write leaves the old file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from series.ops import fs


def _empty(tmp_path: Path) -> Path:
    directory = tmp_path / "d"  # the sealed environment keeps its home in tmp_path
    directory.mkdir()
    return directory


def test_a_symlink_planted_at_the_temp_name_is_not_followed(tmp_path: Path) -> None:
    tmp_path = _empty(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    target = tmp_path / "series.yaml"
    target.write_text("old\n")
    (tmp_path / f".series.yaml.tmp-{os.getpid()}").symlink_to(victim)
    fs.write_atomically(target, "new\n")
    assert victim.read_text() == "keep me\n"
    assert target.read_text() == "new\n" and not target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["series.yaml", "victim"]


def test_a_planted_file_at_a_given_temp_name_is_replaced_not_reused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    staged = tmp_path / ".series.yaml.00001.tmp"
    staged.symlink_to(victim)
    fs.replace_staged(fs.stage(tmp_path / "series.yaml", "a: 1\r\n", staged), tmp_path / "series.yaml")
    assert victim.read_text() == "keep me\n"
    assert (tmp_path / "series.yaml").read_bytes() == b"a: 1\r\n"  # newlines as given


def test_the_mode_is_a_new_files_unless_asked(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        fs.write_atomically(tmp_path / "plain", b"x")
        fs.write_atomically(tmp_path / "pack", b"x", mode=0o444)
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "plain").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "pack").stat().st_mode) == 0o444


def test_a_failed_stream_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    tmp_path = _empty(tmp_path)
    target = tmp_path / "wheel.whl"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), fs.replacing(target) as out:
        out.write(b"half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["wheel.whl"]
