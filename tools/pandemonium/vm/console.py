"""Read what the guest said on its serial console: exit status, results, kernel oopses.

The guest /init (see guest_init.py) prints these markers; everything here is pure
text processing so it can be tested against sample transcripts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

EXIT_MARKER = "@@PANDEMONIUM-EXIT@@"
RESULTS_BEGIN = "@@PANDEMONIUM-RESULTS-BEGIN@@"
RESULTS_END = "@@PANDEMONIUM-RESULTS-END@@"

# A marker line carries the run's nonce so that a command echoing /init's text
# (or an old log) cannot fake an exit status.
_EXIT = re.compile(re.escape(EXIT_MARKER) + r" (\d+) (\S+)")
_END = re.compile(re.escape(RESULTS_END) + r" (\S+) ([0-9a-f]{64})")
_B64_LINE = re.compile(r"^[A-Za-z0-9+/=]+$")

# Kernel failure signatures. "int3" covers the TCG text-patching oops seen with
# thread=multi; "Attempted to kill init" is a harness bug, not a flaky guest.
_OOPS = re.compile(r"\bOops\b|\bBUG: |general protection fault|\bint3\b|Kernel panic - not syncing")
_NOT_OOPS = re.compile(r"Attempted to kill init")


def clean(line: str) -> str:
    """Strip serial line endings and terminal escape sequences (SeaBIOS/QEMU noise)."""
    line = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1bc", "", line)
    return line.rstrip("\r\n").replace("\r", "")


def checked_b64(lines: list[str], sha256: str) -> bytes:
    """The bytes base64 `lines` carry; ValueError unless they decode to data of that sha256
    (console lines interleaved or lost on the way)."""
    try:
        data = base64.b64decode("".join(lines), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not valid base64 ({exc})") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError("checksum mismatch (console lines interleaved or lost)")
    return data


def is_oops(line: str) -> bool:
    return bool(_OOPS.search(line)) and not _NOT_OOPS.search(line)


@dataclass
class ConsoleState:
    """Fed one console line at a time while QEMU runs."""
    nonce: str
    exit_code: int | None = None
    oops_lines: list[str] = field(default_factory=list)
    results_b64: list[str] = field(default_factory=list)
    results_sha256: str | None = None
    in_results: bool = False

    def feed(self, raw: str) -> None:
        line = clean(raw)
        if self.in_results:
            m = _END.search(line)
            if m and m.group(1) == self.nonce:
                self.in_results = False
                self.results_sha256 = m.group(2)
            elif _B64_LINE.match(line.strip()):
                self.results_b64.append(line.strip())
            return  # a stray kernel line inside the dump is skipped; the checksum decides
        m = _EXIT.search(line)
        if m and m.group(2) == self.nonce:
            self.exit_code = int(m.group(1))
            return
        if RESULTS_BEGIN in line and self.nonce in line:
            self.in_results = True
            return
        # Only lines before the exit marker can be the command's own output; after
        # it, only the kernel speaks, but its oopses count all the same.
        if is_oops(line):
            self.oops_lines.append(line)

    @property
    def oops_seen(self) -> bool:
        return bool(self.oops_lines)

    def results_tar(self) -> bytes | None:
        """The gzip'd tar of /results, or None if none was sent. Raises ValueError
        if the dump was damaged (console interleaving) or cut short."""
        if not self.results_b64 and self.results_sha256 is None:
            return None
        if self.results_sha256 is None:
            raise ValueError("results dump was cut short (no end marker)")
        return checked_b64(self.results_b64, self.results_sha256)


def extract_results(tar_gz: bytes, out_dir: Path) -> list[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tar_gz), mode="r:gz") as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
        tar.extractall(out_dir, filter="data")  # refuses absolute paths and ../ escapes
    return names
