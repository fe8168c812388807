"""Open an untrusted Memory Suite archive (a .zip or a folder) safely: list, check, then read in memory.

Nothing is ever extracted: the zip's central directory is checked first (absolute names, ``..``,
symlinks, duplicate names, entry count, total size, compression ratio: MCS-17…22), and an archive
that fails any of these is refused without decompressing a byte. A safe archive's members are
then read into memory on demand, each read bounded by its declared size (zipfile stops there and
checks the CRC), so the validator writes nothing to disk at all. A folder is walked without
following links; a link is reported, never read.

The limits (``Limits``, set with ``validate --max-entries/--max-size/--max-ratio/--ratio-floor``):
at most 10,000 entries and 64 MiB uncompressed in all (MCS-21), and no zip bomb (MCS-22). A zip
bomb is judged on the ratio AND the size together: an entry, or the whole archive, is one when
it expands more than 100 times its compressed size and to more than 4 MiB. Either alone is no
sign: deflate packs a log of one repeated line ~340 times (a 2 MB work-memory file of such lines
is legitimate text), and a 50 MiB suite of varied text compresses only 3-10 times. Zeros reach
~1,000 times, the most one layer of deflate can do; beyond 64 MiB the total limit refuses anyway.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

MIB: Final = 1024 * 1024
MAX_ENTRIES: Final = 10_000
MAX_TOTAL_BYTES: Final = 64 * MIB
MAX_RATIO: Final = 100
#: Ratios are judged only above this expanded size: repeated text compresses as well as a bomb.
RATIO_FLOOR_BYTES: Final = 4 * MIB


@dataclass(frozen=True, slots=True)
class Limits:
    """The archive-safety limits (MCS-21, MCS-22); the defaults are documented in the rule catalogue."""

    max_entries: int = MAX_ENTRIES
    max_total: int = MAX_TOTAL_BYTES
    max_ratio: float = MAX_RATIO
    ratio_floor: int = RATIO_FLOOR_BYTES

    def is_bomb(self, expanded: int, compressed: int) -> bool:
        """A zip bomb: expands more than ``max_ratio`` times AND to more than ``ratio_floor`` bytes."""
        return expanded > self.ratio_floor and expanded / max(compressed, 1) > self.max_ratio

    @property
    def bomb_limit(self) -> str:
        return (
            f"the limit is {_number(self.max_ratio)} times for more than {_mib(self.ratio_floor)}; "
            "see --max-ratio, --ratio-floor"
        )


def _number(value: float) -> str:
    return f"{value:g}"


def _mib(size: int) -> str:
    return f"{_number(size / MIB)} MiB"


_DRIVE = re.compile(r"^[A-Za-z]:")


class ArchiveUnreadable(Exception):
    """Not a zip and not a folder, a corrupt zip, an encrypted entry: no verdict possible (exit 2)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A safety problem found while listing: the rule, the entry name (as stored) and why."""

    rule: str
    name: str | None
    message: str


@dataclass(slots=True)
class Archive:
    """The checked listing of an archive: file names (normalised, ``/``-separated) and sizes."""

    kind: str
    sizes: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    compressed_bytes: int = 0
    _reader: Callable[[str], bytes] | None = None

    @property
    def refused(self) -> bool:
        return bool(self.findings)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())

    def read(self, name: str) -> bytes:
        """The bytes of one member of a safe archive (raises ArchiveUnreadable on a corrupt entry)."""
        if self._reader is None or self.refused:
            raise ArchiveUnreadable("the archive was refused; nothing is read from it")
        return self._reader(name)


def normalise(name: str) -> str:
    """``./a//b`` -> ``a/b``: how two spellings of one name are recognised as duplicates."""
    return "/".join(part for part in name.split("/") if part not in ("", "."))


def _name_findings(name: str) -> list[Finding]:
    found = []
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        found.append(Finding("MCS-17", name, "absolute entry name: an archive holds relative names only"))
    elif "\\" in name:
        found.append(Finding("MCS-17", name, "entry name with a backslash (a Windows path?)"))
    if ".." in re.split(r"[/\\]", name):
        found.append(Finding("MCS-18", name, "entry name with a '..' component (path traversal)"))
    return found


def open_archive(path: str, *, max_total: int | None = None, limits: Limits | None = None) -> Archive:
    """Check a .zip file or a folder; raises ArchiveUnreadable when it is neither or is corrupt.

    ``max_total`` (bytes), when given, overrides ``limits.max_total``.
    """
    limits = limits or Limits()
    if max_total is not None:
        limits = Limits(limits.max_entries, max_total, limits.max_ratio, limits.ratio_floor)
    if path == "-":
        raise ArchiveUnreadable("a Memory Suite is read from a .zip file or a folder, not from stdin")
    if os.path.isdir(path):
        return _open_folder(Path(path), limits)
    try:
        handle = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ArchiveUnreadable("cannot read: no such file or folder") from None
    except OSError as exc:
        raise ArchiveUnreadable(f"cannot read: {exc.strerror or exc}") from None
    except zipfile.BadZipFile as exc:
        raise ArchiveUnreadable(f"not a zip archive or a folder ({exc})") from None
    return _open_zip(handle, limits)


def _open_zip(handle: zipfile.ZipFile, limits: Limits) -> Archive:
    archive = Archive("zip")
    infos = handle.infolist()
    if len(infos) > limits.max_entries:
        archive.findings.append(
            Finding(
                "MCS-21", None, f"{len(infos)} entries (the limit is {limits.max_entries}; see --max-entries)"
            )
        )
        return archive
    by_name: dict[str, zipfile.ZipInfo] = {}
    total = compressed = 0
    for info in infos:
        name = info.orig_filename
        archive.findings.extend(_name_findings(name))
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            archive.findings.append(Finding("MCS-19", name, "symbolic link entry"))
        if info.flag_bits & 0x1:
            raise ArchiveUnreadable(f"{name}: encrypted entries cannot be checked")
        key = normalise(name)
        if not key:
            continue
        if key in by_name:
            archive.findings.append(
                Finding("MCS-20", name, f"duplicate entry name (also {by_name[key].orig_filename!r})")
            )
            continue
        by_name[key] = info
        total += info.file_size
        compressed += info.compress_size
        if limits.is_bomb(info.file_size, info.compress_size):
            ratio = info.file_size / max(info.compress_size, 1)
            archive.findings.append(
                Finding(
                    "MCS-22",
                    name,
                    f"expands {ratio:.0f} times ({info.compress_size} -> {info.file_size} bytes; "
                    f"{limits.bomb_limit}): a zip bomb, refused without decompressing",
                )
            )
    if total > limits.max_total:
        archive.findings.append(
            Finding(
                "MCS-21",
                None,
                f"{total} bytes uncompressed in all (the limit is {_mib(limits.max_total)}; see --max-size)",
            )
        )
    if limits.is_bomb(total, compressed):
        archive.findings.append(
            Finding(
                "MCS-22",
                None,
                f"the archive expands {total / max(compressed, 1):.0f} times in all, to {total} bytes "
                f"({limits.bomb_limit})",
            )
        )
    archive.compressed_bytes = compressed
    archive.sizes = {key: info.file_size for key, info in by_name.items() if not info.is_dir()}

    def read(name: str) -> bytes:
        info = by_name[name]
        try:
            with handle.open(info) as stream:
                return stream.read(info.file_size)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise ArchiveUnreadable(f"{name}: cannot read the entry ({exc})") from None

    archive._reader = read
    return archive


def _open_folder(root: Path, limits: Limits) -> Archive:
    archive = Archive("folder")
    count = 0
    for folder, directories, files in os.walk(root, followlinks=False):
        for entry in [*directories, *files]:
            full = Path(folder, entry)
            name = full.relative_to(root).as_posix()
            count += 1
            if count > limits.max_entries:
                archive.findings.append(
                    Finding("MCS-21", None, f"more than {limits.max_entries} entries (see --max-entries)")
                )
                return archive
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                archive.findings.append(Finding("MCS-19", name, "symbolic link (not followed)"))
            elif stat.S_ISREG(info.st_mode):
                archive.sizes[name] = info.st_size
    if archive.total_bytes > limits.max_total:
        archive.findings.append(
            Finding(
                "MCS-21",
                None,
                f"{archive.total_bytes} bytes in all (the limit is {_mib(limits.max_total)}; see --max-size)",
            )
        )

    def read(name: str) -> bytes:
        size = archive.sizes[name]
        try:
            fd = os.open(root / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as stream:
                return stream.read(size)
        except OSError as exc:
            raise ArchiveUnreadable(f"{name}: cannot read ({exc.strerror or exc})") from None

    archive._reader = read
    return archive
