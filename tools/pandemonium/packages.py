"""The system package table (src/build_support/system_packages.tsv): which tools are missing here,
and which package brings each one on apt, pacman and dnf systems.

build.rs reads the same table (src/build_support/packages.rs, src/build_support/clang.rs): its
clang row names the clang versions both sides look for. Standard library only.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .common import PROJECT_ROOT, PandemoniumError

TABLE = PROJECT_ROOT / "src" / "build_support" / "system_packages.tsv"
COLUMNS = ("tool", "check", "group", "apt", "pacman", "dnf")
GROUPS = ("build", "vm", "bench", "extra")
AUR = "aur:"


@dataclass(frozen=True)
class Row:
    tool: str
    check: str
    group: str
    apt: str
    pacman: str
    dnf: str


def parse(text: str) -> list[Row]:
    lines = [(i + 1, line) for i, line in enumerate(text.splitlines())
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise PandemoniumError(f"{TABLE.name}: no header line")
    if tuple(lines[0][1].split()) != COLUMNS:
        raise PandemoniumError(f"{TABLE.name}: header {lines[0][1].split()}, expected {COLUMNS}")
    rows: list[Row] = []
    for no, line in lines[1:]:
        fields = line.split()
        if len(fields) != len(COLUMNS):
            raise PandemoniumError(f"{TABLE.name} line {no}: {len(fields)} columns, "
                                   f"expected {len(COLUMNS)}")
        if any(r.tool == fields[0] for r in rows):
            raise PandemoniumError(f"{TABLE.name} line {no}: tool {fields[0]} listed twice")
        if fields[2] not in GROUPS:
            raise PandemoniumError(f"{TABLE.name} line {no}: group {fields[2]!r} is not one of "
                                   f"{', '.join(GROUPS)}")
        rows.append(Row(*fields))
    return rows


def load(path: Path = TABLE) -> dict[str, Row]:
    return {r.tool: r for r in parse(path.read_text())}


def group(name: str, table: dict[str, Row] | None = None) -> list[str]:
    table = load() if table is None else table
    return [tool for tool, r in table.items() if r.group == name]


def clang_versions(check: str) -> tuple[int, int]:
    """(MIN, NEWEST) of the clang row's check, clang:MIN-NEWEST."""
    lo, sep, hi = check.removeprefix("clang:").partition("-")
    if not (check.startswith("clang:") and sep and lo.isdigit() and hi.isdigit()
            and int(lo) <= int(hi)):
        raise PandemoniumError(f"{TABLE.name}: clang check {check!r}, expected clang:MIN-NEWEST")
    return int(lo), int(hi)


def usable_clang(env: dict[str, str] | None = None, check: str | None = None) -> str | None:
    """The clang build.rs would pick (BPF_CLANG alone if set, else clang-NEWEST .. clang-MIN,
    then clang; `check`: the table's clang row's), or None when none of them is >= MIN."""
    env = os.environ if env is None else env
    min_clang, newest = clang_versions(load()["clang"].check if check is None else check)
    wanted = env.get("BPF_CLANG")
    names = [wanted] if wanted else (
        [f"clang-{v}" for v in range(newest, min_clang - 1, -1)] + ["clang"])
    for name in names:
        path = shutil.which(name, path=env.get("PATH"))
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        except OSError:
            continue
        words = out.split()
        if "version" in words[:-1]:
            major = words[words.index("version") + 1].split(".")[0]
            if major.isdigit() and int(major) >= min_clang:
                return name
    return None


def present(row: Row, env: dict[str, str] | None = None) -> bool:
    kind, _, what = row.check.partition(":")
    if kind == "clang":
        return usable_clang(env, row.check) is not None
    if kind == "cmd":
        return shutil.which(what, path=(os.environ if env is None else env).get("PATH")) is not None
    if kind == "file":
        return any(glob.glob(pattern) for pattern in what.split("|"))
    if kind == "py":
        return importlib.util.find_spec(what) is not None
    raise PandemoniumError(f"{TABLE.name}: tool {row.tool}: unknown check {row.check!r}")


def _rows(tools: list[str], table: dict[str, Row] | None) -> list[Row]:
    table = load() if table is None else table
    unknown = [t for t in tools if t not in table]
    if unknown:
        raise PandemoniumError(f"{TABLE.name} has no tool {', '.join(unknown)}")
    return [table[t] for t in dict.fromkeys(tools)]


def missing(tools: list[str], table: dict[str, Row] | None = None,
            env: dict[str, str] | None = None) -> list[str]:
    return [r.tool for r in _rows(tools, table) if not present(r, env)]


def packages(tools: list[str], manager: str, table: dict[str, Row] | None = None) -> list[str]:
    """The `manager` (apt, pacman, dnf) package names for `tools`, each once; AUR-only pacman
    packages keep their aur: prefix."""
    return list(dict.fromkeys(getattr(r, manager) for r in _rows(tools, table)))


def install_hint(tools: list[str], table: dict[str, Row] | None = None) -> str:
    """One indented line per package manager, as src/build_support/packages.rs writes it."""
    if not tools:
        raise PandemoniumError("install_hint: no tools named")
    pacman = packages(tools, "pacman", table)
    repo = [p for p in pacman if not p.startswith(AUR)]
    aur = [p[len(AUR):] for p in pacman if p.startswith(AUR)]
    pacman_line = " ".join(([f"pacman -S {' '.join(repo)}"] if repo or not aur else [])
                           + ([f"(AUR: {' '.join(aur)})"] if aur else []))
    return (f"  apt-get install {' '.join(packages(tools, 'apt', table))}\n"
            f"  {pacman_line}\n"
            f"  dnf install {' '.join(packages(tools, 'dnf', table))}")


def missing_message(tools: list[str], context: str = "",
                    table: dict[str, Row] | None = None) -> str:
    """"missing TOOLS (context); install with one of:" and the hint lines."""
    head = f"missing {', '.join(tools)}" + (f" ({context})" if context else "")
    return f"{head}; install with one of:\n{install_hint(tools, table)}"
