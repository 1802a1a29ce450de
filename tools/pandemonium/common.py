"""Helpers shared by pandemonium.py and the tools under tools/pandemonium/.

Standard library only: these run on bare CI machines before anything is installed.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BINARY_NAME = "scx_pandemonium"
# The measurement tools (probe, stress), a binary of their own that the benchmarks run in the guest.
TOOLS_BINARY_NAME = "pandemonium-tools"
# Where systemd looks for unit files of the local administrator and the distribution.
SYSTEMD_UNIT_DIRS = ("/etc/systemd/system", "/usr/local/lib/systemd/system",
                     "/usr/lib/systemd/system", "/lib/systemd/system")
# What a root run of these tools reads from the caller's environment and sudo's env_reset would
# drop: BPF_CLANG picks the BPF compiler of a build done as root, CARGO_TARGET_DIR is where
# `install --no-build` finds the binary built beforehand.
SUDO_KEEP_ENV = ("BPF_CLANG", "CARGO_TARGET_DIR")

log = logging.getLogger("pandemonium")


class PandemoniumError(Exception):
    """A failure with a message meant for the user; the CLI prints it without a traceback."""


def setup_logging(verbose: bool = False) -> None:
    # Progress goes to stderr so that stdout stays the guest console / tool output.
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[pandemonium] %(levelname_short)s%(message)s"))
        handler.addFilter(_add_short_level)
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.DEBUG if verbose else logging.INFO)


def _add_short_level(record: logging.LogRecord) -> bool:
    # INFO lines are the common case: keep them unprefixed so progress reads cleanly.
    record.levelname_short = "" if record.levelno == logging.INFO else f"{record.levelname}: "
    return True


def banner(message: str) -> None:
    """A warning nobody can miss in a long console transcript (oops retries, untrusted apt)."""
    line = "!" * 72
    for text in (line, f"!!! {message}", line):
        log.warning("%s", text)


def sudo_argv(*argv: str) -> list[str]:
    """argv run as root with SUDO_KEEP_ENV kept (sudo ignores the names that are not set)."""
    return ["sudo", f"--preserve-env={','.join(SUDO_KEEP_ENV)}", *argv]


def sudo_command(*args: str) -> str:
    """The command line that re-runs `./pandemonium.py ARGS` as root, for messages and docs."""
    return shlex.join(sudo_argv("./pandemonium.py", *args))


def die(message: str, code: int = 1) -> NoReturn:
    print(f"pandemonium: error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def cache_root() -> Path:
    """The per-user cache (kernels, apt state, initramfs images), not created here:
    $PANDEMONIUM_CACHE, else $XDG_CACHE_HOME/pandemonium, else ~/.cache/pandemonium."""
    base = os.environ.get("PANDEMONIUM_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pandemonium"


def cache_dir(*parts: str) -> Path:
    """A directory below cache_root(), created if missing."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cargo_target_dir() -> Path:
    target = os.environ.get("CARGO_TARGET_DIR")
    return Path(target) if target else PROJECT_ROOT / "target"


def scheduler_binary(profile: str = "release") -> Path:
    return cargo_target_dir() / profile / BINARY_NAME


def tools_binary(profile: str = "release") -> Path:
    """pandemonium-tools, built by the same `cargo build` as the scheduler."""
    return cargo_target_dir() / profile / TOOLS_BINARY_NAME


def read_text(path: str | os.PathLike | None) -> str:
    """A file's text (undecodable bytes replaced); "" when there is none or it cannot be read."""
    try:
        return Path(path).read_text(errors="replace") if path else ""
    except OSError:
        return ""


def binary_version(binary: str | os.PathLike) -> str | None:
    """`scx_pandemonium --version` (all lines), or None if it does not run."""
    try:
        proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.strip()
    return out if proc.returncode == 0 and out else None


# -- sched_ext detection (shared by status, benchmarks and the gate tools) ----------

@dataclass(slots=True)
class SchedExtState:
    """What /sys/kernel/sched_ext reports: `state` (disabled, enabling, enabled, disabling) and the
    attached scheduler's ops name (e.g. "pandemonium"), if any. Mirrors src/preflight.rs."""

    state: str
    ops: str | None

    @property
    def attached(self) -> bool:
        return self.state != "disabled"


def sched_ext_state(sysfs_root: str | os.PathLike = "/sys") -> SchedExtState | None:
    """Reads <sysfs_root>/kernel/sched_ext/{state,root/ops}; None if the kernel has no sched_ext."""
    base = Path(sysfs_root) / "kernel" / "sched_ext"
    state = read_text(base / "state").strip()
    ops = read_text(base / "root" / "ops").strip() or None
    return SchedExtState(state, ops) if state else None
