"""The patched wheel: an upstream release wheel with the series' Python changes laid over it.

Members the series does not change are copied as raw compressed bytes (ziparchive), so
the cost is about one `cp` of the wheel. Changed, added, deleted and renamed (= deleted +
added) files under the wheel's top-level packages are applied; RECORD is regenerated,
reusing upstream's hashes for untouched members (no decompression) and dropping
signatures, which no longer match. One local version is stamped everywhere an installer
or `vllm --version` looks: the dist-info directory, METADATA, `vllm/_version.py` and the
file name. Every written member carries one fixed timestamp: the same inputs give a
byte-identical wheel.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple

from series.wheel import ziparchive
from series.wheel.ziparchive import Member
from series.errors import SeriesError
from series.ops.fs import replacing

# Changing these needs a compiler or a new packaging run: overlay cannot do that.
COMPILED_INPUTS = ("csrc/", "cmake/", "CMakeLists.txt", "setup.py", "pyproject.toml", "requirements/")

_WHEEL_NAME = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<tags>[^-]+-[^-]+-[^-]+)\.whl$"
)
_SIGNATURES = ("RECORD.jws", "RECORD.p7s")
REGULAR_FILE = 0o100000


@dataclass(frozen=True)
class OverlayChange:
    """A file of the integration tree that differs from the base: new bytes, or deleted."""

    path: str
    data: bytes | None  # None: deleted
    executable: bool = False


@dataclass(frozen=True)
class OverlayResult:
    path: Path
    version: str
    added: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]
    ignored: tuple[str, ...]  # changed paths outside the wheel's packages (tests, docs, ...)
    digest: str = ""  # sha256 of the written wheel, hashed while it was written

    def sha256(self) -> str:
        if not self.digest:  # built with hash_output=False: one more pass
            digest = hashlib.sha256()
            with open(self.path, "rb") as f:
                while chunk := f.read(8 << 20):
                    digest.update(chunk)
            return digest.hexdigest()
        return self.digest


@dataclass(frozen=True)
class WheelName:
    name: str
    version: str
    build: str | None
    tags: str

    @classmethod
    def parse(cls, filename: str) -> "WheelName":
        m = _WHEEL_NAME.match(filename)
        if not m:
            raise SeriesError(f"{filename}: not a wheel file name (NAME-VERSION-PY-ABI-PLATFORM.whl)")
        return cls(m["name"], m["version"], m["build"], m["tags"])

    def filename(self, version: str) -> str:
        build = f"-{self.build}" if self.build else ""
        return f"{self.name}-{version}{build}-{self.tags}.whl"


def compiled_inputs(paths: list[str]) -> list[str]:
    return [p for p in paths if any(p == c or p.startswith(c) for c in COMPILED_INPUTS)]


def local_version(base_version: str, sha: str) -> str:
    """0.31.0 -> 0.31.0+series.g1a2b3c4; an existing local part is kept in front.

    Never "cpu" from us: vLLM picks its CPU platform when its version contains that word
    (a CPU release wheel keeps its own +cpu, which is then the truth).
    """
    ours = f"series.g{sha[:7]}"
    public, _, local = base_version.partition("+")
    return f"{public}+{local}.{ours}" if local else f"{public}+{ours}"


def version_tuple(version: str) -> tuple[int | str, ...]:
    """As setuptools-scm writes it: release numbers, then dev, then the local part."""
    public, _, local = version.partition("+")
    parts: list[int | str] = []
    for piece in public.split("."):
        if piece.isdigit():
            parts.append(int(piece))
        else:
            m = re.match(r"^(\d+)(.*)$", piece)
            if m:
                parts.append(int(m.group(1)))
                parts.append(m.group(2))
            else:
                parts.append(piece)
    if local:
        parts.append(local)
    return tuple(parts)


def stamp_version_file(text: str, version: str, commit_id: str) -> str:
    """Rewrite setuptools-scm's `_version.py` lines, keeping the rest of the file."""
    vt = repr(version_tuple(version))
    rules = [
        (r"^(__version__\s*=\s*version\s*=\s*).*$", f"\\g<1>{version!r}"),
        (r"^(__version_tuple__\s*=\s*version_tuple\s*=\s*).*$", f"\\g<1>{vt}"),
        (r"^(__commit_id__\s*=\s*commit_id\s*=\s*).*$", f"\\g<1>{commit_id!r}"),
    ]
    out = text
    for pattern, repl in rules[:2]:
        out, n = re.subn(pattern, repl, out, count=1, flags=re.M)
        if n == 0:
            return _fresh_version_file(version, commit_id)
    out = re.sub(rules[2][0], rules[2][1], out, count=1, flags=re.M)
    return out


def _fresh_version_file(version: str, commit_id: str) -> str:
    return (
        "# file generated by setuptools-scm\n"
        "# don't change, don't track in version control\n"
        "from __future__ import annotations\n\n"
        '__all__ = ["__version__", "__version_tuple__", "version", "version_tuple", '
        '"__commit_id__", "commit_id"]\n\n'
        f"__version__ = version = {version!r}\n"
        f"__version_tuple__ = version_tuple = {version_tuple(version)!r}\n\n"
        f"__commit_id__ = commit_id = {commit_id!r}\n"
    )


def record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _stamp_metadata(text: str, version: str) -> str:
    out, n = re.subn(r"^Version: .*$", f"Version: {version}", text, count=1, flags=re.M)
    if n == 0:
        raise SeriesError("the wheel's METADATA has no Version line: not a valid wheel")
    return out


def _mode_attr(executable: bool) -> int:
    return (REGULAR_FILE | (0o755 if executable else 0o644)) << 16


def overlay(
    src: Path,
    out_dir: Path,
    changes: Mapping[str, OverlayChange],
    sha: str,
    date_time: tuple[int, int, int, int, int, int],
    hash_output: bool = True,
    read: ReadWheel | None = None,
) -> OverlayResult:
    """Write the patched wheel into out_dir and return what changed in it.

    `changes` are integration-tree paths (repo-relative) that differ from the base; those
    under the wheel's top-level packages are applied, the rest reported as ignored.
    `read`: the wheel's directory and RECORD if the caller has read them (read_wheel).
    """
    wheel = WheelName.parse(src.name)
    members = read.members if read is not None else _members(src)
    old_info = f"{wheel.name}-{wheel.version}.dist-info/"
    if not any(m.name.startswith(old_info) for m in members):
        infos = sorted({m.name.split("/")[0] for m in members if ".dist-info/" in m.name})
        raise SeriesError(f"{src.name}: expected {old_info} in the wheel, found {', '.join(infos) or 'none'}")
    by_name = {m.name: m for m in members}
    packages = {
        m.name.split("/", 1)[0]
        for m in members
        if "/" in m.name and not m.name.split("/", 1)[0].endswith((".dist-info", ".data"))
    }
    version = local_version(wheel.version, sha)
    new_info = f"{wheel.name}-{version}.dist-info/"
    version_file = _version_file(members, packages)

    applied = {p: c for p, c in changes.items() if p.split("/", 1)[0] in packages and "/" in p}
    ignored = tuple(sorted(p for p in changes if p not in applied))
    added = tuple(sorted(p for p, c in applied.items() if c.data is not None and p not in by_name))
    modified = tuple(sorted(p for p, c in applied.items() if c.data is not None and p in by_name))
    deleted = tuple(sorted(p for p, c in applied.items() if c.data is None and p in by_name))

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel.filename(version)
    tmp = target.with_name(f".{target.name}.partial")
    # never a half wheel behind: replacing() removes the partial file on any error
    with open(src, "rb") as f, replacing(target, tmp, buffering=0) as out:
        records: list[tuple[str, str, int]] = []
        hasher = ziparchive.StreamHash() if hash_output else None
        old_data = f"{wheel.name}-{wheel.version}.data/"
        body = [m for m in members if not m.name.startswith((old_info, old_data))]
        rewritten = set(modified) | set(deleted) | ({version_file} if version_file else set())
        stamped = version_file if version_file not in deleted else None
        with ziparchive.ZipWriter(out, hasher) as writer:
            # The kernel copies the unchanged ranges in the background from here on; the
            # records, the changed files' deflates (in a thread: zlib drops the GIL), the
            # dist-info and the directory are written after them meanwhile.
            writer.copy_ranges(f, _unchanged_ranges(f, body, rewritten, members))
            old_record = read.record if read is not None else _read_record(f, by_name, old_info)
            new_files = _new_files(f, by_name, applied, sorted(set(modified) | set(added)), stamped, version, sha)
            with ThreadPoolExecutor(max_workers=1) as pool:
                encoded = [pool.submit(_encode, f, by_name.get(path), old_record, data) for path, data, _ in new_files]
                _unchanged_records(f, body, rewritten, records, old_record)
                for (path, data, attr), job in zip(new_files, encoded):
                    raw, method, crc, digest = job.result()
                    writer.add_encoded(path, raw, method, crc, len(data), date_time, attr)
                    records.append((path, digest, len(data)))
            # NAME-VERSION.data/ must follow the new version too; its bytes are reused.
            for m in members:
                if m.name.startswith(old_data) and not m.name.endswith("/"):
                    name = f"{wheel.name}-{version}.data/" + m.name[len(old_data) :]
                    writer.add_compressed(m, name, ziparchive.read_compressed(f, m))
                    records.append(_record_of(f, m, name, old_record))
            _write_dist_info(f, writer, members, old_info, new_info, version, date_time, records)
            writer.close()  # waits for the copy
        digest = hasher.hexdigest() if hasher else ""  # before the source closes: it reads it
    return OverlayResult(target, version, added, modified, deleted, ignored, digest)


def _new_files(
    f: io.BufferedReader,
    by_name: dict[str, Member],
    applied: Mapping[str, OverlayChange],
    written: list[str],
    version_file: str | None,
    version: str,
    sha: str,
) -> list[tuple[str, bytes, int]]:
    """(path, bytes, external_attr) of every member written anew, in the order written."""
    out = []
    for path in sorted(set(written) | ({version_file} if version_file else set())):
        if path == version_file and path not in applied:
            data = stamp_version_file(ziparchive.read_data(f, by_name[path]).decode(), version, f"g{sha[:7]}").encode()
            attr = by_name[path].external_attr
        else:
            change = applied[path]
            assert change.data is not None
            data = change.data
            if path == version_file:
                data = stamp_version_file(data.decode(), version, f"g{sha[:7]}").encode()
            attr = _mode_attr(change.executable)  # as the integration tree has it
        out.append((path, data, attr))
    return out


def _encode(
    f: io.BufferedReader, old: Member | None, old_record: dict[str, tuple[str, int]], data: bytes
) -> tuple[bytes, int, int, str]:
    """(compressed bytes, method, CRC, RECORD hash) of a member written anew.

    A "changed" file whose bytes are the wheel's own (a series based on an older tag than
    the wheel, a backport of what the release already has) reuses the wheel's compressed
    bytes: same content, no deflate. Size, CRC and RECORD's sha256 must all agree.
    """
    digest, crc = record_hash(data), zlib.crc32(data)
    if (
        old is not None
        and old.size == len(data)
        and old.crc == crc
        and old.method in (ziparchive.STORED, ziparchive.DEFLATED)
        and old_record.get(old.name, ("", 0))[0] == digest
    ):
        return os.pread(f.fileno(), old.compressed_size, _data_start(f, old)), old.method, crc, digest
    return ziparchive.deflate(data), ziparchive.DEFLATED, crc, digest


def _data_start(f: io.BufferedReader, m: Member) -> int:
    header = os.pread(f.fileno(), 30, m.offset)
    return m.offset + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")


def _record_of(
    f: io.BufferedReader, m: Member, name: str, old_record: dict[str, tuple[str, int]]
) -> tuple[str, str, int]:
    known = old_record.get(m.name)
    if known is None:
        data = ziparchive.read_data(f, m)
        known = (record_hash(data), len(data))
    return (name, known[0], known[1])


def _version_file(members: list[Member], packages: set[str]) -> str | None:
    for package in sorted(packages):
        if f"{package}/_version.py" in {m.name for m in members}:
            return f"{package}/_version.py"
    return None


class ReadWheel(NamedTuple):
    """A release wheel's central directory and RECORD, read once: `series build` checks the
    RECORD for stale files, then overlays (5,000+ members in vLLM's: ~20 ms a reading)."""

    members: list[Member]
    record: dict[str, tuple[str, int]]  # {path: (sha256=..., size)}


def read_wheel(src: Path) -> ReadWheel:
    """The wheel's members and RECORD; cheap (no member but RECORD is decompressed)."""
    wheel = WheelName.parse(src.name)
    members = _members(src)
    with open(src, "rb") as f:
        return ReadWheel(
            members, _read_record(f, {m.name: m for m in members}, f"{wheel.name}-{wheel.version}.dist-info/")
        )


def wheel_record(src: Path) -> dict[str, tuple[str, int]]:
    """The wheel's RECORD: {path: (sha256=..., size)}; cheap (no member is decompressed)."""
    return read_wheel(src).record


def _members(src: Path) -> list[Member]:
    try:
        return ziparchive.read_members(src)[0]
    except (OSError, ziparchive.ZipFormatError) as exc:
        raise SeriesError(f"{src}: cannot read the wheel ({exc})") from None


def _read_record(f: io.BufferedReader, by_name: dict[str, Member], info: str) -> dict[str, tuple[str, int]]:
    member = by_name.get(f"{info}RECORD")
    if member is None:
        raise SeriesError(f"the wheel has no {info}RECORD: not a valid wheel")
    rows: dict[str, tuple[str, int]] = {}
    reader = None
    try:  # the wheel is the user's input: a RECORD it cannot read is their error, not a bug
        reader = csv.reader(io.StringIO(ziparchive.read_data(f, member).decode()))
        for row in reader:
            if len(row) >= 3 and row[1] and row[2]:
                rows[row[0]] = (row[1], int(row[2]))
    except (UnicodeDecodeError, ValueError, csv.Error) as exc:
        where = f" line {reader.line_num}" if reader is not None else ""
        raise SeriesError(
            f"the wheel's {info}RECORD cannot be read{where} ({exc}): not a valid wheel",
            "rebuild or download the wheel again",
        ) from None
    return rows


def _unchanged_ranges(
    f: io.BufferedReader, body: list[Member], rewritten: set[str], members: list[Member]
) -> list[tuple[int, int, list[Member]]]:
    """(start, end, members) of each run of adjacent unchanged members, in file order."""
    # A member's bytes end where the next member (in file order) or the directory begins.
    ordered = sorted(members, key=lambda m: m.offset)
    ends = {m.name: (ordered[i + 1].offset if i + 1 < len(ordered) else None) for i, m in enumerate(ordered)}
    ranges: list[tuple[int, int, list[Member]]] = []
    run: list[Member] = []

    def flush() -> None:
        if run:
            end = ends[run[-1].name]
            ranges.append((run[0].offset, _end_of_data(f, run[-1]) if end is None else end, list(run)))
            run.clear()

    for m in sorted(body, key=lambda m: m.offset):
        if m.name in rewritten:
            flush()
            continue
        if run and ends[run[-1].name] != m.offset:
            flush()
        run.append(m)
    flush()
    return ranges


def _unchanged_records(
    f: io.BufferedReader,
    body: list[Member],
    rewritten: set[str],
    records: list[tuple[str, str, int]],
    old_record: dict[str, tuple[str, int]],
) -> None:
    """RECORD rows of the copied members, in the order they were copied."""
    for m in sorted(body, key=lambda m: m.offset):
        if m.name in rewritten or m.name.endswith("/"):
            continue  # rewritten: its row comes with its new bytes; a directory: not a file
        known = old_record.get(m.name)
        if known is None:
            data = ziparchive.read_data(f, m)
            known = (record_hash(data), len(data))
        records.append((m.name, known[0], known[1]))


def _end_of_data(f: io.BufferedReader, m: Member) -> int:
    f.seek(m.offset)
    header = f.read(30)
    nlen, elen = int.from_bytes(header[26:28], "little"), int.from_bytes(header[28:30], "little")
    end = m.offset + 30 + nlen + elen + m.compressed_size
    if m.flags & ziparchive.FLAG_DATA_DESCRIPTOR:
        f.seek(end)
        sig = f.read(4)
        end += 16 if sig == b"PK\x07\x08" else 12
    return end


def _write_dist_info(
    f: io.BufferedReader,
    writer: ziparchive.ZipWriter,
    members: list[Member],
    old_info: str,
    new_info: str,
    version: str,
    date_time: tuple[int, int, int, int, int, int],
    records: list[tuple[str, str, int]],
) -> None:
    """dist-info last (RECORD last of all), renamed to the new version."""
    for m in members:
        if not m.name.startswith(old_info) or m.name.endswith("/"):
            continue
        rest = m.name[len(old_info) :]
        if rest == "RECORD" or rest in _SIGNATURES:
            continue
        name = new_info + rest
        if rest == "METADATA":
            data = _stamp_metadata(ziparchive.read_data(f, m).decode(), version).encode()
            writer.add_bytes(name, data, date_time, m.external_attr)
            records.append((name, record_hash(data), len(data)))
            continue
        # Same bytes under the new directory name: its compressed form is reused.
        writer.add_compressed(m, name, ziparchive.read_compressed(f, m))
        data = ziparchive.read_data(f, m)
        records.append((name, record_hash(data), len(data)))
    out = io.StringIO()
    rows = csv.writer(out, lineterminator="\n")
    for name, digest, size in records:
        rows.writerow([name, digest, size])
    rows.writerow([f"{new_info}RECORD", "", ""])
    record_member = next((m for m in members if m.name == f"{old_info}RECORD"), None)
    attr = record_member.external_attr if record_member else _mode_attr(False)
    writer.add_bytes(f"{new_info}RECORD", out.getvalue().encode(), date_time, attr)
