"""`pandemonium.py bench-stress`: the reliability matrix (kernels x vCPUs x modes x workloads) in
the VM. One guest boot per (kernel, vCPUs, mode) runs every workload through
tools/pandemonium/stress/driver.sh; the outcomes are judged on the host
(tools/pandemonium/stress/results.py) and reported as a Markdown table and JSON under
~/.cache/pandemonium/stress/<timestamp>/."""

from __future__ import annotations

import argparse
import time

from ..common import PandemoniumError, cache_dir, die, log
from . import workloads as wl
from .report import (Run, incomplete, kernel_limit_count, markdown_table, pivot_table, summary,
                     unexpected_count, write_json)
from .results import read_run


def add_bench_stress_parser(sub: argparse._SubParsersAction) -> None:
    listing = "\n".join(f"  {name:<17} {what}" for name, what in wl.WORKLOADS.items())
    p = sub.add_parser(
        "bench-stress", help="reliability matrix in the VM: stress workloads x kernels x vCPUs",
        description="Run every stress workload under scx_pandemonium in the VM, for each kernel, "
                    "vCPU count and mode, and report unexpected exits (kernel stall ejections, "
                    "scheduler deaths, hangs on exit), the worst wait seen by a progress monitor, "
                    "overflow/starvation rescues and whether each workload completed.",
        epilog=f"workloads:\n{listing}\n\n"
               f"--quick: {wl.QUICK['cpus']} vCPUs, kernel {wl.QUICK['kernels']}, modes "
               f"{wl.QUICK['modes']}, {wl.QUICK['duration']} s per workload.\n"
               f"default: vCPUs {wl.FULL['cpus']}, kernels {wl.FULL['kernels']}, modes "
               f"{wl.FULL['modes']}, each cell (one guest run through every workload) at least "
               f"{wl.FULL_CELL_S} s of workload time: {wl.FULL_CELL_S} s split over the workloads, "
               f"at least {wl.MIN_WORKLOAD_S} s each.\n"
               "RT workloads (" + ", ".join(sorted(wl.RT_WORKLOADS)) + ") on a kernel without the "
               "sched_ext deadline server report stalls as kernel limits, not unexpected exits.\n"
               "Exit status: 0 when there are no unexpected exits and every workload completed.")
    p.add_argument("--quick", action="store_true", help="the short form (CI): see below")
    p.add_argument("--cpus", metavar="N[,N]", help="vCPU counts (default: 2,4)")
    p.add_argument("--kernel", metavar="SPEC[,SPEC]",
                   help="VM kernels, as for `vm --kernel` (default: default,latest)")
    p.add_argument("--modes", metavar="MODE[,MODE]",
                   help=f"scheduler modes: {', '.join(wl.MODES)} (default: both)")
    p.add_argument("--duration", type=int, metavar="S", help=f"seconds per workload (default: {wl.FULL_CELL_S} s per cell split over the "
                        f"workloads, at least {wl.MIN_WORKLOAD_S} s each)")
    p.add_argument("--workloads", metavar="W[,W]", help="only these workloads (default: all)")
    p.add_argument("--accel", default="tcg-single",
                   help="VM accelerator (default: tcg-single, the one that never oopsed)")
    p.set_defaults(func=cmd_bench_stress)


def _settings(args: argparse.Namespace) -> dict:
    base = wl.QUICK if args.quick else wl.FULL
    try:
        workloads = (wl.parse_list(args.workloads, list(wl.WORKLOADS), "--workloads")
                     if args.workloads else list(wl.WORKLOADS))
        default_duration = base.get("duration") or wl.full_duration(len(workloads))
        s = {
            "cpus": wl.parse_cpus(args.cpus) if args.cpus else base["cpus"],
            "kernels": wl.parse_list(args.kernel, None, "--kernel") if args.kernel
            else base["kernels"],
            "modes": wl.parse_list(args.modes, list(wl.MODES), "--modes") if args.modes
            else base["modes"],
            "workloads": workloads,
            "duration": default_duration if args.duration is None else args.duration,
        }
    except ValueError as exc:
        die(f"bench-stress: {exc}", 2)
    if not 1 <= s["duration"] <= 3600:
        die("bench-stress: --duration must be 1 to 3600 seconds", 2)
    return s


def _run_one(kernel: str, cpus: int, mode: str, s: dict, accel: str, out_root) -> Run:
    from ..vm import run_in_vm

    out = out_root / f"{kernel}-{cpus}cpu-{mode}"
    cmd = ["sh", wl.GUEST_DRIVER, str(s["duration"]), wl.MODES[mode], *s["workloads"]]
    log.info("bench-stress: kernel %s, %d vCPUs, %s: %d workloads x %d s", kernel, cpus, mode,
             len(s["workloads"]), s["duration"])
    stall_s = wl.progress_timeout(s["duration"])
    res = run_in_vm(cmd, cpus=cpus, mem_mb=wl.GUEST_MEM_MB, kernel=kernel, accel=accel,
                    out_dir=out, timeout=wl.vm_timeout(len(s["workloads"]), s["duration"]),
                    add=[(str(wl.DRIVER), wl.GUEST_DRIVER),
                         (str(wl.BUILD_LOAD), wl.GUEST_BUILD_LOAD)],
                    tools=wl.GUEST_TOOLS, echo=False,
                    on_line=wl.is_progress, progress_timeout=stall_s,
                    extra_cmdline="rcupdate.rcu_task_stall_timeout=20000 log_buf_len=8M")
    wedged = ([f"the guest wedged: no progress for {stall_s:.0f} s, stopped by the host"]
              if res.stalled else [])
    cells, problems, limits = read_run(res.out_dir, res.kernel_version, cpus, mode,
                                       s["workloads"], s["duration"], res.rc,
                                       console=res.log_path, rt_workloads=wl.RT_WORKLOADS,
                                       host_problems=wedged)
    run = Run(res.kernel_version, cpus, mode, res.rc, res.duration_s, cells, problems, str(out),
              kernel_limits=limits)
    log.info("bench-stress: %s %d vCPUs %s: %d unexpected, %d kernel limits, %d incomplete "
             "(%.0f s)", res.kernel_version, cpus, mode, unexpected_count([run]),
             kernel_limit_count([run]), len(incomplete([run])), res.duration_s)
    return run


def cmd_bench_stress(args: argparse.Namespace) -> int:
    from .. import build

    s = _settings(args)
    build.ensure_packages(vm=True, extra=wl.GUEST_TOOLS)
    build.build_release()
    out_root = cache_dir("stress", time.strftime("%Y%m%d-%H%M%S"))
    runs: list[Run] = []
    for kernel in s["kernels"]:
        for cpus in s["cpus"]:
            for mode in s["modes"]:
                try:
                    runs.append(_run_one(kernel, cpus, mode, s, args.accel, out_root))
                except PandemoniumError as exc:
                    # A kernel that cannot be fetched is a failed run, not the end of the matrix.
                    log.error("bench-stress: kernel %s, %d vCPUs, %s: %s", kernel, cpus, mode, exc)
                    runs.append(Run(kernel, cpus, mode, -1, 0.0, [], [f"could not run: {exc}"]))
                write_json(runs, out_root / "results.json", s)
    table = markdown_table(runs) + "\n\nworst wait of the progress monitor, ms:\n\n" + pivot_table(runs)
    (out_root / "table.md").write_text(table + "\n")
    print(table)
    print(summary(runs), flush=True)
    log.info("bench-stress: results in %s", out_root)
    return 0 if unexpected_count(runs) == 0 and not incomplete(runs) else 1
