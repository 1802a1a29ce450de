"""Which scx_pandemonium process, running which binary, is the attached scheduler.

sysfs names the attached scheduler only by its ops name, and the published scx_pandemonium (a
different project with the same binary name) uses the same one as ours, "pandemonium". The
process tells them apart: /proc/PID/exe is the file it runs, and its --version says which
project built it.

Standard library only; `proc_root` lets the tests build a fake /proc.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .common import BINARY_NAME, binary_version, read_text

# The kernel keeps 15 bytes of a command name; "scx_pandemonium" happens to fit exactly.
COMM = BINARY_NAME[:15]
# Processes of the binary that load no scheduler: upstream's tools (ours are pandemonium-tools
# now; an older build of ours ran probe and stress here too), and the read-only modes.
NOT_SCHEDULER_ARGS = {"probe", "stress", "stress-worker", "--monitor", "--help-stats",
                      "--help", "-h", "--version", "-V"}
DELETED = " (deleted)"


@dataclass
class Attached:
    pid: int
    exe: str                # the binary's path
    exact: bool             # from /proc/PID/exe; False: argv[0] (that link needs root to read)
    deleted: bool           # replaced or removed on disk since the process started
    version: str | None     # its --version output


def _candidate(pid_dir: Path) -> Attached | None:
    comm = read_text(pid_dir / "comm").strip()
    try:
        link = os.readlink(pid_dir / "exe")
    except OSError:
        link = None
    if comm != COMM and (link is None or
                         os.path.basename(link.removesuffix(DELETED)) != BINARY_NAME):
        return None
    argv = [a for a in read_text(pid_dir / "cmdline").split("\0") if a]
    if not argv or NOT_SCHEDULER_ARGS.intersection(argv[1:]):
        return None
    pid = int(pid_dir.name)
    if link is not None:
        deleted = link.endswith(DELETED)
        exe = link.removesuffix(DELETED)
        # A replaced binary still runs from the process's own link; the file at `exe` may be
        # another version by now.
        version = binary_version(pid_dir / "exe" if deleted else exe)
        return Attached(pid, exe, True, deleted, version)
    return Attached(pid, argv[0], False, False,
                    binary_version(argv[0]) if os.path.isabs(argv[0]) else None)


def find(proc_root: str | os.PathLike = "/proc") -> list[Attached]:
    """Every process that runs an scx_pandemonium as a scheduler, by pid."""
    try:
        entries = [e for e in Path(proc_root).iterdir() if e.name.isdigit()]
    except OSError:
        return []
    return [a for e in sorted(entries, key=lambda e: int(e.name))
            if (a := _candidate(e)) is not None]


def describe(found: list[Attached], installed: str | None) -> tuple[list[str], list[str]]:
    """(lines for the report, notes) about the attached scheduler's process."""
    if not found:
        return (["no scx_pandemonium process found: the attached \"pandemonium\" may run under "
                 "another name"], [])
    lines, notes = [], []
    for a in found:
        where = "" if a.exact else " (argv[0]: reading /proc/PID/exe needs root)"
        gone = " (deleted: replaced on disk since it started)" if a.deleted else ""
        lines.append(f"pid {a.pid}: {a.exe}{gone}{where}")
        lines += [f"  {v}" for v in (a.version or "its --version did not run").splitlines()]
        if installed and a.exact and not a.deleted and \
                os.path.realpath(a.exe) != os.path.realpath(installed):
            notes.append(f"the attached scheduler runs {a.exe}, not the installed {installed}")
    if len(found) > 1:
        notes.append("several scx_pandemonium processes: only one of them can be attached")
    return lines, notes
