"""How a soak run is shaped: phase and window lengths scaled with its duration, and the
guest's time budget."""

from __future__ import annotations

from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "soak.sh"
GUEST_SCRIPT = "/usr/local/bin/soak.sh"

# The load cycles through these (soak.sh's ph_<name>), one phase after another.
PHASES = {
    "build": "make -j over generated gzip/sha256sum steps beside a fork/exec storm of `true`",
    "interactive": "duty-cycled interactive workers and a hackbench burst every 3 s",
    "gaming": "SIGTERM, restart with -m gaming; a CPU-bound Steam game (SteamGameId) beside "
              "busy loops named Xorg; SIGTERM, back to auto",
    "hotplug": "bench-stress's hotplug: the last CPU unplugged and replugged every second "
               "under hogs",
    "kill": "SIGKILL the daemon and restart it (procdb kept); hogs beside hackbench bursts",
}

DEFAULT_DURATION_S = 3600
MIN_DURATION_S = 60
MAX_DURATION_S = 4 * 3600
# A phase lasts a few minutes in the hour, less in a short run, so that every run of at least
# MIN_DURATION_S goes through every phase.
MAX_PHASE_S = 180
MIN_PHASE_S = 10
# A report a minute, but at least MIN_WINDOWS of them.
MAX_WINDOW_S = 60
MIN_WINDOWS = 6

GUEST_MEM_MB = 3072
GUEST_TOOLS = ["hackbench", "make"]
# The guest's driver prints a window line every window and a phase line every phase; a daemon
# stop and start may take STOP_S + the BPF load on top.
PROGRESS_TIMEOUT_S = 900.0


def check_duration(duration: int) -> None:
    """Raises ValueError for a duration the soak cannot be shaped for."""
    if not MIN_DURATION_S <= duration <= MAX_DURATION_S:
        raise ValueError(f"--duration must be {MIN_DURATION_S} to {MAX_DURATION_S} seconds, "
                         f"not {duration}")


def phase_seconds(duration: int) -> int:
    """Each phase once at least, at most MAX_PHASE_S each."""
    return max(MIN_PHASE_S, min(MAX_PHASE_S, duration // len(PHASES)))


def window_seconds(duration: int) -> int:
    """A minute, or shorter so that the run has at least MIN_WINDOWS windows."""
    return max(1, min(MAX_WINDOW_S, duration // MIN_WINDOWS))


def expected_windows(duration: int) -> int:
    return max(1, duration // window_seconds(duration))


def vm_timeout(duration: int) -> float:
    """Boot and first attach, the run with every restart's slack, the last window, the final
    stop, reload and stop."""
    return 300 + duration * 1.25 + 5 * 120 + 300
