"""Write newc cpio archives (the initramfs format) in pure Python.

Built in memory rather than with `cpio -o` from a staging tree so that ownership is
root:root and timestamps are fixed without needing root, which also makes the
output reproducible and cacheable by content.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO


@dataclass
class Entry:
    path: str  # absolute guest path
    mode: int  # full st_mode, including the file type bits
    data: bytes = b""  # file contents, or the target of a symlink


class Archive:
    """Collects entries; parent directories are added implicitly and emitted first,
    because the kernel's unpacker does not create missing parents."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}

    def _add(self, path: str, mode: int, data: bytes = b"") -> None:
        for parent in reversed(PurePosixPath(path).parents):
            p = str(parent)
            if p != "/" and p not in self.entries:
                self.entries[p] = Entry(p, stat.S_IFDIR | 0o755)
        self.entries[path] = Entry(path, mode, data)

    def add_dir(self, path: str, mode: int = 0o755) -> None:
        self._add(path, stat.S_IFDIR | mode)

    def add_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._add(path, stat.S_IFREG | (mode & 0o7777), data)

    def add_symlink(self, path: str, target: str) -> None:
        self._add(path, stat.S_IFLNK | 0o777, target.encode())

    def __contains__(self, path: str) -> bool:
        return path in self.entries

    def write(self, out: BinaryIO) -> None:
        # Directories first (sorted so parents precede children), then everything else.
        ordered = sorted(self.entries.values(),
                         key=lambda e: (not stat.S_ISDIR(e.mode), e.path))
        for ino, entry in enumerate(ordered, start=1):
            _write_entry(out, ino, entry.path.lstrip("/"), entry.mode, entry.data)
        _write_entry(out, 0, "TRAILER!!!", 0, b"")


def _write_entry(out: BinaryIO, ino: int, name: str, mode: int, data: bytes) -> None:
    encoded = name.encode() + b"\0"
    nlink = 2 if stat.S_ISDIR(mode) else 1
    fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
    header = b"070701" + b"".join(b"%08X" % f for f in fields)
    out.write(header + encoded + _pad(len(header) + len(encoded)))
    out.write(data + _pad(len(data)))


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 4)
