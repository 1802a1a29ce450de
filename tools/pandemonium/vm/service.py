"""The `service` gate layer: scx_pandemonium under a real systemd, in the VM.

The guest boots the cached Debian image (rootfs.py) from an NVMe disk with systemd as PID 1. The
initramfs holds busybox and the run's files (the scheduler, the checkout's Python tools and unit
templates, the checks, scx_loader); its /init (SERVICE_INIT) mounts the disk, copies them to
/opt/pandemonium, installs the layer's units and scx_loader's files, and switches root to systemd.
pandemonium-gate.service then runs service_guest.py: `./pandemonium.py install`, then the checks,
each reported on the console.

scx_loader is the published crate (bench/anchors.py's LOADER, `cargo install`ed on the host when
missing, as the benchmarks' anchors are); Debian does not package it. The files its crate leaves
out (systemd unit, D-Bus policy and activation file, polkit action) are upstream's, kept in
service_units/scx_loader/ (LOADER_FILES says where each goes).

Two boots share one sparse copy of the image: `main`, then `reboot` (the same disk booted again,
for the procdb across a reboot and the unit started at boot). The host requires every check the
phase names (service_guest.PHASE_CHECKS) to have passed; one that never ran is a failure.
"""

from __future__ import annotations

import json
import re
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..common import PROJECT_ROOT, log, scheduler_binary

from ..bench import anchors
from . import accel as accel_mod
from . import initramfs, qemu, rootfs
from .console import EXIT_MARKER, RESULTS_BEGIN, RESULTS_END, ConsoleState, extract_results
from .kernel import ensure_kernel
from .service_guest import CHECK_MARKER, PHASE_CHECKS, PHASES

HERE = Path(__file__).resolve().parent
GUEST_SCRIPT = HERE / "service_guest.py"
UNITS_DIR = HERE / "service_units"
LOADER_DIR = UNITS_DIR / "scx_loader"
# Where a package of scx_loader puts each file (its Cargo.toml's install-files, with $datadir
# /usr/share and $libdir /usr/lib); the binary goes to /usr/bin, where the unit and the D-Bus
# activation file run it.
LOADER_FILES = {
    "scx_loader.service": "/usr/lib/systemd/system",
    "org.scx.Loader.service": "/usr/share/dbus-1/system-services",
    "org.scx.Loader.conf": "/usr/share/dbus-1/system.d",
    "org.scx.Loader.policy": "/usr/share/polkit-1/actions",
}
PAYLOAD = "/payload"  # in the initramfs; /opt/pandemonium in the root file system
RUN_CONFIG = "/etc/pandemonium/run.json"
# What `./pandemonium.py install` needs from the checkout (pandemonium.py imports every
# subcommand's module; tests/gate.rs is the gate's layer list, for `test --help`). The package,
# not all of tools/: makepkg leaves its clone and build of the checkout in tools/packaging/arch/.
CHECKOUT_DIRS = ("tools/pandemonium", "systemd", "src/build_support")
CHECKOUT_FILES = ("tools/__init__.py", "tests/gate.rs")
# Per boot: systemd's boot under TCG takes ~30-60 s, the main phase a few minutes more.
BOOT_TIMEOUT_S = 1200
STALL_S = 420
SERVICE_CMDLINE = "systemd.show_status=1 rcupdate.rcu_task_stall_timeout=20000"

_CHECK = re.compile(re.escape(CHECK_MARKER) + r" (\S+) (PASS|FAIL) (\S+) ?(.*)$")
# SERVICE_INIT's lines that put scx_loader's files where LOADER_FILES says.
LOADER_COPIES = "\n".join(f"mkdir -p /newroot{d} && cp {PAYLOAD}/units/scx_loader/{name} "
                          f"/newroot{d}/ || fail \"cannot install {name}\""
                          for name, d in LOADER_FILES.items())


SERVICE_INIT = f"""#!/bin/sh
# The service layer's /init: mount the Debian disk, put this run's files on it, switch to systemd.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() {{
    echo "SERVICE-BOOT-ERROR: $*"
    poweroff -f
}}
i=0
while [ ! -b {rootfs.ROOT_DEVICE} ]; do
    i=$((i + 1))
    [ $i -gt 600 ] && fail "no {rootfs.ROOT_DEVICE} after 60 s"
    sleep 0.1
done
mkdir -p /newroot
mount -t ext4 -o rw {rootfs.ROOT_DEVICE} /newroot || fail "cannot mount {rootfs.ROOT_DEVICE}"
rm -rf /newroot/opt/pandemonium
mkdir -p /newroot/opt/pandemonium /newroot/boot /newroot/etc/systemd/system/multi-user.target.wants
cp -a {PAYLOAD}/. /newroot/opt/pandemonium/ || fail "cannot copy the payload"
cp {RUN_CONFIG} /newroot/opt/pandemonium/run.json || fail "no run configuration"
rm -f /newroot/boot/config-*
cp /boot/config-* /newroot/boot/ || fail "no kernel config"
cp {PAYLOAD}/units/scx.service /newroot/usr/lib/systemd/system/scx.service
cp {PAYLOAD}/units/pandemonium-gate.service /newroot/etc/systemd/system/
cp {PAYLOAD}/bin/scx_loader /newroot/usr/bin/scx_loader || fail "no scx_loader"
{LOADER_COPIES}
ln -sf /etc/systemd/system/pandemonium-gate.service \\
    /newroot/etc/systemd/system/multi-user.target.wants/pandemonium-gate.service
sync
mount --move /dev /newroot/dev
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
exec switch_root /newroot /lib/systemd/systemd
fail "switch_root failed"
"""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class PhaseResult:
    phase: str
    rc: int | None  # the guest's exit status; None: no exit marker
    checks: list[Check] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    log_path: Path | None = None

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass
class ServiceRun:
    rc: int
    kernel: str
    accel: str
    duration_s: float
    image: Path
    phases: list[PhaseResult] = field(default_factory=list)
    out_dir: Path | None = None


def parse_checks(lines: list[str], nonce: str) -> list[Check]:
    """The check lines of this run (another nonce, e.g. an echo of an old log, does not count)."""
    out = []
    for line in lines:
        m = _CHECK.search(line)
        if m and m.group(1) == nonce:
            out.append(Check(m.group(3), m.group(2) == "PASS", m.group(4).strip()))
    return out


def evaluate(phase: str, checks: list[Check], rc: int | None) -> list[str]:
    """What is wrong with a phase: a failed check, one that never reported, a non-zero or missing
    exit status. [] means it passed."""
    problems = []
    seen = {c.name: c for c in checks}
    for name in PHASE_CHECKS[phase]:
        c = seen.get(name)
        if c is None:
            problems.append(f"{phase}: {name}: did not run")
        elif not c.ok:
            problems.append(f"{phase}: {name}: FAILED: {c.detail}")
    unknown = sorted(set(seen) - set(PHASE_CHECKS[phase]))
    problems += [f"{phase}: unexpected check {n}" for n in unknown]
    if rc is None:
        problems.append(f"{phase}: the guest reported no exit status")
    elif rc != 0 and not any("FAILED" in p for p in problems):
        problems.append(f"{phase}: the guest exited {rc}")
    return problems


def run_config(phase: str, nonce: str) -> dict:
    return {"phase": phase, "nonce": nonce,
            "markers": {"exit": EXIT_MARKER, "begin": RESULTS_BEGIN, "end": RESULTS_END}}


def payload_files(binary: Path, loader: Path | None = None,
                  root: Path = PROJECT_ROOT) -> list[initramfs.GuestFile]:
    """The run's files under PAYLOAD: the scheduler, scx_loader, the checks, the units, and the
    checkout's Python tools for `./pandemonium.py install` (no __pycache__: the image would change
    with every host test run)."""
    g = initramfs.GuestFile
    files = [g(binary, f"{PAYLOAD}/bin/scx_pandemonium"),
             g(GUEST_SCRIPT, f"{PAYLOAD}/service_guest.py"),
             g(HERE / "bpf_map.py", f"{PAYLOAD}/bpf_map.py")]
    if loader is not None:
        files.append(g(loader, f"{PAYLOAD}/bin/scx_loader"))
    tools = binary.parent / "pandemonium-tools"
    if tools.is_file():  # install takes it from beside the scheduler, as from a build
        files.append(g(tools, f"{PAYLOAD}/bin/pandemonium-tools"))
    files += [g(p, f"{PAYLOAD}/units/{p.relative_to(UNITS_DIR)}")
              for p in sorted(UNITS_DIR.rglob("*")) if p.is_file()]
    files += [g(p, f"{PAYLOAD}/src/{p.name}") for p in sorted(root.glob("*.py"))]
    files += [g(root / f, f"{PAYLOAD}/src/{f}") for f in CHECKOUT_FILES]
    for d in CHECKOUT_DIRS:
        for p in sorted((root / d).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
                files.append(g(p, f"{PAYLOAD}/src/{p.relative_to(root)}"))
    return files


def disk_args(disk: Path) -> list[str]:
    # cache=unsafe: the guest's flushes are not forwarded to the host disk (the file is only read
    # back by the next boot of the same run); the data itself is written all the same.
    return ["-drive", f"file={disk},format=raw,if=none,id=root,cache=unsafe",
            "-device", "nvme,serial=pandroot,drive=root"]


def _boot_phase(phase: str, base: Path, disk: Path, tmp: Path, kinfo, mode: str, cpus: int,
                mem_mb: int, run_dir: Path, echo: bool) -> PhaseResult:
    nonce = secrets.token_hex(6)
    console = ConsoleState(nonce)
    lines: list[str] = []

    def on_line(line: str) -> bool:
        lines.append(line)
        return True

    overlay = initramfs.overlay(RUN_CONFIG, json.dumps(run_config(phase, nonce)).encode())
    initrd = initramfs.assemble(base, overlay, tmp / f"initrd-{phase}.img")
    qcmd = qemu.qemu_command(kinfo.vmlinuz_path, initrd, cpus=cpus, mem_mb=mem_mb, accel=mode,
                             extra_cmdline=SERVICE_CMDLINE, extra_args=disk_args(disk))
    log_path = run_dir / f"vm-console-{phase}.log"
    log.info("service %s: booting %s with systemd (%s, %d vCPU)", phase, disk.name, mode, cpus)
    started = time.monotonic()
    boot = qemu.boot(qcmd, console, timeout_s=BOOT_TIMEOUT_S, log_path=log_path, echo=echo,
                     on_line=on_line, stall_s=STALL_S)
    result = PhaseResult(phase, console.exit_code, parse_checks(lines, nonce),
                         duration_s=time.monotonic() - started, log_path=log_path)
    result.problems = evaluate(phase, result.checks, console.exit_code)
    if boot.timed_out:
        result.problems.append(f"{phase}: timed out after {BOOT_TIMEOUT_S} s")
    elif boot.stop_reason:
        result.problems.append(f"{phase}: {boot.stop_reason}")
    result.problems += [f"{phase}: kernel oops: {ln}" for ln in console.oops_lines[:3]]
    result.problems += [f"{phase}: {ln}" for ln in lines if "SERVICE-BOOT-ERROR" in ln]
    try:
        tar = console.results_tar()
    except ValueError as exc:
        log.warning("service %s: could not recover /results: %s", phase, exc)
        tar = None
    if tar:
        extract_results(tar, run_dir / f"results-{phase}")
    return result


@dataclass
class Prepared:
    """What both boots need, built before either starts: the kernel, the image, the initramfs."""
    started: float
    kinfo: object
    mode: str
    image: Path
    base: Path


def prepare_service_layer(kernel: str = "default", accel: str = "tcg-single",
                          loader: anchors.BackgroundInstall | None = None) -> Prepared:
    """Everything that writes the shared caches (kernel, image, scx_loader, initramfs): done
    before the boots, so they can run beside another VM that reads those caches. `loader`:
    scx_loader's install already started (gate_runner starts it beside the gate's VM); None
    installs it here when missing."""
    started = time.monotonic()
    kinfo = ensure_kernel(kernel)
    mode = accel_mod.resolve(accel, kinfo.vmlinuz_path)
    image = rootfs.ensure_image()
    binary = scheduler_binary()
    log.info("service: scx_loader %s from crates.io (%s), installed when missing",
             anchors.LOADER.version, anchors.LOADER.installed())
    loader_bin = loader.wait() if loader else anchors.install(anchors.LOADER)
    base = initramfs.build_base(kinfo.version, kinfo.config_path, payload_files(binary, loader_bin),
                                init=SERVICE_INIT)
    return Prepared(started, kinfo, mode, image, base)


def boot_service_layer(prep: Prepared, cpus: int = 2, mem_mb: int = 2048,
                       echo: bool = True) -> ServiceRun:
    """The layer's two boots, on what prepare_service_layer() built."""
    from .runner import _run_dir

    _, log_path = _run_dir(None, "service-" + secrets.token_hex(4))
    run_dir = log_path.parent
    run = ServiceRun(rc=1, kernel=prep.kinfo.version, accel=prep.mode, duration_s=0.0,
                     image=prep.image, out_dir=run_dir)
    with tempfile.TemporaryDirectory(prefix="pandemonium-service-") as tmp_name:
        tmp = Path(tmp_name)
        disk = rootfs.run_copy(prep.image, tmp / "root.ext4")
        for phase in PHASES:
            res = _boot_phase(phase, prep.base, disk, tmp, prep.kinfo, prep.mode, cpus, mem_mb,
                              run_dir, echo)
            run.phases.append(res)
            for c in res.checks:
                log.info("service %s: %s %s: %s", phase, "PASS" if c.ok else "FAIL", c.name,
                         c.detail)
            for p in res.problems:
                log.error("service: %s", p)
            if not res.passed:
                break
    run.rc = 0 if len(run.phases) == len(PHASES) and all(p.passed for p in run.phases) else 1
    run.duration_s = time.monotonic() - prep.started
    log.info("service layer: %s in %.0f s (image %s); logs in %s",
             "PASS" if run.rc == 0 else "FAIL", run.duration_s, prep.image.name, run_dir)
    return run
