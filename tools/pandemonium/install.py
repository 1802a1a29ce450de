"""Packaging subcommands of pandemonium.py: install, uninstall, status, clean, rebuild.

Standard library only. The file operations take explicit paths (prefix, DESTDIR, sysfs root, project
root, target dir) so the tests can run them against temporary trees without root.

Installed files (PREFIX defaults to /usr/local, SYSCONFDIR to /etc):
    PREFIX/bin/scx_pandemonium                     0755
    PREFIX/bin/pandemonium-tools                   0755  (the probe and stress tools)
    PREFIX/lib/systemd/system/pandemonium.service  0644  (ExecStart= follows PREFIX)
    SYSCONFDIR/default/pandemonium                 0644  (never overwritten once it exists)
all below DESTDIR when one is given (packagers: no root needed, systemd left alone).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import attached, coexist
from .common import (
    BINARY_NAME,
    PROJECT_ROOT,
    SYSTEMD_UNIT_DIRS,
    TOOLS_BINARY_NAME,
    PandemoniumError,
    binary_version,
    cache_root,
    cargo_target_dir,
    log,
    sched_ext_state,
    scheduler_binary,
    sudo_command,
    tools_binary,
)

UNIT_NAME = "pandemonium.service"
SERVICE = "pandemonium"
DEFAULT_PREFIX = "/usr/local"
DEFAULT_SYSCONFDIR = "/etc"
SYSTEMD_DIR = PROJECT_ROOT / "systemd"
UNIT_TEMPLATE = SYSTEMD_DIR / UNIT_NAME
DEFAULT_TEMPLATE = SYSTEMD_DIR / "pandemonium.default"
# The literal paths in the templates that install rewrites.
TEMPLATE_BINARY = "/usr/local/bin/scx_pandemonium"
TEMPLATE_ENV_FILE = "/etc/default/pandemonium"
SYSTEMD_RUNNING_DIR = "/run/systemd/system"


# -- paths --------------------------------------------------------------------------

@dataclass
class Layout:
    """Where the files go. `prefix`, `sysconfdir` and `unitdir` are paths on the target system (they
    end up inside the unit file); `destdir` is the staging root they are written below."""

    prefix: str = DEFAULT_PREFIX
    destdir: str = ""
    sysconfdir: str = DEFAULT_SYSCONFDIR
    unitdir: str | None = None

    def __post_init__(self) -> None:
        for name in ("prefix", "sysconfdir", "unitdir"):
            value = getattr(self, name)
            if value is None:
                continue
            if not os.path.isabs(value):
                raise PandemoniumError(f"--{name} {value!r}: must be an absolute path")
            setattr(self, name, os.path.normpath(value))
        if self.destdir:
            self.destdir = os.path.abspath(self.destdir)
            if self.destdir == "/":
                self.destdir = ""

    @property
    def binary(self) -> str:
        return os.path.join(self.prefix, "bin", BINARY_NAME)

    @property
    def tools(self) -> str:
        return os.path.join(self.prefix, "bin", TOOLS_BINARY_NAME)

    @property
    def unit(self) -> str:
        return os.path.join(self.unitdir or os.path.join(self.prefix, "lib/systemd/system"),
                            UNIT_NAME)

    @property
    def env_file(self) -> str:
        return os.path.join(self.sysconfdir, "default", SERVICE)

    def staged(self, path: str) -> Path:
        """`path` below DESTDIR (or itself without one)."""
        return Path(self.destdir + path) if self.destdir else Path(path)

    @property
    def live(self) -> bool:
        """Installing into the running system (no DESTDIR): needs root, may talk to systemd."""
        return not self.destdir


def _systemd_quote(path: str) -> str:
    """A path as one word of a unit-file command line: % and $ doubled (specifiers, variable
    expansion), quoted if it has blanks or quotes."""
    path = path.replace("%", "%%").replace("$", "$$")
    if any(c in path for c in " \t\"'\\"):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return path


def render_unit(layout: Layout, template: str | None = None) -> str:
    text = UNIT_TEMPLATE.read_text() if template is None else template
    exec_old = f"ExecStart={TEMPLATE_BINARY} "
    env_old = f"EnvironmentFile=-{TEMPLATE_ENV_FILE}\n"
    if text.count(exec_old) != 1 or text.count(env_old) != 1:
        raise PandemoniumError(f"{UNIT_TEMPLATE}: expected exactly one '{exec_old.strip()} ...' "
                               f"and one '{env_old.strip()}' line to rewrite")
    text = text.replace(exec_old, f"ExecStart={_systemd_quote(layout.binary)} ")
    text = text.replace(env_old, f"EnvironmentFile=-{layout.env_file.replace('%', '%%')}\n")
    return text.replace(TEMPLATE_ENV_FILE, layout.env_file)


def render_default(layout: Layout, template: str | None = None) -> str:
    text = DEFAULT_TEMPLATE.read_text() if template is None else template
    return text.replace(TEMPLATE_ENV_FILE, layout.env_file)


# -- small helpers ------------------------------------------------------------------

def _euid() -> int:
    return os.geteuid()


def systemd_running(run_dir: str = SYSTEMD_RUNNING_DIR) -> bool:
    """sd_booted(): systemd is PID 1 exactly when /run/systemd/system exists."""
    return shutil.which("systemctl") is not None and os.path.isdir(run_dir)


def _systemctl(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    cmd = ["systemctl", *args]
    log.info("$ %s", " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise PandemoniumError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip()}")
    return proc


def _write_file(path: Path, data: bytes, mode: int) -> str:
    """Writes atomically (temp file + rename, so a running binary is never modified in place);
    returns 'installed', 'updated' or 'unchanged'."""
    existed = path.exists()
    if existed and path.read_bytes() == data:
        if (path.stat().st_mode & 0o7777) != mode:
            os.chmod(path, mode)
            return "updated"
        return "unchanged"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return "updated" if existed else "installed"


def _remove_empty_parents(path: Path, stop: Path) -> None:
    """Removes now-empty directories from path.parent up to (not including) stop."""
    parent = path.parent
    while parent != stop and stop in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def _need_root(layout: Layout, what: str, euid: int | None) -> None:
    if layout.live and (euid if euid is not None else _euid()) != 0:
        # Only install builds; uninstall has no --no-build.
        tip = (f" (tip: build first as yourself, then `{sudo_command(what, '--no-build')}`)"
               if what == "install" else "")
        raise PandemoniumError(
            f"{what} into the running system ({layout.prefix}, {layout.sysconfdir}) needs root: "
            f"run `{sudo_command(what)}`{tip}, or stage the files with --destdir DIR, which "
            "needs no root")


# -- install / uninstall ------------------------------------------------------------

@dataclass
class Action:
    path: Path
    what: str  # installed / updated / unchanged / kept / removed / absent

    def __str__(self) -> str:
        return f"{self.what:9} {self.path}"


def install_files(layout: Layout, binary: Path, *, tools: Path | None = None,
                  euid: int | None = None, manage_systemd: bool | None = None,
                  system_root: str | None = None) -> list[Action]:
    """Copies the scheduler binary, the tools binary (`tools`, pandemonium-tools, when given),
    the unit and (when absent) the environment file. Idempotent. Installing into the running
    system (or with `system_root`, a fake one's root) also reports other scx_pandemonium
    binaries and which one each unit starts."""
    _need_root(layout, "install", euid)
    binary = Path(binary)
    if not binary.is_file():
        raise PandemoniumError(f"no scheduler binary at {binary}: build it first "
                               "(./pandemonium.py build) or name one with --binary")
    if tools is not None and not Path(tools).is_file():
        # Nothing is written yet: a package must not come out with the scheduler alone.
        raise PandemoniumError(f"no {TOOLS_BINARY_NAME} binary at {tools}: build it first "
                               "(./pandemonium.py build; cargo builds it with the scheduler)")
    def put(path: str, data: bytes, mode: int) -> Action:
        return Action(layout.staged(path), _write_file(layout.staged(path), data, mode))

    actions = [put(layout.binary, binary.read_bytes(), 0o755)]
    if tools is not None:
        actions.append(put(layout.tools, Path(tools).read_bytes(), 0o755))
    actions.append(put(layout.unit, render_unit(layout).encode(), 0o644))
    if layout.staged(layout.env_file).exists():
        # A configuration file: the administrator may have edited it, so it is never replaced.
        actions.append(Action(layout.staged(layout.env_file), "kept"))
    else:
        actions.append(put(layout.env_file, render_default(layout).encode(), 0o644))
    for action in actions:
        log.info("%s", action)

    if layout.live or system_root is not None:
        warnings, info = coexist.report(layout.staged(layout.binary), layout.staged(layout.unit),
                                        root=system_root or "")
        for line in info:
            log.info("%s", line)
        for line in warnings:
            log.warning("%s", line)
    manage_systemd = layout.live if manage_systemd is None else manage_systemd
    if layout.live and layout.unitdir is None and \
            os.path.dirname(layout.unit) not in SYSTEMD_UNIT_DIRS:
        log.warning("%s is not in systemd's unit search path; pass --unitdir "
                    "/etc/systemd/system (or link the unit there) to use it", layout.unit)
    if manage_systemd and systemd_running():
        _systemctl("daemon-reload", check=True)
        if _systemctl("is-active", "--quiet", UNIT_NAME).returncode == 0 and \
                actions[0].what != "unchanged":
            log.info("the service runs the old binary: systemctl restart %s", SERVICE)
        else:
            log.info("start it now and at boot: systemctl enable --now %s", SERVICE)
    return actions


def uninstall_files(layout: Layout, *, purge: bool = False, euid: int | None = None,
                    manage_systemd: bool | None = None) -> list[Action]:
    """Stops/disables the service (live system), removes what install_files put there (the
    tools binary too, if there). The environment file is removed only if unmodified, or with
    purge. Idempotent."""
    _need_root(layout, "uninstall", euid)
    manage_systemd = layout.live if manage_systemd is None else manage_systemd
    if manage_systemd and systemd_running() and layout.staged(layout.unit).exists():
        _systemctl("disable", "--now", UNIT_NAME)

    actions = [_remove(layout.staged(path)) for path in (layout.binary, layout.tools, layout.unit)]
    env_file = layout.staged(layout.env_file)
    if env_file.exists() and not purge and env_file.read_text() != render_default(layout):
        actions.append(Action(env_file, "kept"))
        log.warning("kept %s: it was edited (--purge removes it too)", env_file)
    else:
        actions.append(_remove(env_file))
    if layout.destdir:
        for action in actions:
            if action.what == "removed":
                _remove_empty_parents(action.path, Path(layout.destdir))
    for action in actions:
        log.info("%s", action)
    if manage_systemd and systemd_running():
        _systemctl("daemon-reload")
    return actions


def _remove(path: Path) -> Action:
    try:
        path.unlink()
        return Action(path, "removed")
    except FileNotFoundError:
        return Action(path, "absent")


# -- status -------------------------------------------------------------------------

@dataclass
class Status:
    build: str | None = None            # path of the built binary, if any
    build_version: str | None = None
    installed: str | None = None        # path of the installed binary, if any
    installed_version: str | None = None
    unit: str | None = None             # path of the installed unit, if any
    kernel: str = ""
    sched_ext: str = "missing"          # missing / disabled / enabled / enabling / disabling
    ops: str | None = None
    ours_attached: bool = False
    # When ours_attached: the scx_pandemonium processes found (attached.Attached).
    attached: list[dict] = field(default_factory=list)
    service: str = "systemd not running"
    notes: list[str] = field(default_factory=list)


def collect_status(layout: Layout | None = None, *, sysfs_root: str | os.PathLike = "/sys",
                   build_binary: Path | None = None,
                   systemd_run_dir: str = SYSTEMD_RUNNING_DIR,
                   proc_root: str | os.PathLike = "/proc") -> Status:
    layout = layout or Layout()
    st = Status(kernel=platform.release())

    build = Path(build_binary) if build_binary is not None else scheduler_binary()
    if build.is_file():
        st.build, st.build_version = str(build), binary_version(build)

    installed = layout.staged(layout.binary)
    if installed.is_file():
        st.installed, st.installed_version = str(installed), binary_version(installed)
    elif layout.live and (on_path := shutil.which(BINARY_NAME)):
        st.installed, st.installed_version = on_path, binary_version(on_path)
        st.notes.append(f"found on PATH, not under {layout.prefix}")
    if layout.staged(layout.unit).is_file():
        st.unit = str(layout.staged(layout.unit))

    sx = sched_ext_state(sysfs_root)
    if sx is not None:
        st.sched_ext, st.ops = sx.state, sx.ops
        st.ours_attached = sx.attached and (sx.ops or "").startswith("pandemonium")
    if st.ours_attached:
        # The published scx_pandemonium attaches under the same ops name: only the process says
        # which binary it is.
        st.attached = [asdict(a) for a in attached.find(proc_root)]

    systemctl = shutil.which("systemctl")
    if systemctl and os.path.isdir(systemd_run_dir):
        def ask(verb: str) -> tuple[int, str]:
            try:
                p = subprocess.run([systemctl, verb, UNIT_NAME], capture_output=True, text=True,
                                   timeout=10)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return -1, f"systemctl {verb} failed: {exc}"
            return p.returncode, p.stdout.strip()

        _, active = ask("is-active")       # active / inactive / failed / activating ...
        rc, enabled = ask("is-enabled")    # enabled / disabled / static ...; rc!=0, "" if unknown
        st.service = active or "unknown"
        st.service += f", {enabled}" if enabled else (", unit not installed" if rc else "")
    elif not systemctl:
        st.service = "systemd not running (no systemctl)"
    return st


def describe_sched_ext(st: Status) -> str:
    if st.sched_ext == "missing":
        return (f"not available: this kernel ({st.kernel}) has no /sys/kernel/sched_ext\n"
                "(it needs CONFIG_SCHED_CLASS_EXT=y, Linux 6.12+); "
                "./pandemonium.py vm runs the scheduler in a VM")
    if st.sched_ext == "disabled":
        return "idle: no sched_ext scheduler attached (the kernel's default scheduler runs)"
    who = st.ops or "an unnamed scheduler"
    if st.sched_ext == "enabled":
        mine = " (that is scx_pandemonium)" if st.ours_attached else ""
        return f"enabled: {who} attached{mine}"
    return f"{st.sched_ext}: {who}"


def format_status(st: Status, layout: Layout | None = None) -> str:
    layout = layout or Layout()
    first = lambda v: v.splitlines()[0] if v else "did not run"  # noqa: E731
    rows = [
        ("build", f"{st.build}  [{first(st.build_version)}]" if st.build
         else f"not built (no {scheduler_binary()}; ./pandemonium.py build)"),
        ("installed", f"{st.installed}  [{first(st.installed_version)}]" if st.installed
         else f"no (not in {layout.staged(layout.binary).parent}; ./pandemonium.py install)"),
        ("unit", st.unit or f"not installed ({layout.staged(layout.unit)})"),
        ("sched_ext", describe_sched_ext(st)),
    ]
    notes = list(st.notes)
    if st.ours_attached:
        found = [attached.Attached(**a) for a in st.attached]
        lines, attached_notes = attached.describe(found, st.installed)
        rows.append(("attached", "\n".join(lines)))
        notes += attached_notes
    rows.append(("service", f"{SERVICE}: {st.service}"))
    lines = ["scx_pandemonium status"]
    for key, value in rows:
        first_line, *rest = value.split("\n")
        lines.append(f"  {key + ':':11} {first_line}")
        lines += [f"  {'':11} {more}" for more in rest]
    lines += [f"  note:       {n}" for n in notes]
    if st.build and st.installed and st.build_version and st.installed_version \
            and first(st.build_version) != first(st.installed_version):
        lines.append("  note:       the installed binary differs from the build: "
                     "./pandemonium.py install")
    return "\n".join(lines)


# -- clean / rebuild ----------------------------------------------------------------

def _rmtree(path: Path) -> bool:
    if not path.exists() and not path.is_symlink():
        return False
    log.info("removing %s", path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    return True


def clean(project_root: Path = PROJECT_ROOT, *, cache: bool = False, package_only: bool = False,
          target_dir: Path | None = None, cargo: str = "cargo") -> None:
    """cargo clean (CARGO_TARGET_DIR honored) and the extracted include/scx headers; the user's
    cache (VM kernels, initramfs images) only with cache=True."""
    from . import build

    project_root = Path(project_root)
    env = build.cargo_env()
    # -p alone would clean only the dev profile; rebuild builds release.
    cmd = [cargo, "clean"] + (["-p", BINARY_NAME, "--release"] if package_only else [])
    if shutil.which(cargo, path=env.get("PATH")):
        log.info("$ %s", " ".join(cmd))
        if subprocess.run(cmd, cwd=project_root, env=env).returncode != 0:
            raise PandemoniumError(f"`{' '.join(cmd)}` failed")
    else:
        target = Path(target_dir) if target_dir else (
            cargo_target_dir() if project_root == PROJECT_ROOT else project_root / "target")
        log.warning("cargo not found: removing %s by hand", target)
        _rmtree(target)
    include = project_root / "include"
    _rmtree(include / "scx")
    if include.is_dir() and not any(include.iterdir()):
        include.rmdir()
    if cache:
        root = cache_root().resolve()
        if root in (Path("/"), Path.home().resolve(), project_root.resolve()):
            raise PandemoniumError(f"refusing to delete {root} as the cache")
        if not _rmtree(root):
            log.info("no cache at %s", root)


# -- argparse -----------------------------------------------------------------------

def _add_layout_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prefix", default=DEFAULT_PREFIX, metavar="DIR",
                   help=f"installation prefix; the binary goes to PREFIX/bin and the unit's "
                        f"ExecStart= points there (default: {DEFAULT_PREFIX})")
    p.add_argument("--destdir", default=os.environ.get("DESTDIR", ""), metavar="DIR",
                   help="stage everything below DIR (for packagers; no root needed, systemd "
                        "is not touched). Default: $DESTDIR, else none")
    p.add_argument("--sysconfdir", default=DEFAULT_SYSCONFDIR, metavar="DIR",
                   help=f"where default/pandemonium goes (default: {DEFAULT_SYSCONFDIR})")
    p.add_argument("--unitdir", default=None, metavar="DIR",
                   help="systemd unit directory (default: PREFIX/lib/systemd/system)")


def _layout(args: argparse.Namespace) -> Layout:
    return Layout(prefix=args.prefix, destdir=args.destdir, sysconfdir=args.sysconfdir,
                  unitdir=args.unitdir)


def add_install_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "install", help="build and install scx_pandemonium, its tools and its systemd unit",
        description="Build the scheduler and its tools (release) and install\n"
                    "  PREFIX/bin/scx_pandemonium                     (0755)\n"
                    "  PREFIX/bin/pandemonium-tools                   (0755, probe and stress)\n"
                    "  PREFIX/lib/systemd/system/pandemonium.service  (0644, ExecStart= follows "
                    "PREFIX)\n"
                    "  SYSCONFDIR/default/pandemonium                 (0644, only if absent: it "
                    "is configuration)\n"
                    "Installing into the running system needs root and reloads systemd; it never\n"
                    "enables or starts the service. It warns about any other scx_pandemonium on\n"
                    "PATH or systemd's PATH (e.g. the published one in /usr/bin) and lists which\n"
                    "binary pandemonium.service, scx.service and scx_loader would start. With\n"
                    "--destdir the files are staged below DIR instead, without root and without\n"
                    "those checks. Running it again changes nothing.",
        epilog="examples:\n"
               f"  {sudo_command('install')}\n"
               "  ./pandemonium.py install --destdir /tmp/stage --prefix /usr    # packagers\n"
               f"  ./pandemonium.py build && {sudo_command('install', '--no-build')}\n"
               "then: sudo systemctl enable --now pandemonium\n"
               "(sudo keeps BPF_CLANG and CARGO_TARGET_DIR only when told to, as above)")
    _add_layout_args(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--no-build", action="store_true",
                   help="install what is already built ($CARGO_TARGET_DIR/release or "
                        "target/release) instead of running cargo first")
    g.add_argument("--binary", metavar="PATH",
                   help="install this scheduler binary (implies --no-build), and the "
                        "pandemonium-tools beside it when there is one")
    p.set_defaults(func=cmd_install)


def cmd_install(args: argparse.Namespace) -> int:
    layout = _layout(args)
    _need_root(layout, "install", None)  # before a long build, not after it
    if args.binary:
        binary = Path(args.binary)
        tools = _tools_beside(binary)
    else:
        if not args.no_build:
            from . import build

            build.ensure_packages(vm=False)
            build.build_release()
        # cargo builds both binaries at once: a build without the tools is incomplete.
        binary, tools = scheduler_binary(), tools_binary()
    install_files(layout, binary, tools=tools)
    return 0


def _tools_beside(binary: Path) -> Path | None:
    """pandemonium-tools next to a scheduler binary named with --binary, if it is there: a
    binary copied on its own still installs, without the tools."""
    tools = binary.parent / TOOLS_BINARY_NAME
    if tools.is_file():
        return tools
    if binary.is_file():  # otherwise install_files says what is missing
        log.warning("no %s beside %s: installing the scheduler without its tools",
                    TOOLS_BINARY_NAME, binary)
    return None


def add_uninstall_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "uninstall", help="remove what install put in place",
        description="Stop and disable the service (running system only), then remove the\n"
                    "binaries, the unit and the environment file; an edited environment file is\n"
                    "kept unless --purge. Give it the --prefix/--destdir/--sysconfdir/--unitdir\n"
                    "that install got. Running it again changes nothing.")
    _add_layout_args(p)
    p.add_argument("--purge", action="store_true",
                   help="remove SYSCONFDIR/default/pandemonium even if it was edited")
    p.set_defaults(func=cmd_uninstall)


def cmd_uninstall(args: argparse.Namespace) -> int:
    uninstall_files(_layout(args), purge=args.purge)
    return 0


def add_status_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "status", help="build, installation, kernel sched_ext and service state",
        description="Report whether the scheduler is built ($CARGO_TARGET_DIR honored) and\n"
                    "installed and which version each is (scx_pandemonium --version), whether\n"
                    "this kernel has sched_ext and which scheduler is attached (from\n"
                    "/sys/kernel/sched_ext/state and root/ops; for pandemonium also the process,\n"
                    "its binary and that binary's --version), and the systemd service state.\n"
                    "Needs no root; always exits 0.")
    _add_layout_args(p)
    p.add_argument("--sysfs", default="/sys", metavar="DIR",
                   help="read sched_ext state below this sysfs root (default: /sys)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_status)


def cmd_status(args: argparse.Namespace) -> int:
    layout = _layout(args)
    st = collect_status(layout, sysfs_root=args.sysfs)
    print(json.dumps(st.__dict__, indent=2) if args.json else format_status(st, layout))
    return 0


def add_clean_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "clean", help="cargo clean and the extracted BPF headers",
        description="Run cargo clean (CARGO_TARGET_DIR honored) and remove the sched_ext\n"
                    "headers build.rs extracted into include/scx/. The user's cache\n"
                    "(~/.cache/pandemonium: VM kernels, initramfs images, the service layer's\n"
                    "Debian image) is kept unless --cache.")
    p.add_argument("--cache", action="store_true",
                   help="also delete the cache ($PANDEMONIUM_CACHE or "
                        "$XDG_CACHE_HOME/pandemonium or ~/.cache/pandemonium)")
    p.set_defaults(func=cmd_clean)


def cmd_clean(args: argparse.Namespace) -> int:
    clean(cache=args.cache)
    return 0


def add_rebuild_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rebuild", help="clean build of the scheduler",
        description="Remove the crate's release artifacts (cargo clean -p scx_pandemonium\n"
                    "--release: build.rs output, BPF object, skeleton, bindings) and the\n"
                    "extracted include/scx/, then build again (release). Dependencies come from\n"
                    "the registry and cannot be stale, so they are kept unless --full.")
    p.add_argument("--full", action="store_true",
                   help="plain cargo clean: rebuild the dependencies too (slow)")
    p.set_defaults(func=cmd_rebuild)


def cmd_rebuild(args: argparse.Namespace) -> int:
    from . import build

    build.ensure_packages(vm=False)
    clean(package_only=not args.full)
    log.info("built %s", build.build_release())
    return 0


PARSERS = [add_install_parser, add_uninstall_parser, add_status_parser, add_clean_parser,
           add_rebuild_parser]
