"""Other scx_pandemonium binaries on this machine, and which one each systemd unit would start.

The published scx_pandemonium (a different project with the same binary name, packaged by
distributions as /usr/bin/scx_pandemonium) can sit beside the one `./pandemonium.py install`
puts in /usr/local/bin. Our unit names its binary by path, but scx.service and scx_loader start a
scheduler by name, so which of the two they run depends on systemd's PATH, not on what was
installed last. `install` reports both so nobody benchmarks the wrong scheduler.

Standard library only. Every lookup takes `root`, a prefix for the system's files, so the tests
can build a whole system in a temporary directory.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from .common import BINARY_NAME, SYSTEMD_UNIT_DIRS, binary_version, read_text

# The PATH systemd gives system services (systemd.exec(5)); /sbin and /bin only matter where /usr
# is not merged, and add nothing where it is.
SYSTEMD_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
SCX_DEFAULTS = "/etc/default/scx"
OUR_UNIT = "pandemonium.service"


def _at(root: str, path: str) -> Path:
    return Path(root + path) if root else Path(path)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _which(dirs: list[Path]) -> Path | None:
    found = shutil.which(BINARY_NAME, path=os.pathsep.join(str(d) for d in dirs))
    return Path(found) if found else None


def systemd_path(root: str = "") -> list[Path]:
    return [_at(root, d) for d in SYSTEMD_PATH]


def other_binaries(installed: Path, *, root: str = "",
                   path_env: str | None = None) -> list[Path]:
    """Every executable scx_pandemonium on the user's PATH or systemd's (which covers /usr/bin)
    that is not the file at `installed`, each file once, in lookup order."""
    path_env = os.environ.get("PATH", "") if path_env is None else path_env
    dirs = [Path(d) for d in path_env.split(os.pathsep) if d] + systemd_path(root)
    found: list[Path] = []
    for d in dirs:
        candidate = d / BINARY_NAME
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        if _same_file(candidate, installed) or any(_same_file(candidate, f) for f in found):
            continue
        found.append(candidate)
    return found


@dataclass
class UnitTarget:
    unit: str
    binary: Path | None    # the scx_pandemonium it starts; None if it starts none
    how: str               # why that one, for the user


def _exec_start(unit_file: Path) -> Path | None:
    """The program of a unit's (last) ExecStart=, with systemd's $$ and %% unescaped."""
    program = None
    for line in unit_file.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "ExecStart" and value.strip():
            words = shlex.split(value.strip().lstrip("-@:+!"))
            if words:
                program = Path(words[0].replace("$$", "$").replace("%%", "%"))
    return program


def _has_unit(name: str, root: str) -> bool:
    return any(_at(root, f"{d}/{name}").is_file() for d in SYSTEMD_UNIT_DIRS)


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines the way systemd's EnvironmentFile= reads them (quotes removed, comments
    and blank lines skipped); {} if the file is missing."""
    env = {}
    for line in read_text(path).splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        try:
            words = shlex.split(value, comments=False)
        except ValueError:
            words = [value]
        env[key.strip()] = " ".join(words)
    return env


def _scx_service(root: str) -> UnitTarget | None:
    if not _has_unit("scx.service", root):
        return None
    env = read_env_file(_at(root, SCX_DEFAULTS))
    # scx.service runs ${SCX_SCHEDULER_OVERRIDE:-$SCX_SCHEDULER}.
    sched = (env.get("SCX_SCHEDULER_OVERRIDE") or env.get("SCX_SCHEDULER") or "").strip()
    if not sched:
        return UnitTarget("scx.service", None, f"no SCX_SCHEDULER in {SCX_DEFAULTS}")
    if os.path.basename(sched) != BINARY_NAME:
        return UnitTarget("scx.service", None,
                          f"runs {sched} (SCX_SCHEDULER in {SCX_DEFAULTS})")
    if os.path.isabs(sched):
        return UnitTarget("scx.service", _at(root, sched), f"SCX_SCHEDULER={sched}")
    return UnitTarget("scx.service", _which(systemd_path(root)),
                      f"SCX_SCHEDULER={sched} in {SCX_DEFAULTS}: the first on systemd's PATH")


def unit_targets(our_unit: Path | None, *, root: str = "") -> list[UnitTarget]:
    """For our unit (the file install wrote, if it exists), scx.service and scx_loader.service
    (if installed): which scx_pandemonium each one starts."""
    targets = []
    if our_unit is not None and our_unit.is_file():
        program = _exec_start(our_unit)
        targets.append(UnitTarget(OUR_UNIT, _at(root, str(program)) if program else None,
                                  "its ExecStart="))
    scx = _scx_service(root)
    if scx is not None:
        targets.append(scx)
    if _has_unit("scx_loader.service", root):
        targets.append(UnitTarget("scx_loader.service", _which(systemd_path(root)),
                                  "when asked for scx_pandemonium: the first on systemd's PATH"))
    return targets


def report(installed: Path, our_unit: Path | None, *, root: str = "",
           path_env: str | None = None) -> tuple[list[str], list[str]]:
    """(warnings, info lines) about other scx_pandemonium binaries and the units' choice."""
    warnings, info = [], []
    others = other_binaries(installed, root=root, path_env=path_env)
    for other in others:
        version = binary_version(other)
        shown = version.splitlines()[0] if version else "its --version did not run"
        warnings.append(f"another scx_pandemonium is on this system: {other} [{shown}], "
                        f"{whose(version)}; it is not the file installed now ({installed})")
    targets = unit_targets(our_unit, root=root)
    if targets:
        info.append("which scx_pandemonium each unit starts:")
    width = max((len(t.unit) for t in targets), default=0)
    for t in targets:
        what = str(t.binary) if t.binary else "none"
        info.append(f"  {t.unit:{width}}  {what}  ({t.how})")
        if t.unit != OUR_UNIT and t.binary is not None and not _same_file(t.binary, installed):
            warnings.append(f"{t.unit} would start {t.binary}, not the scx_pandemonium installed "
                            f"now ({installed}): {_advice(t.unit, installed)}")
    return warnings, info


def whose(version: str | None) -> str:
    """Which project a scx_pandemonium binary comes from, judged by its --version: this one's
    names the BPF compiler on a line of its own."""
    if version is None:
        return "origin unknown"
    if any(line.startswith("BPF: ") for line in version.splitlines()):
        return "another build of this project"
    return "probably the published scx_pandemonium, a different scheduler with the same name"


def _advice(unit: str, installed: Path) -> str:
    if unit == "scx.service":
        return f"set SCX_SCHEDULER={installed} in {SCX_DEFAULTS}"
    return ("scx_loader starts schedulers by name only: remove the other binary (e.g. its "
            f"package), or use {OUR_UNIT} instead")
