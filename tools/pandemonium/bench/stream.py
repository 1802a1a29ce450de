"""Reassemble the results the guest driver streams over the console as each step finishes.

The guest's /results only leaves the VM as one tar at the very end (vm/guest_init.py); a guest
that oopses mid-run (multi-threaded TCG's int3) used to lose everything measured in that boot.
With BENCH_STREAM=1, guest/driver.sh also prints each finished step:

    BENCH-SAVE-BEGIN <k> <relpath>
    <base64 lines of the gzip of $R/<relpath>>
    BENCH-SAVE-END <k> <relpath> <sha256 of the gzip bytes>
    BENCH-SAVE-STEP <k> <the step's steps.tsv line>

(the output file first, then the steps.tsv line), env.txt once at the start (k 0), each run's
scheduler log after it detaches, and its events as "BENCH-EVENT <text>". StreamSaver is fed one
console line at a time and writes what arrived intact into a directory laid out as /results
(raw/, steps.tsv, env.txt, events.log), so parse.parse_results reads it like the tar's.

Kernel lines land anywhere, even inside a base64 block: a line that is not base64 is skipped
there, and the checksum decides whether the file is whole. A damaged file is dropped with a
warning, and its step does not count as recorded (a step is its steps.tsv line plus its output).
Pure text processing plus file writes: pytest feeds it transcripts.
"""

from __future__ import annotations

import gzip
import re
import shutil
import zlib
from pathlib import Path

from ..common import log

from ..vm.console import checked_b64, clean

_BEGIN = re.compile(r"BENCH-SAVE-BEGIN (\d+) (\S+)")
_END = re.compile(r"BENCH-SAVE-END (\d+) (\S+) ([0-9a-f]{64})")
# cores iter sched phase rc t0 t1, then six cost fields (numbers, or '-' when not measured).
_STEP = re.compile(r"BENCH-SAVE-STEP (\d+) (\d+ \d+ \S+ \S+ -?\d+ \d+ \d+(?: (?:\d+|-)){6})$")
_EVENT = re.compile(r"BENCH-EVENT (.*)$")
_START = re.compile(r"BENCH-START (\d+)")
_B64 = re.compile(r"^[A-Za-z0-9+/=]+$")
# Only what the driver writes: a stray or hostile path never leaves the directory.
_SAFE_PATH = re.compile(r"^(env\.txt|raw/[A-Za-z0-9_.:+=-]+)$")
DONE = "BENCH-DONE"


def step_key(line: str) -> tuple[int, int, str, str]:
    """(cores, iteration, scheduler, phase) of a steps.tsv line: which planned step it is."""
    f = line.split()
    return int(f[0]), int(f[1]), f[2], f[3]


class StreamSaver:
    """Called with each console line (run_in_vm's on_line); writes the files it reassembles
    under `dest` as they arrive, so even a host that dies keeps them."""

    def __init__(self, dest: Path) -> None:
        self.dest = dest
        if dest.exists():  # a reused --out: nothing of an earlier run may pass for this one's
            shutil.rmtree(dest)
        (dest / "raw").mkdir(parents=True)
        for name in ("steps.tsv", "events.log"):
            (dest / name).write_text("")
        self.total: int | None = None  # BENCH-START: the planned step count
        self.done = False  # BENCH-DONE seen: the driver got to its end
        self.steps: dict[int, str] = {}  # k -> steps.tsv line, for steps recorded whole
        self.saved: set[str] = set()  # relpaths written intact
        self.damaged: list[str] = []  # why files or steps were dropped, for the log and notes
        self._block: tuple[int, str] | None = None
        self._b64: list[str] = []

    def feed(self, raw: str) -> None:
        line = clean(raw)
        if self._block is not None:
            m = _END.search(line)
            if m:
                self._finish(int(m.group(1)), m.group(2), m.group(3))
                return
            if _BEGIN.search(line) is None:
                if _B64.match(line.strip()):
                    self._b64.append(line.strip())
                return  # a kernel line inside the block; the checksum decides
            self.close()
        if (m := _BEGIN.search(line)):
            self._block, self._b64 = (int(m.group(1)), m.group(2)), []
        elif (m := _STEP.search(line)):
            self._step(int(m.group(1)), m.group(2))
        elif (m := _EVENT.search(line)):
            with open(self.dest / "events.log", "a") as f:
                f.write(m.group(1).strip() + "\n")
        elif (m := _START.search(line)):
            self.total = int(m.group(1))
        elif line.strip() == DONE or line.endswith(DONE):
            self.done = True

    __call__ = feed  # run_in_vm's on_line

    def close(self) -> None:
        """A block still open was cut short (the console ended, or another block began)."""
        if self._block is not None:
            self._drop(f"{self._block[1]} (step {self._block[0]}): cut short, no end marker")

    def _drop(self, why: str) -> None:
        log.warning("bench: streamed result dropped: %s", why)
        self.damaged.append(why)
        self._block, self._b64 = None, []

    def _finish(self, k: int, relpath: str, sha: str) -> None:
        begun = self._block
        if begun != (k, relpath):
            self._drop(f"{begun[1]} (step {begun[0]}): ended by the marker of {relpath} (step {k})")
            return
        try:
            data = decode(self._b64, sha)
        except ValueError as exc:
            self._drop(f"{relpath} (step {k}): {exc}")
            return
        self._block, self._b64 = None, []
        if not _SAFE_PATH.match(relpath):
            self._drop(f"{relpath} (step {k}): not a path the driver writes")
            return
        (self.dest / relpath).write_bytes(data)
        self.saved.add(relpath)

    def _step(self, k: int, line: str) -> None:
        cores, it, sched, phase = step_key(line)
        out = f"raw/c{cores}-i{it}-{sched}.{phase}.out"
        if out not in self.saved:
            # Without its output the step would parse as a failed phase; lost is the truth.
            self.damaged.append(f"step {k} ({out}): its output did not arrive intact")
            log.warning("bench: streamed step %d dropped: %s did not arrive intact", k, out)
            return
        self.steps[k] = line
        with open(self.dest / "steps.tsv", "a") as f:
            f.write(line + "\n")


def decode(b64_lines: list[str], sha256: str) -> bytes:
    """The file of one block: base64 -> gzip bytes (checked against sha256) -> contents.
    Raises ValueError when the block is damaged."""
    gz = checked_b64(b64_lines, sha256)
    try:
        return gzip.decompress(gz)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"not gzip ({exc})") from None

