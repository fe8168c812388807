"""Open an untrusted Memory Suite archive (a .zip or a folder) safely: list, check, then read in memory.

Nothing is ever extracted: the zip's central directory is checked first (absolute names, ``..``,
symlinks, duplicate names, entry count, total size, compression ratio: MCS-17…22), and an archive
that fails any of these is refused without decompressing a byte. A safe archive's members are
then read into memory on demand, each read bounded by its declared size (zipfile stops there and
checks the CRC), so the validator writes nothing to disk at all. A folder is walked without
following links; a link is reported, never read.
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

MAX_ENTRIES: Final = 10_000
MAX_TOTAL_BYTES: Final = 64 * 1024 * 1024
MAX_RATIO: Final = 100
#: Ratios are judged only above this size: a small file of repeated text compresses very well.
RATIO_FLOOR_BYTES: Final = 1024 * 1024
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


def open_archive(path: str, *, max_total: int = MAX_TOTAL_BYTES) -> Archive:
    """Check a .zip file or a folder; raises ArchiveUnreadable when it is neither or is corrupt."""
    if path == "-":
        raise ArchiveUnreadable("a Memory Suite is read from a .zip file or a folder, not from stdin")
    if os.path.isdir(path):
        return _open_folder(Path(path), max_total)
    try:
        handle = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ArchiveUnreadable("cannot read: no such file or folder") from None
    except OSError as exc:
        raise ArchiveUnreadable(f"cannot read: {exc.strerror or exc}") from None
    except zipfile.BadZipFile as exc:
        raise ArchiveUnreadable(f"not a zip archive or a folder ({exc})") from None
    return _open_zip(handle, max_total)


def _open_zip(handle: zipfile.ZipFile, max_total: int) -> Archive:
    archive = Archive("zip")
    infos = handle.infolist()
    if len(infos) > MAX_ENTRIES:
        archive.findings.append(Finding("MCS-21", None, f"{len(infos)} entries (the limit is {MAX_ENTRIES})"))
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
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR_BYTES and ratio > MAX_RATIO:
            archive.findings.append(
                Finding(
                    "MCS-22",
                    name,
                    f"expands {ratio:.0f} times ({info.compress_size} -> {info.file_size} bytes; "
                    f"the limit is {MAX_RATIO}): a zip bomb, refused without decompressing",
                )
            )
    if total > max_total:
        archive.findings.append(
            Finding("MCS-21", None, f"{total} bytes uncompressed in all (the limit is {max_total})")
        )
    if total > RATIO_FLOOR_BYTES and total / max(compressed, 1) > MAX_RATIO:
        archive.findings.append(
            Finding("MCS-22", None, f"the archive expands {total / max(compressed, 1):.0f} times in all")
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


def _open_folder(root: Path, max_total: int) -> Archive:
    archive = Archive("folder")
    count = 0
    for folder, directories, files in os.walk(root, followlinks=False):
        for entry in [*directories, *files]:
            full = Path(folder, entry)
            name = full.relative_to(root).as_posix()
            count += 1
            if count > MAX_ENTRIES:
                archive.findings.append(Finding("MCS-21", None, f"more than {MAX_ENTRIES} entries"))
                return archive
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                archive.findings.append(Finding("MCS-19", name, "symbolic link (not followed)"))
            elif stat.S_ISREG(info.st_mode):
                archive.sizes[name] = info.st_size
    if archive.total_bytes > max_total:
        archive.findings.append(
            Finding("MCS-21", None, f"{archive.total_bytes} bytes in all (the limit is {max_total})")
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
