"""Runs the integration gate (tests/gate.rs) inside the VM, once per vCPU count, and summarizes.

The gate binary is an ordinary libtest executable; it runs as root in the guest with --ignored.
Layers the binary does not contain yet are reported as skipped, never as passed.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .common import PROJECT_ROOT, PandemoniumError, log, read_text

# The gate's layers are its #[test] functions: this file is the one list of them.
GATE_SOURCE = PROJECT_ROOT / "tests" / "gate.rs"
_TEST_FN = re.compile(r"^#\[test\]\n(?:#\[[^\n]*\]\n)*fn (\w+)\(", re.M)
GUEST_GATE = "/usr/local/bin/gate"
# The coop layer's workload (COOPBENCH in tests/gate_support/coop.rs), built as the bench builds it.
GUEST_COOPBENCH = "/usr/local/bin/coopbench"
# Layers the host runs in a VM boot of their own instead of as a #[test] of the gate binary:
# `service` boots a Debian image with systemd as PID 1 (tools/pandemonium/vm/service.py). full_gate
# includes them.
HOST_LAYERS = ("service",)
# The interactive layer runs the field's standard tools in the guest (src/build_support/
# system_packages.tsv names their packages).
GUEST_TOOLS = ["cyclictest", "hackbench"]
# full_gate runs ~10 min of guest time at 2 vCPUs under TCG (trust and admin ~2 min each); a
# loaded host stretches that.
GATE_TIMEOUT_S = 1800
# The status layer's sysfs captures under the guest's /results (STATUS_DIR in tests/gate.rs).
STATUS_DIR = "sched_ext_status"
# What `./pandemonium.py status` must say about each capture.
STATUS_EXPECT = {"running": ("enabled", True, "attached (that is scx_pandemonium)"),
                 "stopped": ("disabled", False, "idle: no sched_ext scheduler attached")}
# RCU Tasks stall reports (with the holdout tasks) after 20 s instead of 10 min: a detach that
# hangs in a trampoline or struct_ops free then says which task holds the grace period.
GATE_CMDLINE = "rcupdate.rcu_task_stall_timeout=20000 log_buf_len=8M"


@dataclass
class GateRun:
    cpus: int
    kernel: str
    layers: list[str]
    rc: int
    accel: str
    duration_s: float
    skipped: list[str] = field(default_factory=list)
    # A failed run's last passed full_gate layer and its panic, for the summary: the CI keeps
    # only the tail of the output, where the summary is.
    failure: list[str] = field(default_factory=list)
    # full_gate's steps and their seconds, from its "passed in" lines.
    layer_times: list[tuple[str, float]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.rc == 0


def listed_tests(gate: Path) -> set[str]:
    out = subprocess.run([str(gate), "--list", "--ignored"], capture_output=True, text=True)
    if out.returncode != 0:
        raise PandemoniumError(f"{gate} --list failed: {out.stderr.strip()}")
    return {m.group(1) for m in re.finditer(r"^(\w+): test$", out.stdout, re.M)}


def skipped_in_log(log_path: Path) -> list[str]:
    """Layers full_gate reported as not run ("GATE-SKIP <layer>: why")."""
    return re.findall(r"GATE-SKIP (\w+):", read_text(log_path))


# Rust 1.89+ puts the thread id after the name: "thread 'full_gate' (155) panicked at ...".
_PANIC = re.compile(r"^thread '[^']*'(?: \(\d+\))? panicked at ")
_FULL_GATE_PASSED = re.compile(r"^gate full_gate: (\w+) passed", re.M)
_FULL_GATE_TIME = re.compile(r"^gate full_gate: (\w+) passed in ([0-9.]+) s", re.M)
PANIC_LINES = 4
# How many of the slowest full_gate steps the summary names.
SLOWEST_SHOWN = 8


def layer_times_in_log(log_path: Path) -> list[tuple[str, float]]:
    """full_gate's steps that passed, with their seconds, in the order they ran."""
    return [(m.group(1), float(m.group(2))) for m in _FULL_GATE_TIME.finditer(read_text(log_path))]


def slowest_line(times: list[tuple[str, float]], shown: int = SLOWEST_SHOWN) -> str:
    """"slowest: trust 140 s, admin 120 s, ... (of 900 s in 24 steps)": where a CI budget is
    trimmed from."""
    top = sorted(times, key=lambda t: -t[1])[:shown]
    total = sum(t for _, t in times)
    return ("slowest: " + ", ".join(f"{n} {t:.0f} s" for n, t in top)
            + f" (of {total:.0f} s in {len(times)} steps)")


def failure_in_log(log_path: Path) -> list[str]:
    """Where a failed gate run stopped: the last layer full_gate passed, and the first panic with
    the lines of its message."""
    text = read_text(log_path)
    out = []
    passed = _FULL_GATE_PASSED.findall(text)
    if passed:
        out.append(f"full_gate passed up to {passed[-1]}")
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _PANIC.match(ln)), None)
    if start is not None:
        for ln in lines[start:start + PANIC_LINES]:
            if ln.startswith(("note: run with", "---- ")):
                break
            if ln.strip():
                out.append(ln.strip()[:300])
    return out


def known_layers(source: Path = GATE_SOURCE) -> list[str]:
    """The names `--gate` takes: the #[test] functions of tests/gate.rs, sorted, full_gate (every
    layer in one boot) last."""
    names = sorted(set(_TEST_FN.findall(source.read_text())) | set(HOST_LAYERS))
    return [n for n in names if n != "full_gate"] + (["full_gate"] if "full_gate" in names else [])


def host_layers(layers: list[str]) -> list[str]:
    """The host-run layers that `layers` asks for: named, or included by full_gate."""
    return [h for h in HOST_LAYERS if h in layers or "full_gate" in layers]


def parse_layers(spec: str | None) -> list[str]:
    if not spec:
        return ["full_gate"]
    layers = [s.strip() for s in spec.split(",") if s.strip()]
    known = known_layers()
    unknown = [layer for layer in layers if layer not in known]
    if unknown:
        raise PandemoniumError(f"unknown gate layer(s): {', '.join(unknown)}; "
                               f"known: {', '.join(known)}")
    return layers


def parse_sched_args(spec: str | None) -> str:
    """Scheduler arguments for every layer (PANDEMONIUM_GATE_ARGS in the guest, split on spaces
    there). They must start with an option: a leading plain word would be taken for a
    subcommand, and every layer would fail for a reason that has nothing to do with the gate."""
    words = (spec or "").split()
    if words and not words[0].startswith("-"):
        raise PandemoniumError(f"--sched-args {spec!r}: {words[0]!r} is not an option; "
                               "write e.g. --sched-args=--no-adaptive")
    return " ".join(words)


def check_status_captures(results: Path | None) -> list[str]:
    """Reads the status layer's captured /sys/kernel/sched_ext trees with the status command's
    own code and returns what it got wrong ([] when it reports both moments correctly)."""
    from . import install as inst

    problems = []
    for name, (state, ours, text) in STATUS_EXPECT.items():
        root = Path(results or "/nonexistent") / STATUS_DIR / name
        if not (root / "kernel" / "sched_ext" / "state").is_file():
            problems.append(f"status: no captured sched_ext tree for '{name}' in {root}")
            continue
        st = inst.collect_status(sysfs_root=root, build_binary=root / "no-binary",
                                 systemd_run_dir=str(root / "no-systemd"))
        said = inst.describe_sched_ext(st)
        log.info("gate status: while %s, status says: %s", name, said)
        if (st.sched_ext, st.ours_attached) != (state, ours) or text not in said:
            problems.append(f"status while {name}: {said!r}; expected state {state}, "
                            f"ours_attached {ours}, {text!r}")
    return problems


def guest_files(gate: Path, layers: list[str]) -> list[tuple[str, str]]:
    """What the gate's guest gets beside the gate binary: coopbench only for the layers that run
    it (compiling it needs gcc with libgomp)."""
    add = [(str(gate), GUEST_GATE)]
    if "coop" in layers:
        from .bench.driver import coopbench_binary
        add.append((str(coopbench_binary()), GUEST_COOPBENCH))
    return add


def run_gate(gate: Path, layers: list[str], cpus_list: list[int], kernel: str, accel: str,
             extra_args: str = "", topology=None) -> list[GateRun]:
    """topology: the guests' NUMA nodes and SMT siblings (vm.qemu.Topology) at every count.

    full_gate at several vCPU counts: the first count's boot runs the steps whose outcome
    depends on the CPU count (the timed ones, on an otherwise quiet host), each later count's
    boot runs them again, and the first count's other steps run in a boot of their own beside
    the last count's VM, after the service layer there: a tcg-single guest keeps one host core
    busy, so on a 2-core CI machine the other core did nothing for the minutes those steps
    took."""
    available = listed_tests(gate)
    hosted = host_layers(layers)
    layers = [layer for layer in layers if layer not in HOST_LAYERS]
    todo = [layer for layer in layers if layer not in available]
    runnable = [layer for layer in layers if layer in available]
    for layer in todo:
        log.warning("gate layer %s: SKIPPED (not implemented yet)", layer)
    split = "full_gate" in runnable and len(cpus_list) > 1
    runs = []
    loader = start_loader_install() if hosted else None
    beside = None
    for i, cpus in enumerate(cpus_list):
        if not runnable:
            if todo or not hosted:
                runs.append(GateRun(cpus, kernel, [], 0, "-", 0.0, todo))
            continue
        if i > 0 and i == len(cpus_list) - 1 and (hosted or split):
            beside = start_beside(cpus_list[0], kernel, accel, extra_args, loader, hosted,
                                  (gate, runnable, topology) if split else None)
        runs.append(gate_boot(gate, runnable, cpus, kernel, accel, extra_args, topology,
                              steps="sized" if split else None, todo=todo))
    if beside:
        runs.extend(beside())
    elif hosted:
        runs.append(run_service(cpus_list[0], kernel, accel, extra_args, loader))
    return runs


# What a full_gate boot says it runs, by PANDEMONIUM_GATE_STEPS (tests/gate.rs).
_STEPS_SAID = {"sized": " (the steps that depend on the CPU count)",
               "unsized": " (the steps that do not depend on the CPU count)"}


def gate_boot(gate: Path, runnable: list[str], cpus: int, kernel: str, accel: str,
              extra_args: str, topology, steps: str | None = None, todo: list[str] = (),
              echo: bool = True) -> GateRun:
    """One VM boot of the gate binary with `runnable`; steps: full_gate's "sized" or "unsized"
    steps only (None: all)."""
    from .vm import run_in_vm

    env = {"PANDEMONIUM_GATE_ARGS": extra_args} if extra_args else {}
    if steps:
        env["PANDEMONIUM_GATE_STEPS"] = steps
    log.info("gate: %s at %d vCPUs on kernel %s%s", ",".join(runnable), cpus, kernel,
             _STEPS_SAID.get(steps, ""))
    cmd = [GUEST_GATE, "--ignored", "--test-threads=1", "--exact", "--nocapture", *runnable]
    res = run_in_vm(cmd, cpus=cpus, kernel=kernel, accel=accel,
                    add=guest_files(gate, runnable), env=env or None,
                    extra_cmdline=GATE_CMDLINE, timeout=GATE_TIMEOUT_S, tools=GUEST_TOOLS,
                    topology=topology, echo=echo)
    rc = res.rc
    # The status layer's captures exist where it ran: not in a boot of the sized steps.
    if rc == 0 and ("status" in runnable or ("full_gate" in runnable and steps != "sized")):
        problems = check_status_captures(res.out_dir)
        for p in problems:
            log.error("gate: %s", p)
        rc = 1 if problems else rc
    failure = [] if rc == 0 else failure_in_log(Path(res.log_path))
    if rc != 0 and not echo:
        # Its console did not scroll by: say where it is.
        failure.append(f"log: {res.log_path}")
    return GateRun(cpus, res.kernel_version, runnable, rc, res.accel_used, res.duration_s,
                   list(todo) + skipped_in_log(Path(res.log_path)), failure,
                   layer_times_in_log(Path(res.log_path)))


def start_beside(cpus: int, kernel: str, accel: str, extra_args: str, loader, hosted: list[str],
                 unsized) -> Callable[[], list[GateRun]]:
    """Beside the last count's gate VM, in one thread: the service layer (if asked for), then
    full_gate's unsized steps at `cpus` (unsized: (gate, runnable, topology), or None). Returns
    the call that waits for them. What writes the shared caches (the service image, its
    initramfs, scx_loader) is prepared here first, before the gate's VM starts; the first count's
    boot already built the gate's initramfs base, which the unsized boot only reads."""
    from concurrent.futures import ThreadPoolExecutor

    from .vm.service import boot_service_layer, prepare_service_layer

    prep = None
    if hosted:
        _service_banner(cpus, kernel, extra_args, beside=True)
        prep = prepare_service_layer(kernel=kernel, accel=accel, loader=loader)

    def both() -> list[GateRun]:
        runs = []
        if prep is not None:
            try:
                runs.append(_service_gate_run(cpus, boot_service_layer(prep, cpus, echo=False)))
            except PandemoniumError as exc:
                # The unsized steps still run: a broken service image says nothing of them.
                runs.append(GateRun(cpus, kernel, ["service"], 1, accel, 0.0, failure=[str(exc)]))
        if unsized:
            gate, runnable, topology = unsized
            runs.append(gate_boot(gate, runnable, cpus, kernel, accel, extra_args, topology,
                                  steps="unsized", echo=False))
        return runs

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-beside")
    future = pool.submit(both)
    pool.shutdown(wait=False)
    return future.result


def start_loader_install():
    """scx_loader's `cargo install` (minutes, on a fresh machine) for the service layer, started
    in the background at idle priority while the gate's VM runs: a tcg-single guest keeps one
    host core busy, and the build takes only what the guest leaves."""
    from .bench import anchors

    return anchors.BackgroundInstall.start(anchors.LOADER)


def _service_banner(cpus: int, kernel: str, extra_args: str, beside: bool) -> None:
    if extra_args:
        log.warning("gate service: runs the installed unit's configuration; --sched-args %r "
                    "are not applied to it", extra_args)
    log.info("gate: service at %d vCPUs on kernel %s (systemd as PID 1)%s", cpus, kernel,
             ", beside the gate's last VM" if beside else "")


def _service_gate_run(cpus: int, res) -> GateRun:
    # Its problems go to the summary: beside another gate its own lines scroll out of the tail
    # the CI keeps.
    problems = [p[:300] for phase in res.phases for p in phase.problems]
    if res.rc != 0 and res.out_dir is not None:
        problems.append(f"logs in {res.out_dir}")
    return GateRun(cpus, res.kernel, ["service"], res.rc, res.accel, res.duration_s,
                   failure=problems)


def run_service(cpus: int, kernel: str, accel: str, extra_args: str = "",
                loader=None) -> GateRun:
    """The service layer, once (at the first vCPU count): it checks the systemd integration, which
    does not change with the CPU count. It runs the unit as installed, so --sched-args do not
    apply to it."""
    from .vm.service import boot_service_layer, prepare_service_layer

    _service_banner(cpus, kernel, extra_args, beside=False)
    prep = prepare_service_layer(kernel=kernel, accel=accel, loader=loader)
    return _service_gate_run(cpus, boot_service_layer(prep, cpus))


def summarize(runs: list[GateRun]) -> tuple[int, int, int]:
    passed = sum(1 for r in runs if r.layers and r.passed)
    failed = sum(1 for r in runs if r.layers and not r.passed)
    skipped = sum(len(r.skipped) for r in runs)
    log.info("gate summary:")
    for r in runs:
        verdict = "PASS" if r.passed else f"FAIL (exit {r.rc})"
        log.info("  %d vCPU  %-28s %-30s %-6s %5.1f s  %s", r.cpus, r.kernel,
                 ",".join(r.layers) or "-", r.accel, r.duration_s, verdict)
        if r.skipped:
            log.info("           skipped (not implemented yet): %s", ", ".join(r.skipped))
        if r.layer_times:
            log.info("           %s", slowest_line(r.layer_times))
        for line in r.failure:
            log.info("           %s", line)
    return passed, failed, skipped
