"""Reads what soak.sh leaves: its window lines, its event lines (phases, daemon stops and starts
with the procdb load each start reported), the kernel log, and the procdb file itself."""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field

WINDOW = "window "
EVENT = "soak: "


def _kv(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split() if "=" in item)


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.isdigit() else None


@dataclass
class Window:
    """One report: what was measured over a window and sampled at its end."""
    n: int
    t: int                            # seconds since the soak began, at the window's end
    phase: str
    pid: int | None                   # the daemon sampled (None: it was restarting)
    monitor_wait_ns: int | None       # the progress monitor's longest wait to run
    probe_p99_ns: int | None          # the wakeup probe's P99 lateness
    probe_max_ns: int | None
    wake_lat_max_ns: int | None       # the daemon's own max wakeup latency since its load
    rss_kb: int | None
    cpu_ms: int | None
    procdb: int | None
    ejections: int | None             # so far, in the kernel log


_COUNTS = [f for f in Window.__dataclass_fields__ if f not in ("n", "t", "phase")]
_KEYS = {"monitor_wait_ns": "mon_ns", "probe_p99_ns": "p99_ns"}  # where the line's key differs


def parse_windows(text: str) -> list[Window]:
    """The `window key=value...` lines, in order; a line cut short by a dying guest is kept with
    what it has (absent values are None)."""
    out = []
    for line in text.splitlines():
        idx = line.find(WINDOW)
        if idx < 0 or not line[idx + len(WINDOW):].startswith("n="):
            continue
        kv = _kv(line[idx + len(WINDOW):])
        n = _int(kv.get("n"))
        if n is None:
            continue
        out.append(Window(n=n, t=_int(kv.get("t")) or 0, phase=kv.get("phase", "-"),
                          **{f: _int(kv.get(_KEYS.get(f, f))) for f in _COUNTS}))
    # The console may repeat a line the results file also has: keep the last of each n.
    return list({w.n: w for w in out}.values())


@dataclass
class Start:
    pid: int | None
    mode: str
    t: int | None
    load: str                         # the daemon's own words about its procdb at startup


@dataclass
class Stop:
    signal: str
    pid: int | None
    rc: str                           # exit status, or "hang"


@dataclass
class Events:
    starts: list[Start] = field(default_factory=list)
    stops: list[Stop] = field(default_factory=list)
    failed_starts: int = 0
    deaths: list[str] = field(default_factory=list)    # the daemon found gone between phases
    phases: list[tuple[str, str]] = field(default_factory=list)   # (phase, its rc)
    ended: bool = False


def parse_events(text: str) -> Events:
    ev = Events()
    for line in text.splitlines():
        idx = line.find(EVENT)
        if idx < 0:
            continue
        body = line[idx + len(EVENT):].strip()
        word, _, rest = body.partition(" ")
        if word == "start" and rest.startswith("failed"):
            ev.failed_starts += 1
        elif word == "start":
            head, _, load = rest.partition("procdb_load=")
            kv = _kv(head)
            mode = re.search(r"mode='([^']*)'", head)
            ev.starts.append(Start(_int(kv.get("pid")), mode.group(1) if mode else "",
                                   _int(kv.get("t")), load.strip()))
        elif word == "stop":
            kv = _kv(rest)
            ev.stops.append(Stop(kv.get("signal", "?"), _int(kv.get("pid")), kv.get("rc", "?")))
        elif word == "daemon":
            ev.deaths.append(body)
        elif word == "phase" and " end " in f" {rest} ":
            name = rest.split()[0]
            ev.phases.append((name, _kv(rest).get("rc", "?")))
        elif word == "end":
            ev.ended = True
    return ev


_LOADED = re.compile(r"^loaded (\d+) profiles")


def loaded_profiles(load: str) -> int | None:
    """N of a startup's `loaded N profiles`; None for any other outcome."""
    m = _LOADED.match(load)
    return int(m.group(1)) if m else None


def ejections(dmesg: str) -> list[str]:
    """sched_ext disabling a scheduler for any reason but our own unregister (a stop, a kill)."""
    return [line.strip() for line in dmesg.splitlines()
            if "sched_ext" in line and "disabled (" in line
            and "unregistered from user space" not in line]


# procdb.bin as src/procdb/format.rs writes it: magic, format version, payload length, CRC-32 of
# the payload, then bincode's varint-encoded Vec<PersistedEntry> (its length first).
MAGIC = b"PANDPDB\0"
HEADER = struct.Struct("<8sIQI")


def procdb_check(data: bytes) -> tuple[int | None, str]:
    """(entries, problem): the entry count of an intact file and "", or None and why not."""
    if len(data) < HEADER.size:
        return None, f"{len(data)} bytes: shorter than the {HEADER.size}-byte header"
    magic, _version, length, crc = HEADER.unpack_from(data)
    if magic != MAGIC:
        return None, "bad magic"
    payload = data[HEADER.size:]
    if len(payload) != length:
        return None, f"payload {len(payload)} bytes, header says {length}"
    if zlib.crc32(payload) != crc:
        return None, "CRC mismatch"
    if not payload:
        return None, "empty payload"
    tag = payload[0]
    if tag < 251:
        return tag, ""
    width = {251: 2, 252: 4, 253: 8}.get(tag)
    if width is None or len(payload) < 1 + width:
        return None, f"bad length prefix {tag}"
    return int.from_bytes(payload[1:1 + width], "little"), ""


def ejection_context(dmesg: str, slog: str, lines: int = 30) -> list[str]:
    """What to keep of an ejection: each kernel disable message with the dump lines after it,
    and the daemon's own last words before each death soak.sh found (its -v telemetry left
    out), so a report shows the finding without the guest's files at hand."""
    out: list[str] = []
    klines = dmesg.splitlines()
    for i, line in enumerate(klines):
        if line.strip() in ejections(line):
            out += ["kernel:"] + [f"    {x}" for x in klines[i:i + lines]]
    slines = slog.splitlines()
    for i, line in enumerate(slines):
        if line.startswith("@@ daemon gone"):
            said = [x for x in slines[max(0, i - 4 * lines):i]
                    if not x.startswith(("d/s:", "@@ "))][-lines:]
            out += [f"daemon ({line[3:]}):"] + [f"    {x}" for x in said]
    return out
