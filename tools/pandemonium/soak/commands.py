"""`pandemonium.py bench-soak`: a user's machine for an hour, in the VM. One guest boot runs
tools/pandemonium/soak/soak.sh: scx_pandemonium (adaptive, its procdb kept) under a load that
changes every few minutes, with daemon restarts (SIGTERM, SIGKILL, gaming mode) and CPU
hotplug, and a report every minute. The host parses the reports, judges them
(tools/pandemonium/soak/verdicts.py) and writes a Markdown table, a PNG plot and JSON under
--out (default ~/.cache/pandemonium/soak/<timestamp>/)."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

from ..common import cache_dir, die, log, read_text
from ..stress import workloads as stress_wl
from ..stress.results import kernel_complaints
from . import plan
from .parse import Events, ejection_context, ejections, parse_events, parse_windows, procdb_check
from .report import markdown, plot
from .verdicts import judge


def add_bench_soak_parser(sub: argparse._SubParsersAction) -> None:
    phases = "\n".join(f"  {name:<12} {what}" for name, what in plan.PHASES.items())
    p = sub.add_parser(
        "bench-soak", help="an hour of a user's mixed load under the scheduler, in the VM",
        description="Run scx_pandemonium in the VM for --duration seconds under a load that "
                    "changes every few minutes, and report every minute: ejections, the "
                    "longest runnable wait, daemon RSS and CPU, an interactive wakeup P99 and "
                    "the procdb's entries. Phases are --duration/5 long (at most "
                    f"{plan.MAX_PHASE_S} s), windows --duration/{plan.MIN_WINDOWS} (at most "
                    f"{plan.MAX_WINDOW_S} s).",
        epilog=f"phases, in a cycle:\n{phases}\n\n"
               "verdicts: 0 ejections; longest wait (progress monitor, daemon wake_lat_max) "
               "under the 5 s watchdog; daemon RSS growth under 1 MiB per instance after a "
               "30 s warm-up; the procdb loaded at every restart and intact at the end; every "
               "window reported. Exit status 1 when a verdict fails.")
    p.add_argument("--duration", type=int, default=plan.DEFAULT_DURATION_S, metavar="S",
                   help=f"seconds of load (default: {plan.DEFAULT_DURATION_S})")
    p.add_argument("--cpus", type=int, default=2, metavar="N", help="vCPUs (default: 2)")
    p.add_argument("--kernel", default="default", metavar="SPEC",
                   help="VM kernel, as for `vm --kernel` (default: default)")
    p.add_argument("--accel", default="tcg-single",
                   help="VM accelerator (default: tcg-single, the one that never oopsed)")
    p.add_argument("--out", metavar="DIR",
                   help="where the report goes (default: ~/.cache/pandemonium/soak/<timestamp>)")
    p.set_defaults(func=cmd_bench_soak)


def cmd_bench_soak(args: argparse.Namespace) -> int:
    from .. import build
    from ..vm import run_in_vm

    try:
        plan.check_duration(args.duration)
    except ValueError as exc:
        die(f"bench-soak: {exc}", 2)
    if not 1 <= args.cpus <= 64:
        die("bench-soak: --cpus must be 1 to 64", 2)
    build.ensure_packages(vm=True, extra=plan.GUEST_TOOLS)
    build.build_release()
    out = Path(args.out) if args.out else cache_dir("soak", time.strftime("%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    phase_s, window_s = plan.phase_seconds(args.duration), plan.window_seconds(args.duration)
    log.info("bench-soak: %d s, %d vCPUs, kernel %s: phases of %d s, a report every %d s",
             args.duration, args.cpus, args.kernel, phase_s, window_s)

    def progress(line: str) -> bool:
        if line.startswith(("window ", "soak: ")):
            print(line, flush=True)
            return True
        return False

    res = run_in_vm(["sh", plan.GUEST_SCRIPT, str(args.duration), str(phase_s), str(window_s)],
                    cpus=args.cpus, mem_mb=plan.GUEST_MEM_MB, kernel=args.kernel,
                    accel=args.accel, out_dir=out / "guest", timeout=plan.vm_timeout(args.duration),
                    add=[(str(plan.SCRIPT), plan.GUEST_SCRIPT),
                         (str(stress_wl.DRIVER), stress_wl.GUEST_DRIVER),
                         (str(stress_wl.BUILD_LOAD), stress_wl.GUEST_BUILD_LOAD)],
                    tools=plan.GUEST_TOOLS, echo=False, on_line=progress,
                    progress_timeout=plan.PROGRESS_TIMEOUT_S,
                    extra_cmdline="rcupdate.rcu_task_stall_timeout=20000 log_buf_len=8M")
    return write_report(out, res, args.duration, args.cpus)


def write_report(out: Path, res, duration: int, cpus: int) -> int:
    """Judges one guest run (`res`: run_in_vm's result, or anything with its out_dir, log_path,
    kernel_version, accel_used, rc and stalled), writes soak.md, soak.json and soak.png to `out`
    and prints the table. Returns the exit status: 1 when a verdict failed."""
    phase_s, window_s = plan.phase_seconds(duration), plan.window_seconds(duration)
    guest = res.out_dir

    def _read(name: str) -> str:
        return read_text(guest / name) if guest else ""
    console = read_text(res.log_path)
    windows = parse_windows(_read("windows.txt")) or parse_windows(console)
    events: Events = parse_events(_read("events.txt") or console)
    dmesg = _read("dmesg.txt") or console
    db = guest / "procdb.bin" if guest else None
    procdb_file = procdb_check(db.read_bytes()) if db and db.is_file() else None

    verdicts = judge(windows, events, ejections(dmesg), procdb_file,
                     plan.expected_windows(duration), list(plan.PHASES))
    complaints = kernel_complaints(dmesg.splitlines())
    title = (f"bench-soak: {duration} s, {cpus} vCPUs, kernel {res.kernel_version}, "
             f"{res.accel_used}")
    text = markdown(windows, events, verdicts, title)
    for head, lines in (("Kernel log complaints", complaints),
                        ("Ejections, with the kernel's and the daemon's words",
                         ejection_context(dmesg, _read("sched.log")))):
        if lines:
            text += f"\n{head}:\n\n" + "\n".join(f"    {c}" for c in lines) + "\n"
    if res.stalled:
        text += f"\nThe guest wedged: no progress for {plan.PROGRESS_TIMEOUT_S:.0f} s.\n"
    table = out / "soak.md"
    table.write_text(text)
    (out / "soak.json").write_text(json.dumps({
        "duration_s": duration, "cpus": cpus, "kernel": res.kernel_version,
        "phase_s": phase_s, "window_s": window_s, "guest_rc": res.rc,
        "windows": [asdict(w) for w in windows],
        "verdicts": [vars(v) for v in verdicts], "kernel_complaints": complaints}, indent=1) + "\n")
    status = plot(windows, out / "soak.png", title)
    print(text, flush=True)
    print(f"table: {table}\n{status}", flush=True)
    failed = [v.name for v in verdicts if not v.ok]
    if res.rc != 0:
        failed.append(f"guest exit status {res.rc}")
    print("bench-soak: " + ("all verdicts pass" if not failed else "FAILED: " + ", ".join(failed)),
          flush=True)
    return 0 if not failed else 1
