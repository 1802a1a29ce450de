"""Follow a child's output line by line: the one console tailer of the tools.

QEMU's serial console (qemu.boot, for run_in_vm) and the native bench driver's output go through
follow(): it copies the output to a log file, hands each line to a callback, and stops at a
deadline, or when no line the callback calls progress has come for too long.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from typing import BinaryIO, Callable

EOF = "eof"  # the child closed its output (or exited and nothing is left to read)
TIMEOUT = "timeout"  # the deadline passed
STALLED = "stalled"  # no progress line for stall_s seconds


class Stop(Exception):
    """Raised by a line callback to stop following; its message says why."""


def follow(proc: subprocess.Popen, log: BinaryIO, on_line: Callable[[str], object], *,
           deadline: float, stall_s: float | None = None) -> str:
    """Read proc.stdout (a pipe) until it ends, the deadline (time.monotonic()) passes, or no line
    for which on_line returned true has come for stall_s seconds (None: no such limit).

    on_line gets every line, decoded (UTF-8, bad bytes replaced) without its newline; a last
    line without a newline comes too. Returns EOF, TIMEOUT, STALLED, or the message of the Stop
    that on_line raised (the lines read with it are all handled first). The child is left as it
    is: stopping it is the caller's business."""
    fd = proc.stdout.fileno()
    last_progress = time.monotonic()
    pending = b""
    stop: str | None = None

    def feed(lines: list[bytes]) -> None:
        nonlocal last_progress, stop
        for raw in lines:
            try:
                if on_line(raw.decode("utf-8", errors="replace")):
                    last_progress = time.monotonic()
            except Stop as exc:
                stop = stop or str(exc)

    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while stop is None:
            now = time.monotonic()
            if now >= deadline:
                stop = TIMEOUT
                break
            if stall_s is not None and now - last_progress > stall_s:
                stop = STALLED
                break
            wait = min(deadline - now, 1.0 if stall_s is None else min(1.0, stall_s))
            if not sel.select(timeout=wait):
                # A child that exited while a process it left behind holds the pipe open ends
                # here, not at an EOF that may never come.
                if proc.poll() is not None:
                    stop = EOF
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                stop = EOF
                break
            log.write(chunk)
            log.flush()
            *lines, pending = (pending + chunk).split(b"\n")
            feed(lines)
    finally:
        sel.close()
    if pending:
        feed([pending])
    return stop
