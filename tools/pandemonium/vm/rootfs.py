"""A minimal Debian root file system with systemd as PID 1, as a cached ext4 disk image.

The `service` gate layer (service.py) boots it to run scx_pandemonium under a real systemd. It is
built once with mmdebstrap from the Debian mirror the host's apt already uses, then kept as
~/.cache/pandemonium/rootfs/debian-<suite>-<key>.ext4, where <key> hashes everything that decides
its contents (suite, package list, the customizations below, FORMAT_VERSION). Each run boots a
sparse copy, so the cached image is never written to.

Building needs root (mmdebstrap's root mode, and mke2fs -d keeping the tree's owners), as the CI
has; it takes a few minutes (download + unpack of ~150 packages). Nothing in the image depends on
the scheduler build: the per-run files come in the initramfs (service.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..common import PandemoniumError, cache_dir, log

# Bump when build() changes what it produces in a way the key below does not see.
FORMAT_VERSION = "1"
# Debian 13: the release of the guest kernel (6.18.15+deb13), a systemd (257) recent enough for
# every directive our unit and scx_loader's use, and a glibc (2.41) no older than the hosts that
# build the binary (Debian 12: 2.36; Ubuntu 24.04: 2.39). PANDEMONIUM_ROOTFS_SUITE overrides it.
DEFAULT_SUITE = "trixie"
# What the guest needs beyond mmdebstrap's minbase (Essential: bash, coreutils, util-linux...):
# systemd as init with its journal and systemctl, dbus for systemd's bus API, python3 for
# `./pandemonium.py install` and the layer's checks (service_guest.py), the scheduler's shared
# libraries (libelf, zlib), procps for pgrep/ps when a check fails, polkitd because scx_loader asks
# org.freedesktop.PolicyKit1 about every Start/Switch/Stop call, root's included, and refuses the
# call when nothing owns that name, power-profiles-daemon for --autopower (with no cpufreq driver
# in the guest it offers power-saver and balanced through its placeholder driver).
PACKAGES = ("systemd", "systemd-sysv", "dbus", "python3", "libelf1t64", "zlib1g", "procps",
            "polkitd", "power-profiles-daemon")
IMAGE_MB = 1536
LABEL = "pandroot"
ROOT_DEVICE = "/dev/nvme0n1"  # the guest kernel has NVMe built in (virtio-blk is a module)
_KEEP_IMAGES = 2

# Units a test guest has no use for: a login prompt on the serial console would interleave with the
# layer's output, and the timers would fire in the middle of a run.
MASKED_UNITS = (
    "serial-getty@ttyS0.service", "getty.target", "apt-daily.timer", "apt-daily-upgrade.timer",
    "dpkg-db-backup.timer", "e2scrub_all.timer", "e2scrub_reap.service", "fstrim.timer",
    "systemd-timesyncd.service", "systemd-networkd-wait-online.service",
    # The guest kernel's modules are not in the image (its drivers are built in).
    "systemd-modules-load.service",
)
FILES = {
    "/etc/hostname": "pandemonium-svc\n",
    "/etc/hosts": "127.0.0.1 localhost pandemonium-svc\n",
    # The initramfs mounts the root read-write; pass 0: no fsck unit at boot.
    "/etc/fstab": f"{ROOT_DEVICE} / ext4 rw,errors=remount-ro 0 0\n",
    # Short stop timeouts: a hung stop would otherwise hold the poweroff for 90 s.
    "/etc/systemd/system.conf.d/50-pandemonium-test.conf":
        "[Manager]\nDefaultTimeoutStopSec=20s\nDefaultTimeoutStartSec=120s\n",
    # A persistent journal: the reboot check reads the previous boot's log (journalctl -b -1).
    "/etc/systemd/journald.conf.d/50-pandemonium-test.conf":
        "[Journal]\nStorage=persistent\nForwardToConsole=no\n",
}


@dataclass(frozen=True)
class RootfsSpec:
    suite: str = DEFAULT_SUITE
    packages: tuple[str, ...] = PACKAGES
    size_mb: int = IMAGE_MB

    def key(self) -> str:
        """The cache key: a hash of everything that decides the image's contents."""
        desc = {"format": FORMAT_VERSION, "suite": self.suite,
                "packages": sorted(set(self.packages)), "size_mb": self.size_mb,
                "masked": sorted(MASKED_UNITS), "files": FILES, "root": ROOT_DEVICE}
        return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        return f"debian-{self.suite}-{self.key()}.ext4"

    def machine_id(self) -> str:
        """A fixed machine ID (32 hex digits): with one, systemd does not treat the first boot as
        a first boot (no systemd-firstboot prompts on the console)."""
        return hashlib.sha256(b"pandemonium-rootfs-" + self.key().encode()).hexdigest()[:32]


def spec_for(suite: str) -> RootfsSpec:
    """libelf's package was renamed in Debian 13 (the 64-bit time_t transition)."""
    old = suite in ("bullseye", "bookworm")
    return RootfsSpec(suite=suite, packages=tuple(
        "libelf1" if old and p == "libelf1t64" else p for p in PACKAGES))


def spec_from_env() -> RootfsSpec:
    return spec_for(os.environ.get("PANDEMONIUM_ROOTFS_SUITE", DEFAULT_SUITE))


def mmdebstrap_command(spec: RootfsSpec, target: Path, mirror: str,
                       keyring: str | None = None) -> list[str]:
    cmd = ["mmdebstrap", "--mode=root", "--variant=minbase", "--components=main",
           f"--include={','.join(spec.packages)}",
           "--aptopt=Acquire::Languages \"none\"",
           # Documentation and translations are a third of a minimal system and never read here.
           "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*",
           "--dpkgopt=path-exclude=/usr/share/locale/*", "--dpkgopt=path-exclude=/usr/share/info/*"]
    if keyring:
        cmd.append(f"--keyring={keyring}")
    return cmd + [spec.suite, str(target), mirror]


def customize(root: Path, spec: RootfsSpec) -> None:
    """What mmdebstrap leaves to be done: masks, configuration files, a machine ID. Pure file
    operations on the tree (no chroot), so they are testable on any directory."""
    for unit in MASKED_UNITS:
        link = root / "etc/systemd/system" / unit
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to("/dev/null")
    for path, text in FILES.items():
        dest = root / path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
    (root / "etc/machine-id").write_text(spec.machine_id() + "\n")
    (root / "var/log/journal").mkdir(parents=True, exist_ok=True)
    for d in ("boot", "opt"):
        (root / d).mkdir(exist_ok=True)
    # No password for root: a console login is possible when debugging a guest by hand.
    shadow = root / "etc/shadow"
    if shadow.is_file():
        lines = shadow.read_text().splitlines()
        lines = [("root::" + ln.split(":", 2)[2]) if ln.startswith("root:") else ln for ln in lines]
        shadow.write_text("\n".join(lines) + "\n")


def _run(cmd: list[str]) -> None:
    log.info("rootfs: $ %s", " ".join(cmd))
    started = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-30:])
        raise PandemoniumError(f"`{cmd[0]}` failed (exit {proc.returncode}):\n{tail}")
    log.info("rootfs: %s took %.0f s", cmd[0], time.monotonic() - started)


def build(spec: RootfsSpec, dest: Path) -> None:
    """mmdebstrap into a temporary directory, customize, then mke2fs -d it into dest."""
    from .. import build as pbuild

    from .apt_sources import system_debian_mirror

    if os.geteuid() != 0:
        raise PandemoniumError(f"building the service layer's Debian image ({dest.name}) needs "
                               "root (mmdebstrap and mke2fs keep the tree's owners): run the test "
                               "as root once, after which the cached image is used")
    pbuild.ensure_packages(vm=True, extra=["mmdebstrap", "mke2fs"])
    mirror, keyring = system_debian_mirror()
    log.info("rootfs: building %s (Debian %s from %s; a few minutes, once)", dest.name,
             spec.suite, mirror)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=dest.parent))
    try:
        tree = work / "root"
        _run(mmdebstrap_command(spec, tree, mirror, keyring))
        customize(tree, spec)
        image = work / "image.ext4"
        _run(["mke2fs", "-q", "-t", "ext4", "-L", LABEL, "-d", str(tree), "-E", "root_owner=0:0",
              str(image), f"{spec.size_mb}M"])
        meta = {"suite": spec.suite, "packages": list(spec.packages), "mirror": mirror,
                "built": time.strftime("%Y-%m-%d %H:%M:%S"),
                "build_seconds": round(time.monotonic() - started)}
        dest.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(image, dest)  # atomic: a half-built image is never seen as cached
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("rootfs: built %s in %.0f s", dest, time.monotonic() - started)


def ensure_image(spec: RootfsSpec | None = None) -> Path:
    """The cached image for `spec`, built first when missing."""
    spec = spec or spec_from_env()
    cache = cache_dir("rootfs")
    dest = cache / spec.name
    if dest.is_file():
        os.utime(dest)  # recently used images survive the pruning
        return dest
    with open(cache / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not dest.is_file():  # another run may have built it while we waited
            build(spec, dest)
            prune(cache)
    return dest


def prune(cache: Path, keep: int = _KEEP_IMAGES) -> list[Path]:
    images = sorted(cache.glob("debian-*.ext4"), key=lambda p: p.stat().st_mtime, reverse=True)
    removed = []
    for old in images[keep:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".json").unlink(missing_ok=True)
        removed.append(old)
    return removed


def run_copy(image: Path, dest: Path) -> Path:
    """A sparse copy of the cached image for one run (both of its boots)."""
    subprocess.run(["cp", "--sparse=always", "--reflink=auto", str(image), str(dest)], check=True)
    return dest
