"""The wheel overlay on a small wheel the tests build: every kind of change, RECORD checked
by a real installer, one version everywhere, byte-identical rebuilds, raw member reuse."""

from __future__ import annotations

import os
import time
import zipfile
from pathlib import Path

import pytest

from series.wheel import ziparchive
from series.wheel.overlay import OverlayChange, local_version, overlay, stamp_version_file
from series.errors import SeriesError
from tests.fakewheel import build_wheel, install_wheel

BASE = {
    "vllm/__init__.py": b"",
    "vllm/v1/kv_offload/cpu/policies/lru.py": b"class LRUPolicy:\n    pass\n",
    "vllm/multimodal/ipc.py": b"VERSION = 1\n",
    "vllm/old_name.py": b"MOVED = True\n",
}
SHA = "1a2b3c4d5e6f708192a3b4c5d6e7f80912345678"
WHEN = (2026, 2, 1, 12, 0, 0)


def changes() -> dict[str, OverlayChange]:
    items = [
        OverlayChange("vllm/v1/kv_offload/cpu/policies/lru.py", b"class LRUPolicy:\n    order = 'request'\n"),
        OverlayChange("vllm/multimodal/ipc.py", None),
        OverlayChange("vllm/old_name.py", None),  # renamed ...
        OverlayChange("vllm/new_name.py", b"MOVED = True\n"),  # ... to here
        OverlayChange("vllm/tools/run.sh", b"#!/bin/sh\necho hi\n", executable=True),
        OverlayChange("tests/v1/test_lru.py", b"def test(): pass\n"),  # not in the wheel's packages
    ]
    return {c.path: c for c in items}


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "data-descriptors"])
def test_overlay_applies_every_change_and_installs(tmp_path: Path, streamed: bool) -> None:
    src = build_wheel(tmp_path / "in", BASE, streamed=streamed, signed=True, data_dir=True)
    result = overlay(src, tmp_path / "out", changes(), SHA, WHEN)

    assert result.path.name == "vllm-0.31.0+series.g1a2b3c4-cp38-abi3-manylinux_2_28_x86_64.whl", result
    assert result.added == ("vllm/new_name.py", "vllm/tools/run.sh"), result
    assert result.modified == ("vllm/v1/kv_offload/cpu/policies/lru.py",), result
    assert result.deleted == ("vllm/multimodal/ipc.py", "vllm/old_name.py"), result
    assert result.ignored == ("tests/v1/test_lru.py",), result

    site = install_wheel(result.path, tmp_path / "target")  # validates every RECORD hash
    for path, change in changes().items():
        installed = site / path
        if change.data is None or path.startswith("tests/"):
            assert not installed.exists(), path
        else:
            assert installed.read_bytes() == change.data, path
    assert (site / "vllm/tools/run.sh").stat().st_mode & 0o111, "executable bit lost"
    assert (site / "vllm/_C.abi3.so").read_bytes() == bytes(range(256)) * 64
    assert (site / "vllm/__init__.py").exists()
    assert "print('tool')" in (tmp_path / "target/scripts/vllm-tool").read_text(), ".data/ follows the version"

    info = site / "vllm-0.31.0+series.g1a2b3c4.dist-info"
    assert "Version: 0.31.0+series.g1a2b3c4\n" in (info / "METADATA").read_text()
    assert not (info / "RECORD.jws").exists(), "a stale signature must be dropped"
    namespace: dict[str, object] = {}
    exec((site / "vllm/_version.py").read_text(), namespace)
    assert namespace["__version__"] == namespace["version"] == "0.31.0+series.g1a2b3c4"
    assert namespace["__version_tuple__"] == (0, 31, 0, "series.g1a2b3c4")
    assert namespace["__commit_id__"] == "g1a2b3c4"
    assert "cpu" not in result.version


def test_rebuild_is_byte_identical_and_unchanged_members_are_raw_copies(tmp_path: Path) -> None:
    src = build_wheel(tmp_path / "in", BASE)
    first = overlay(src, tmp_path / "a", changes(), SHA, WHEN)
    second = overlay(src, tmp_path / "b", changes(), SHA, WHEN)
    assert first.path.read_bytes() == second.path.read_bytes(), "rebuild differs"
    assert first.sha256() == second.sha256()

    old_members = {m.name: m for m in ziparchive.read_members(src)[0]}
    new_members = {m.name: m for m in ziparchive.read_members(first.path)[0]}
    with open(src, "rb") as a, open(first.path, "rb") as b:
        for name in ("vllm/_C.abi3.so", "vllm/__init__.py"):
            old, new = old_members[name], new_members[name]
            assert ziparchive.read_compressed(a, old) == ziparchive.read_compressed(b, new), name
            assert (old.dos_date, old.dos_time) == (new.dos_date, new.dos_time), "kept its own timestamp"
    changed = new_members["vllm/v1/kv_offload/cpu/policies/lru.py"]
    assert (changed.dos_time, changed.dos_date) == ziparchive.dos_datetime(WHEN)
    with zipfile.ZipFile(first.path) as z:
        assert z.testzip() is None
        assert z.namelist()[-1].endswith(".dist-info/RECORD"), "RECORD goes last"


def test_no_changes_still_stamps_the_version(tmp_path: Path) -> None:
    src = build_wheel(tmp_path / "in", BASE)
    result = overlay(src, tmp_path / "out", {}, SHA, WHEN)
    site = install_wheel(result.path, tmp_path / "t")
    assert "0.31.0+series.g1a2b3c4" in (site / "vllm/_version.py").read_text()


def test_local_version_keeps_an_existing_local_part() -> None:
    assert local_version("0.31.0", SHA) == "0.31.0+series.g1a2b3c4"
    assert local_version("0.31.0+cu129", SHA) == "0.31.0+cu129.series.g1a2b3c4"


def test_unknown_version_file_layout_is_regenerated() -> None:
    text = stamp_version_file("VERSION = '1'\n", "0.31.0+series.gabc1234", "gabc1234")
    namespace: dict[str, object] = {}
    exec(text, namespace)
    assert namespace["__version_tuple__"] == (0, 31, 0, "series.gabc1234")


def test_not_a_wheel_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "vllm-0.31.0-cp38-abi3-linux_x86_64.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(SeriesError, match="cannot read the wheel"):
        overlay(bad, tmp_path / "out", {}, SHA, WHEN)
    with pytest.raises(SeriesError, match="not a wheel file name"):
        overlay(tmp_path / "vllm.zip", tmp_path / "out", {}, SHA, WHEN)


def test_more_than_65535_members_use_zip64_end_records(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    with open(path, "wb") as out:
        writer = ziparchive.ZipWriter(out)
        for i in range(65_600):
            writer.add_bytes(f"vllm/m{i}.py", b"", WHEN, 0o644 << 16, compress=False)
        writer.close()
    members, _ = ziparchive.read_members(path)
    assert len(members) == 65_600 and members[-1].name == "vllm/m65599.py"
    with zipfile.ZipFile(path) as z:  # the standard library agrees
        assert len(z.infolist()) == 65_600


def test_a_change_equal_to_the_wheels_bytes_reuses_its_compressed_form(tmp_path: Path) -> None:
    """The series' base can be older than the wheel (or a topic backports what the release
    has): such a "changed" file is written like any other (fixed timestamp, the tree's mode,
    RECORD entry) but its compressed bytes are the wheel's own, not deflated again."""
    built = build_wheel(tmp_path / "in", BASE)
    src = tmp_path / "src" / built.name
    src.parent.mkdir()
    same = "vllm/v1/kv_offload/cpu/policies/lru.py"
    with zipfile.ZipFile(built) as zin, zipfile.ZipFile(src, "w") as zout:
        for info in zin.infolist():  # stored, where a fresh deflate would differ
            data = zin.read(info)
            info.compress_type = zipfile.ZIP_STORED if info.filename == same else zipfile.ZIP_DEFLATED
            zout.writestr(info, data)
    edits = {same: OverlayChange(same, BASE[same]), **{p: c for p, c in changes().items() if p != same}}
    result = overlay(src, tmp_path / "out", edits, SHA, WHEN)

    assert same in result.modified, result
    new = {m.name: m for m in ziparchive.read_members(result.path)[0]}
    assert new[same].method == ziparchive.STORED, "the wheel's compressed form was not reused"
    assert (new[same].dos_time, new[same].dos_date) == ziparchive.dos_datetime(WHEN)
    with zipfile.ZipFile(result.path) as z:  # written where every other changed file goes
        names = z.namelist()
        assert names.index(same) > names.index("vllm/_C.abi3.so"), names
        assert z.read(same) == BASE[same] and z.testzip() is None
    site = install_wheel(result.path, tmp_path / "target")  # RECORD still verifies
    assert (site / same).read_bytes() == BASE[same]


def test_without_copy_file_range_the_wheel_is_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The background copy falls back to pread/pwrite at the same offsets (EXDEV, old
    kernels, other platforms): same bytes as the kernel copy."""
    src = build_wheel(tmp_path / "in", BASE, streamed=True, data_dir=True)
    kernel = overlay(src, tmp_path / "kernel", changes(), SHA, WHEN)

    def refuse(*_: object) -> int:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(ziparchive.os, "copy_file_range", refuse)
    fallback = overlay(src, tmp_path / "fallback", changes(), SHA, WHEN)
    assert fallback.path.read_bytes() == kernel.path.read_bytes()
    assert fallback.sha256() == kernel.sha256()
    install_wheel(fallback.path, tmp_path / "target")


def test_an_error_while_copying_leaves_no_wheel_and_stops_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error in the writer (here: the directory) while the kernel copies: the copy
    thread is stopped before the files close, and no wheel nor partial file is left."""
    src = build_wheel(tmp_path / "in", BASE)
    copiers: list[ziparchive.RangeCopier] = []
    start = ziparchive.RangeCopier.__init__

    def recorded(self: ziparchive.RangeCopier, *args: object) -> None:
        copiers.append(self)
        start(self, *args)  # type: ignore[arg-type]

    def broken(self: ziparchive.ZipWriter) -> None:
        raise OSError(28, "No space left on device")

    def slow(src: int, dst: int, count: int, offset_src: int, offset_dst: int) -> int:
        time.sleep(0.01)  # one byte at a time: still copying when the error comes
        return real(src, dst, 1, offset_src, offset_dst)

    real = ziparchive.os.copy_file_range
    monkeypatch.setattr(ziparchive.os, "copy_file_range", slow)
    monkeypatch.setattr(ziparchive.RangeCopier, "__init__", recorded)
    monkeypatch.setattr(ziparchive.ZipWriter, "close", broken)
    with pytest.raises(OSError, match="No space left"):
        overlay(src, tmp_path / "out", changes(), SHA, WHEN)
    assert copiers and not any(c.is_alive() for c in copiers), "the copy outlived the error"
    assert list((tmp_path / "out").iterdir()) == [], "a wheel or a partial file was left"


def test_the_wheel_is_on_disk_before_it_gets_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fdatasync of the finished archive (tail included) comes before the rename: a crash
    never leaves a wheel of the right name with bytes that never reached the disk."""
    src = build_wheel(tmp_path / "in", BASE)
    events: list[tuple[str, int]] = []
    real_sync, real_replace = ziparchive.os.fdatasync, os.replace

    def synced(fd: int) -> None:
        events.append(("sync", os.fstat(fd).st_size))
        real_sync(fd)

    def renamed(a: object, b: object) -> None:
        events.append(("rename", Path(str(a)).stat().st_size))
        real_replace(a, b)  # type: ignore[arg-type]

    monkeypatch.setattr(ziparchive.os, "fdatasync", synced)
    monkeypatch.setattr(os, "replace", renamed)
    result = overlay(src, tmp_path / "out", changes(), SHA, WHEN)
    size = result.path.stat().st_size
    assert events[-1] == ("rename", size), events
    assert ("sync", size) in events[:-1], f"the whole archive was never synced before the rename: {events}"


@pytest.mark.parametrize(
    "record", [b"vllm/__init__.py,sha256=abc,not-a-size\n", b"\xff\xfe,x,1\n"], ids=["size", "bytes"]
)
def test_a_record_it_cannot_read_is_the_wheels_error_not_a_bug(tmp_path: Path, record: bytes) -> None:
    """The wheel is the user's input: a RECORD row with a size that is no number, or bytes
    that are no UTF-8, is a one-line refusal (exit 1), never exit 4."""
    good = build_wheel(tmp_path / "good", BASE)
    bad = tmp_path / good.name
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = record if item.filename.endswith("dist-info/RECORD") else src.read(item)
            dst.writestr(item, data)
    with pytest.raises(SeriesError, match="RECORD cannot be read"):
        overlay(bad, tmp_path / "out", changes(), SHA, WHEN)
