"""pandemonium.py's command line: one subcommand per job.

Subcommands are registered in COMMANDS; each gets its own parser via a
`add_<name>_parser(subparsers)` function and runs via `cmd_<name>(args)`.
Arguments after a bare `--` are kept verbatim in args.passthrough, so
subcommands that run a program (vm, later run/test) never have its options
mistaken for their own.
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
from pathlib import Path

from . import install
from .bench.commands import add_all as add_bench_parsers
from .common import PROJECT_ROOT, PandemoniumError, die, log, setup_logging
from .soak.commands import add_bench_soak_parser
from .stress.commands import add_bench_stress_parser


def add_vm_parser(sub: argparse._SubParsersAction) -> None:
    from .vm.accel import ICOUNT_HELP, MODES
    from .vm.kernel import DEFAULT_KERNEL
    from .vm.runner import DEFAULT_MEM_MB, DEFAULT_TIMEOUT_S

    p = sub.add_parser(
        "vm", help="run a command as root inside a QEMU guest with a sched_ext kernel",
        description="Boot a sched_ext-capable Debian kernel in QEMU with an initramfs holding\n"
                    "busybox, the built scheduler and any --add/--tool files, run CMD there as\n"
                    "root, and exit with its exit status (124: the guest timed out, 125: the\n"
                    "guest died without reporting one). Kernels are fetched with apt from the\n"
                    "host's Debian mirror and cached under ~/.cache/pandemonium.",
        epilog="examples:\n"
               "  %(prog)s --cpus 2 -- uname -r\n"
               "  %(prog)s --tool stress-ng -- stress-ng --cpu 2 -t 5\n"
               "  %(prog)s --out /tmp/res -- sh -c 'dmesg > /results/dmesg.txt'\n"
               "Files the command writes to /results are copied back to --out.")
    p.add_argument("--cpus", type=int, default=2, metavar="N", help="vCPUs (default: 2)")
    p.add_argument("--mem", type=int, default=DEFAULT_MEM_MB, metavar="MB",
                   help=f"guest memory in MB (default: {DEFAULT_MEM_MB})")
    p.add_argument("--kernel", default="default", metavar="SPEC",
                   help=f"'default' ({DEFAULT_KERNEL}), 'latest' (newest 7.x cloud kernel), "
                        "a version or version prefix (7.3.4+deb13-cloud-amd64, 7.2), or a "
                        "directory with vmlinuz* and config*")
    p.add_argument("--accel", choices=MODES, default="auto",
                   help="auto: KVM if it really works here, else tcg-single (default: auto). "
                        + ICOUNT_HELP)
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"kill the guest after S seconds (default: {DEFAULT_TIMEOUT_S})")
    p.add_argument("--out", metavar="DIR",
                   help="copy the guest's /results here, with the console log")
    p.add_argument("--add", action="append", default=[], metavar="HOSTPATH[:GUESTPATH]",
                   help="file or directory to put in the guest (default place: "
                        "/usr/local/bin/NAME); shared libraries come along. Repeatable")
    p.add_argument("--tool", action="append", default=[], metavar="NAME",
                   help="host program found on PATH (stress-ng, perf, cyclictest, "
                        "hackbench...) to put in /usr/local/bin. Repeatable")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="environment variable for the command. Repeatable")
    p.add_argument("--append", default="", metavar="ARGS",
                   help="extra kernel command-line arguments")
    p.add_argument("--topology", metavar="nodes=N,threads=T",
                   help="boot with N NUMA nodes of cores with T SMT siblings (--cpus must split "
                        "into them; default: flat)")
    p.add_argument("--no-retry", action="store_true",
                   help="do not boot again when the guest kernel oopses")
    p.add_argument("--no-scheduler", action="store_true",
                   help="do not add the built binaries (scx_pandemonium, pandemonium-tools) "
                        "to the guest")
    p.add_argument("--quiet", action="store_true", help="do not echo the guest console")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="command to run in the guest (via sh -c)")
    p.set_defaults(func=cmd_vm)


def cmd_vm(args: argparse.Namespace) -> int:
    from . import build
    from .vm import qemu, run_in_vm

    cmd = args.passthrough if args.passthrough is not None else args.cmd
    if not cmd:
        die("vm: no command given; usage: pandemonium.py vm [options] -- CMD ARGS...", 2)
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            die(f"vm: --env {item!r}: expected KEY=VALUE", 2)
        env[key] = value
    try:
        topology = qemu.parse_topology(args.topology) if args.topology else None
        if topology is not None:
            topology.check(args.cpus, args.mem)
    except PandemoniumError as exc:
        die(f"vm: {exc}", 2)
    # QEMU, busybox and the kernel's unpackers: a fresh machine has none of them.
    build.ensure_packages(vm=True)
    result = run_in_vm(cmd, cpus=args.cpus, mem_mb=args.mem, kernel=args.kernel,
                       accel=args.accel, timeout=args.timeout, add=args.add, out_dir=args.out,
                       retry_on_oops=not args.no_retry, env=env, tools=args.tool,
                       include_scheduler=not args.no_scheduler, echo=not args.quiet,
                       extra_cmdline=args.append, topology=topology)
    return result.rc


def add_build_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build the scheduler (release)",
                       description="Install missing build packages (as root) and run cargo "
                                   "build --release.\nCARGO_TARGET_DIR is honored.")
    p.set_defaults(func=cmd_build)


def cmd_build(args: argparse.Namespace) -> int:
    from . import build

    build.ensure_packages(vm=False)
    log.info("built %s", build.build_release())
    return 0


def add_run_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="build and run the scheduler (in the VM when this kernel lacks sched_ext)",
        description="Build scx_pandemonium and run it. On a kernel with sched_ext it runs "
                    "here (needs root) until Ctrl-C. Otherwise it boots the project's VM and "
                    "runs it there for --duration seconds, with --hogs CPU hogs as load.",
        epilog="examples:\n  %(prog)s\n  %(prog)s -- --no-adaptive -v\n"
               "  %(prog)s --vm --cpus 4 --hogs 8 --duration 60")
    p.add_argument("--vm", action="store_true", help="use the VM even if this kernel has sched_ext")
    p.add_argument("--cpus", type=int, default=2, metavar="N", help="VM vCPUs (default: 2)")
    p.add_argument("--duration", type=int, default=30, metavar="S",
                   help="VM only: stop the scheduler with SIGINT after S seconds (default: 30)")
    p.add_argument("--hogs", type=int, default=None, metavar="N",
                   help="VM only: CPU hogs to run meanwhile (default: 2 per vCPU)")
    p.add_argument("--kernel", default="default", metavar="SPEC", help="VM kernel (see vm --help)")
    p.add_argument("sched_args", nargs=argparse.REMAINDER, metavar="-- ARGS",
                   help="arguments for scx_pandemonium (default: -v)")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    import os
    import shlex

    from . import build

    sched_args = (args.passthrough if args.passthrough is not None else args.sched_args) or ["-v"]
    native = os.path.isdir("/sys/kernel/sched_ext") and not args.vm
    build.ensure_packages(vm=not native)
    binary = build.build_release()
    if native:
        cmd = [str(binary), *sched_args]
        if os.geteuid() != 0:
            cmd = ["sudo", *cmd]
        log.info("this kernel has sched_ext: running %s (Ctrl-C stops it)", " ".join(cmd))
        return subprocess.call(cmd)

    from .vm import run_in_vm

    if args.duration < 1 or args.cpus < 1:
        die("run: --duration and --cpus must be at least 1", 2)
    hogs = args.cpus * 2 if args.hogs is None else args.hogs
    log.info("this kernel has no sched_ext: running scx_pandemonium in the VM for %d s "
             "(%d vCPU, %d CPU hogs)", args.duration, args.cpus, hogs)
    script = (f"i=0; while [ $i -lt {hogs} ]; do (while :; do :; done) & i=$((i+1)); done; "
              f"timeout -s INT {args.duration} scx_pandemonium {shlex.join(sched_args)}; "
              "rc=$?; [ $rc -eq 124 ] && rc=0; exit $rc")
    res = run_in_vm(["sh", "-c", script], cpus=args.cpus, kernel=args.kernel,
                    timeout=args.duration + 600)
    return res.rc


def add_test_parser(sub: argparse._SubParsersAction) -> None:
    from .gate_runner import known_layers

    p = sub.add_parser(
        "test", help="host unit tests, then the integration gate in the VM",
        description="Install missing packages (as root), run cargo test and the Python tests "
                    "on the host, then the integration gate (tests/gate.rs) inside the VM at "
                    "each --cpus count.",
        epilog="examples:\n  %(prog)s\n  %(prog)s --gate load\n  %(prog)s --gate load --cpus 4\n"
               "  %(prog)s --no-host --gate load,classify,latency --sched-args=--no-adaptive")
    p.add_argument("--gate", metavar="LAYER[,LAYER]",
                   help=f"run only these gate layers ({', '.join(known_layers())}); "
                        "default: full_gate")
    p.add_argument("--cpus", default="2,4", metavar="N[,N]",
                   help="vCPU counts to run the gate at (default: 2,4)")
    p.add_argument("--kernel", default="default", metavar="SPEC", help="VM kernel (see vm --help)")
    p.add_argument("--accel", default="tcg-single",
                   help="VM accelerator (default: tcg-single, the one that never oopsed)")
    p.add_argument("--topology", metavar="nodes=N,threads=T",
                   help="boot each gate VM with N NUMA nodes of cores with T SMT siblings "
                        "(every --cpus count must split into them; default: flat)")
    p.add_argument("--no-host", action="store_true", help="skip the host tests")
    p.add_argument("--no-gate", action="store_true", help="skip the VM gate")
    p.add_argument("--sched-args", default="", metavar="ARGS",
                   help="extra scx_pandemonium arguments for every gate layer, space-separated; "
                        "write it with '=' since it starts with a dash "
                        "(e.g. --sched-args=--no-adaptive)")
    p.set_defaults(func=cmd_test)


def cmd_test(args: argparse.Namespace) -> int:
    import time

    from . import build
    from . import gate_runner

    started = time.monotonic()
    try:
        cpus_list = [int(c) for c in args.cpus.split(",") if c.strip()]
    except ValueError:
        die(f"test: --cpus {args.cpus!r}: expected numbers like 2,4", 2)
    layers = gate_runner.parse_layers(args.gate)
    sched_args = gate_runner.parse_sched_args(args.sched_args)
    topology = gate_topology(args.topology, cpus_list)
    build.ensure_packages(vm=not args.no_gate,
                          extra=None if args.no_gate else gate_runner.GUEST_TOOLS)
    build.build_release()
    if not args.no_host:
        build.cargo("test", "--release", "--locked")
        # The plot tests import matplotlib, which a fresh machine gets only when a benchmark
        # first runs: installed here as the benchmarks install it, they run instead of skipping.
        from .bench.plots import ensure_matplotlib

        ensure_matplotlib()
        log.info("$ python3 -m pytest -q tests")
        if subprocess.call([sys.executable, "-m", "pytest", "-q", "tests"],
                           cwd=PROJECT_ROOT) != 0:
            die("python tests failed")
    if args.no_gate:
        return 0
    gate = build.test_executable("gate")
    runs = gate_runner.run_gate(gate, layers, cpus_list, args.kernel, args.accel, sched_args,
                                topology)
    passed, failed, skipped = gate_runner.summarize(runs)
    log.info("test: finished in %.0f s", time.monotonic() - started)
    print(f"gate: {passed} passed, {failed} failed, {skipped} skipped", flush=True)
    return 0 if failed == 0 and passed > 0 else 1


def gate_topology(spec: str | None, cpus_list: list[int]):
    """test --topology as a vm.qemu.Topology checked against every --cpus count (None: flat)."""
    from .vm.runner import checked_topology

    try:
        return checked_topology(spec, cpus_list)
    except PandemoniumError as exc:
        die(f"test: {exc}", 2)


COMMANDS = [add_build_parser, add_run_parser, add_test_parser, add_vm_parser, *install.PARSERS,
            add_bench_parsers, add_bench_stress_parser, add_bench_soak_parser]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pandemonium.py", description="Build, run and test the scx_pandemonium scheduler.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    # Every subcommand's help keeps its description's line breaks (file tables, examples).
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=functools.partial(
                                    argparse.ArgumentParser,
                                    formatter_class=argparse.RawDescriptionHelpFormatter))
    for add in COMMANDS:
        add(sub)
    return parser


# tests/bench-power.py and tests/bench-fork-thread.py (issue #7 names both scripts) are links to
# this file: run by one of these names, it is that subcommand.
LINKED_COMMANDS = ("bench-power", "bench-fork-thread")


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
        if Path(sys.argv[0]).stem in LINKED_COMMANDS:
            argv = [Path(sys.argv[0]).stem, *argv]
    passthrough = None
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1:]
    args = build_parser().parse_args(argv)
    args.passthrough = passthrough
    setup_logging(args.verbose)
    try:
        return args.func(args)
    except PandemoniumError as exc:
        die(str(exc))
    except KeyboardInterrupt:
        die("interrupted", 130)
