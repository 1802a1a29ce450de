"""A private apt state (own sources, lists, cache) for fetching Debian kernel packages.

The system's apt configuration is read (proxies, snapshot settings) but never written:
only Dir::Etc::SourceList/SourceParts, lists, cache and status point at our own files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ..common import PandemoniumError, banner, cache_dir, log

from .apt_sources import system_debian_mirror

# Suites that carry sched_ext-capable cloud kernels: backports for 6.x/7.x built for
# trixie, sid for the newest release, experimental for release candidates.
KERNEL_SUITES = ("trixie-backports", "sid", "experimental")
# Suites used only to fetch a newer debian-archive-keyring: each Debian release is
# also signed with the previous release's key, so the chain can be walked forward.
BOOTSTRAP_SUITES = ("oldstable", "stable", "testing")
DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
LISTS_MAX_AGE_S = 24 * 3600

_SIG_ERROR = re.compile(r"NO_PUBKEY|EXPKEYSIG|is not signed|signatures couldn't be verified"
                        r"|signature .*invalid|BADSIG", re.IGNORECASE)


def signature_failed_suites(apt_output: str) -> set[str]:
    """Suites whose InRelease could not be verified, from `apt-get update` output."""
    failed = set()
    for line in apt_output.splitlines():
        if _SIG_ERROR.search(line):
            m = re.search(r"\s(\S+)\s+InRelease", line)
            if m:
                failed.add(m.group(1))
    return failed


class PrivateApt:
    def __init__(self, root: Path | None = None):
        self.root = root or cache_dir("apt")
        for sub in ("etc/sources.list.d", "etc/preferences.d", "lists/partial",
                    "cache/archives/partial"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.status = self.root / "status"
        self.status.touch()
        self.stamp = self.root / "lists" / ".pandemonium-updated"

    # -- configuration -------------------------------------------------------

    def options(self) -> list[str]:
        r = self.root
        opts = {
            "Dir::Etc::SourceList": r / "etc/sources.list",
            "Dir::Etc::SourceParts": r / "etc/sources.list.d",
            "Dir::Etc::Preferences": r / "etc/preferences",
            "Dir::Etc::PreferencesParts": r / "etc/preferences.d",
            "Dir::State::Lists": r / "lists",
            "Dir::State::status": self.status,
            "Dir::Cache": r / "cache",
            "APT::Architecture": "amd64",
            "APT::Architectures": "amd64",
            "Acquire::Languages": "none",
        }
        if os.geteuid() == 0:
            # _apt cannot enter root's home, so apt would fall back to root anyway,
            # printing a warning per download.
            opts["APT::Sandbox::User"] = "root"
        return [a for k, v in opts.items() for a in ("-o", f"{k}={v}")]

    def write_sources(self, mirror: str, suites: tuple[str, ...], keyring: Path | None,
                      trusted: bool = False) -> None:
        opt = "trusted=yes" if trusted else f"signed-by={keyring}" if keyring else ""
        # target=Packages skips DEP-11/Contents indexes the system config may enable.
        lines = [f"deb [arch=amd64 target=Packages {opt}] {mirror} {suite} main" for suite in suites]
        (self.root / "etc/sources.list").write_text("\n".join(lines) + "\n")

    def is_trusted_mode(self) -> bool:
        path = self.root / "etc/sources.list"
        return path.exists() and "trusted=yes" in path.read_text()

    # -- commands ------------------------------------------------------------

    def _run(self, args: list[str], cwd: Path | None = None, show: bool = True) -> subprocess.CompletedProcess:
        if not shutil.which(args[0]):
            raise PandemoniumError(f"`{args[0]}` not found: fetching Debian kernels needs apt "
                                   "(a Debian-like host)")
        cmd = [args[0], *self.options(), *args[1:]]
        log.debug("running %s", " ".join(cmd))
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, stdin=subprocess.DEVNULL)
        if show:
            for line in proc.stdout.splitlines():
                if line.startswith(("Get:", "Hit:", "Fetched", "E:", "W:", "Err:")):
                    log.info("  apt: %s", line)
        return proc

    def update(self) -> tuple[bool, str]:
        proc = self._run(["apt-get", "-q", "update"])
        return proc.returncode == 0 and not signature_failed_suites(proc.stdout), proc.stdout

    def lists_fresh(self, max_age_s: float = LISTS_MAX_AGE_S) -> bool:
        return self.stamp.exists() and time.time() - self.stamp.stat().st_mtime < max_age_s

    def pkgnames(self, prefix: str) -> list[str]:
        proc = self._run(["apt-cache", "pkgnames", prefix], show=False)
        return sorted(proc.stdout.split()) if proc.returncode == 0 else []

    def installed_sizes_kb(self, packages: list[str]) -> dict[str, int]:
        if not packages:
            return {}
        proc = self._run(["apt-cache", "show", "--no-all-versions", *packages], show=False)
        sizes = {}
        for stanza in proc.stdout.split("\n\n"):
            name = re.search(r"^Package:\s*(\S+)", stanza, re.MULTILINE)
            size = re.search(r"^Installed-Size:\s*(\d+)", stanza, re.MULTILINE)
            if name and size:
                sizes[name.group(1)] = int(size.group(1))
        return sizes

    def download(self, packages: list[str], dest: Path) -> list[Path]:
        if self.is_trusted_mode():
            banner(f"downloading {' '.join(packages)} WITHOUT signature verification ([trusted=yes])")
        before = set(dest.glob("*.deb"))
        proc = self._run(["apt-get", "-q", "download", *packages], cwd=dest)
        if proc.returncode != 0:
            errors = [l for l in proc.stdout.splitlines() if l.startswith("E:")] or [proc.stdout.strip()]
            raise PandemoniumError(f"apt-get download {' '.join(packages)} failed:\n"
                                   + "\n".join(errors))
        return sorted(set(dest.glob("*.deb")) - before)

    # -- setup with keyring fallback -----------------------------------------

    def ensure_lists(self, force: bool = False) -> None:
        """Make the kernel suites' package lists available and verified.

        Order of trust: the keyring the system's Debian source uses; else a newer
        debian-archive-keyring fetched through suites that keyring does verify;
        else [trusted=yes], announced loudly.
        """
        if not force and self.lists_fresh():
            return
        mirror, keyring = system_debian_mirror()
        keyring_path = Path(os.environ.get("PANDEMONIUM_APT_KEYRING") or keyring or DEFAULT_KEYRING)
        log.info("apt: using Debian mirror %s (keyring %s)", mirror, keyring_path)

        self.write_sources(mirror, KERNEL_SUITES, keyring_path)
        ok, out = self.update()
        if not ok:
            failed = signature_failed_suites(out)
            if not failed:
                hint = ("\n(an expired Release file means a stale snapshot mirror: "
                        "Acquire::Check-Valid-Until=false in apt.conf.d allows it)"
                        if "expired" in out else "")
                raise PandemoniumError(f"apt-get update failed:\n{out.strip()}{hint}")
            log.warning("apt: %s cannot be verified with %s; fetching a newer "
                        "debian-archive-keyring", ", ".join(sorted(failed)), keyring_path)
            # A keyring bootstrapped on an earlier run is tried before downloading again.
            stored = sorted(self.root.glob("keyring-*"), key=lambda p: p.stat().st_mtime)
            if stored:
                self.write_sources(mirror, KERNEL_SUITES, stored[-1])
                ok, out = self.update()
            # Walk the chain forward: each keyring fetched may verify newer suites.
            keyring_now = keyring_path
            for _ in range(3):
                if ok:
                    break
                newer = self._bootstrap_keyring(mirror, keyring_now)
                if not newer or newer.read_bytes() == keyring_now.read_bytes():
                    break
                keyring_now = newer
                self.write_sources(mirror, KERNEL_SUITES, newer)
                ok, out = self.update()
            if not ok:
                banner("apt signatures could NOT be verified with any available keyring: "
                       "falling back to [trusted=yes] for the kernel suites. The kernel "
                       "packages are NOT authenticated.")
                self.write_sources(mirror, KERNEL_SUITES, None, trusted=True)
                ok, out = self.update()
                if not ok:
                    raise PandemoniumError("apt-get update failed even with trusted=yes:\n"
                                           + out.strip())
        self.stamp.touch()

    def _bootstrap_keyring(self, mirror: str, keyring: Path) -> Path | None:
        self.write_sources(mirror, BOOTSTRAP_SUITES, keyring)
        self.update()  # partial success is fine: apt only uses the suites that verified
        work = Path(tempfile.mkdtemp(dir=self.root))
        try:
            debs = self.download(["debian-archive-keyring"], work)
            subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(work / "x")], check=True)
            for name in ("debian-archive-keyring.pgp", "debian-archive-keyring.gpg"):
                found = work / "x/usr/share/keyrings" / name
                if found.exists():
                    dest = self.root / f"keyring-{debs[0].stem}.{name.rsplit('.', 1)[1]}"
                    shutil.copy2(found.resolve(), dest)
                    log.info("apt: using keyring from %s", debs[0].name)
                    return dest
        except (PandemoniumError, subprocess.CalledProcessError, IndexError) as exc:
            log.warning("apt: keyring bootstrap failed: %s", exc)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return None
