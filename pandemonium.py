#!/usr/bin/env python3
"""scx_pandemonium developer tool: one entry point, one subcommand per job.

Subcommands are registered in COMMANDS; each gets its own parser via a
`add_<name>_parser(subparsers)` function and runs via `cmd_<name>(args)`.
Arguments after a bare `--` are kept verbatim in args.passthrough, so
subcommands that run a program (vm, later run/test) never have its options
mistaken for their own.
"""

from __future__ import annotations

import argparse
import sys

from pandemonium_common import PandemoniumError, die, setup_logging


def add_vm_parser(sub: argparse._SubParsersAction) -> None:
    from tests.vm.accel import MODES
    from tests.vm.kernel import DEFAULT_KERNEL
    from tests.vm.runner import DEFAULT_MEM_MB, DEFAULT_TIMEOUT_S

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
               "Files the command writes to /results are copied back to --out.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpus", type=int, default=2, metavar="N", help="vCPUs (default: 2)")
    p.add_argument("--mem", type=int, default=DEFAULT_MEM_MB, metavar="MB",
                   help=f"guest memory in MB (default: {DEFAULT_MEM_MB})")
    p.add_argument("--kernel", default="default", metavar="SPEC",
                   help=f"'default' ({DEFAULT_KERNEL}), 'latest' (newest 7.x cloud kernel), "
                        "a version or version prefix (7.3.4+deb13-cloud-amd64, 7.2), or a "
                        "directory with vmlinuz* and config*")
    p.add_argument("--accel", choices=MODES, default="auto",
                   help="auto: KVM if it really works here, else tcg-single (default: auto)")
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
    p.add_argument("--no-retry", action="store_true",
                   help="do not boot again when the guest kernel oopses")
    p.add_argument("--no-scheduler", action="store_true",
                   help="do not add the built scheduler binary to the guest")
    p.add_argument("--quiet", action="store_true", help="do not echo the guest console")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="command to run in the guest (via sh -c)")
    p.set_defaults(func=cmd_vm)


def cmd_vm(args: argparse.Namespace) -> int:
    from tests.vm import run_in_vm

    cmd = args.passthrough if args.passthrough is not None else args.cmd
    if not cmd:
        die("vm: no command given; usage: pandemonium.py vm [options] -- CMD ARGS...", 2)
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            die(f"vm: --env {item!r}: expected KEY=VALUE", 2)
        env[key] = value
    result = run_in_vm(cmd, cpus=args.cpus, mem_mb=args.mem, kernel=args.kernel,
                       accel=args.accel, timeout=args.timeout, add=args.add, out_dir=args.out,
                       retry_on_oops=not args.no_retry, env=env, tools=args.tool,
                       include_scheduler=not args.no_scheduler, echo=not args.quiet,
                       extra_cmdline=args.append)
    return result.rc


COMMANDS = [add_vm_parser]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pandemonium.py", description="Build, run and test the scx_pandemonium scheduler.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
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


if __name__ == "__main__":
    sys.exit(main())
