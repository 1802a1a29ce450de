"""External schedulers for the benchmarks (`--external SPEC`): the anchors a user would choose
instead of ours, by name, or any sched_ext scheduler binary by path.

SPEC is one shell word: a known name or a path, optionally followed by the scheduler's own
arguments, split like a shell would (shlex):

    --external scx_bpfland --external upstream --external "/opt/scx_rusty --slice-us 5000"

Known names (ANCHORS) are published crates, installed when missing with
`cargo install --locked --root ~/.cache/pandemonium/anchors/<label>-<version> <crate> --version V`.
A name that is not known but found on PATH is used like a path. Each external scheduler is its own
scheduler in the plan, labelled `bpfland`, `lavd`, `flash`, `upstream` or `ext:<basename>`.

install() is shared with the service gate layer, which installs scx_loader (LOADER) the same way.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from ..common import PandemoniumError, cache_dir, log


@dataclass(frozen=True)
class Anchor:
    crate: str
    version: str
    label: str
    binary: str

    def root(self) -> Path:
        """Where `cargo install --root` puts it; per label, since upstream's binary has our name."""
        return cache_dir("anchors") / f"{self.label}-{self.version}"

    def installed(self) -> Path:
        return self.root() / "bin" / self.binary


ANCHORS = {a.label: a for a in [
    Anchor("scx_bpfland", "1.1.4", "bpfland", "scx_bpfland"),
    Anchor("scx_lavd", "1.1.4", "lavd", "scx_lavd"),
    # Honours cgroup cpu.weight (issue #32's admin phase compares against it).
    Anchor("scx_flash", "1.1.4", "flash", "scx_flash"),
    # The published design of this project (crates.io); installed apart, labelled upstream.
    Anchor("scx_pandemonium", "5.23.1", "upstream", "scx_pandemonium"),
]}
# Not a scheduler, so not an --external choice: the D-Bus daemon that starts schedulers by name. The
# service gate layer runs it in its Debian guest, which has no package of it.
LOADER = Anchor("scx_loader", "1.1.3", "loader", "scx_loader")
# Accepted names: the crate's name (scx_bpfland) or the label (bpfland, upstream).
BY_NAME = {**{a.crate: a for a in ANCHORS.values() if a.label != "upstream"}, **ANCHORS}
_LABEL_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
_ARG_UNSAFE = re.compile(r"[\s;'\"\\$`]")


@dataclass(frozen=True)
class External:
    label: str  # the scheduler's name in the plan, the report and the guest's file names
    spec: str  # what the user wrote
    args: tuple[str, ...] = ()
    anchor: Anchor | None = None
    path: Path | None = None  # host binary; None for an anchor until resolve() installed it

    def describe(self) -> str:
        what = f"{self.anchor.crate} {self.anchor.version} (crates.io)" if self.anchor \
            else str(self.path)
        return what + (f" {' '.join(self.args)}" if self.args else "")


def parse_external(spec: str) -> External:
    """One --external SPEC -> External (no installation, no file checks for anchors)."""
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        raise PandemoniumError(f"--external {spec!r}: {exc}") from None
    if not words:
        raise PandemoniumError("--external needs a NAME or PATH")
    name, args = words[0], tuple(words[1:])
    bad = [a for a in args if _ARG_UNSAFE.search(a)]
    if bad:  # the guest's busybox sh splits the command line on blanks, nothing more
        raise PandemoniumError(f"--external {spec!r}: arguments with blanks, quotes, ';' or '$' "
                               f"are not supported: {bad}")
    if name in BY_NAME and "/" not in name:
        anchor = BY_NAME[name]
        return External(anchor.label, spec, args, anchor)
    found = name if "/" in name else shutil.which(name)
    if not found:
        known = ", ".join(sorted(BY_NAME))
        raise PandemoniumError(f"--external {name!r}: not a known name ({known}) and no such "
                               "program on PATH; give a path to a sched_ext scheduler binary")
    path = Path(found).expanduser()
    return External("ext:" + _LABEL_SAFE.sub("_", path.name), spec, args, None, path)


def parse_externals(specs: list[str]) -> list[External]:
    """Several specs; a label seen twice gets a -2, -3 suffix (two builds of one scheduler)."""
    out: list[External] = []
    seen: dict[str, int] = {}
    for spec in specs:
        ext = parse_external(spec)
        seen[ext.label] = seen.get(ext.label, 0) + 1
        if seen[ext.label] > 1:
            ext = replace(ext, label=f"{ext.label}-{seen[ext.label]}")
        out.append(ext)
    return out


def clang_on_path(env: dict[str, str]) -> dict[str, str]:
    """env with a plain `clang` on PATH: some scx_utils build scripts call `clang` by that name,
    which a machine with only clang-19 lacks. The shim is a symlink to BPF_CLANG's binary in the
    anchors cache, put first on PATH; env is returned as it is when `clang` is already found."""
    path = env.get("PATH", "")
    if shutil.which("clang", path=path):
        return env
    target = shutil.which(env.get("BPF_CLANG") or "clang", path=path)
    if not target:
        return env  # cargo's own error will name the missing compiler
    shim = cache_dir("anchors") / "clang-shim"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "clang").unlink(missing_ok=True)
    (shim / "clang").symlink_to(target)
    return dict(env, PATH=f"{shim}{os.pathsep}{path}")


def install_command(anchor: Anchor) -> list[str]:
    return ["cargo", "install", "--locked", "--root", str(anchor.root()), anchor.crate,
            "--version", anchor.version]


def _install_env(anchor: Anchor) -> dict[str, str]:
    from .. import build

    # The clang our own build uses (cargo_env); none found: scx_cargo's default, plain clang.
    env = build.cargo_env()
    env.setdefault("BPF_CLANG", "clang")
    env = clang_on_path(env)
    if not shutil.which("cargo", path=env.get("PATH")):
        raise PandemoniumError(f"installing {anchor.crate}: cargo not found (https://rustup.rs)")
    return env


def _install_failed(anchor: Anchor, rc: int, output: str) -> PandemoniumError:
    tail = "\n".join(output.strip().splitlines()[-15:])
    return PandemoniumError(f"`{shlex.join(install_command(anchor))}` failed (exit {rc}):\n{tail}")


def install(anchor: Anchor, run=subprocess.run) -> Path:
    """Installs the anchor's crate unless its binary is already there; returns the binary."""
    binary = anchor.installed()
    if binary.is_file():
        return binary
    env = _install_env(anchor)
    log.info("installing %s %s (cargo install, a few minutes)...", anchor.crate, anchor.version)
    cmd = install_command(anchor)
    log.info("$ BPF_CLANG=%s %s", env["BPF_CLANG"], shlex.join(cmd))
    proc = run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or not binary.is_file():
        raise _install_failed(anchor, proc.returncode, proc.stdout or "")
    log.info("installed %s", binary)
    return binary


def _idle_priority() -> None:
    """In the install's child: SCHED_IDLE (inherited by cargo's rustc jobs), so the build takes
    only CPU time nothing else wants; nice 19 where the policy is refused."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        os.nice(19)


@dataclass
class BackgroundInstall:
    """An anchor's `cargo install` running beside other work at idle priority; wait() returns its
    binary like install() does."""
    anchor: Anchor
    proc: subprocess.Popen | None  # None: already installed
    log_path: Path | None

    @classmethod
    def start(cls, anchor: Anchor) -> BackgroundInstall:
        if anchor.installed().is_file():
            return cls(anchor, None, None)
        env = _install_env(anchor)
        log_path = cache_dir("anchors") / f"{anchor.label}-{anchor.version}.install.log"
        log.info("installing %s %s in the background at idle priority (log: %s)",
                 anchor.crate, anchor.version, log_path)
        with open(log_path, "w") as out:
            proc = subprocess.Popen(install_command(anchor), env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=_idle_priority)
        return cls(anchor, proc, log_path)

    def wait(self) -> Path:
        binary = self.anchor.installed()
        if self.proc is None:
            return binary
        if self.proc.poll() is None:
            log.info("waiting for %s's install to finish (%s)", self.anchor.crate, self.log_path)
            # It no longer yields to anything: whoever waits for it is idle.
            try:
                os.sched_setscheduler(self.proc.pid, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass
        rc = self.proc.wait()
        if rc != 0 or not binary.is_file():
            output = self.log_path.read_text(errors="replace") if self.log_path else ""
            raise _install_failed(self.anchor, rc, output)
        log.info("installed %s", binary)
        return binary


def resolve(ext: External, run=subprocess.run) -> External:
    """The External with its host binary: an anchor is installed when missing; a path must be a
    file."""
    if ext.anchor is not None:
        return replace(ext, path=install(ext.anchor, run=run))
    if ext.path is None or not ext.path.is_file():
        raise PandemoniumError(f"--external {ext.spec!r}: {ext.path}: no such file")
    return ext


def guest_path(ext: External) -> str:
    """Its own directory per label: upstream's binary shares our scheduler's name."""
    assert ext.path is not None
    return f"/opt/external/{_LABEL_SAFE.sub('_', ext.label)}/{ext.path.name}"
