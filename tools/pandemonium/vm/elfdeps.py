"""Find the shared libraries (and dynamic loader) a host binary needs in the guest."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..common import PandemoniumError

# "libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
_ARROW = re.compile(r"^\s*(\S+)\s+=>\s+(.*?)\s*(?:\(0x[0-9a-fA-F]+\))?\s*$")
_BARE = re.compile(r"^\s*(/\S+)\s+\(0x[0-9a-fA-F]+\)\s*$")


def parse_ldd(output: str) -> tuple[list[str], list[str]]:
    """Return (library paths, names not found). vdso and static binaries yield nothing."""
    paths, missing = [], []
    for line in output.splitlines():
        m = _ARROW.match(line)
        if m:
            name, target = m.groups()
            if target == "not found":
                missing.append(name)
            elif target.startswith("/"):
                paths.append(target)
            continue
        m = _BARE.match(line)
        if m:
            paths.append(m.group(1))
    return paths, missing


def is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def shared_libs(binary: Path) -> list[str]:
    """Library paths as ldd prints them; the guest gets files at exactly these paths,
    so the program's interpreter path (e.g. /lib64/ld-linux-x86-64.so.2) resolves."""
    if not is_elf(binary):
        return []
    proc = subprocess.run(["ldd", str(binary)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env={**os.environ, "LC_ALL": "C"})
    if proc.returncode != 0 and "not a dynamic executable" in proc.stdout:
        return []
    paths, missing = parse_ldd(proc.stdout)
    if missing:
        raise PandemoniumError(f"{binary}: shared libraries not found on host: "
                               f"{', '.join(missing)}")
    return paths


def resolve_tool(name_or_path: str) -> Path:
    """Host path of a tool, seeing through Debian's perf wrapper (a script that execs
    perf_<kernel version>), which would be useless in a guest with no such file."""
    found = shutil.which(name_or_path) if "/" not in name_or_path else name_or_path
    if not found or not Path(found).exists():
        raise PandemoniumError(f"tool '{name_or_path}' not found on host PATH")
    path = Path(found)
    if is_elf(path):
        return path
    text = path.read_text(errors="replace")
    if "perf_" in text or path.name == "perf":
        for pattern in (f"{path.parent}/perf_*", "/usr/lib/linux-tools*/perf",
                        "/usr/lib/linux-tools/*/perf", "/usr/bin/perf.real"):
            real = sorted((Path(p) for p in glob.glob(pattern) if is_elf(Path(p))),
                          key=lambda p: p.stat().st_mtime)
            if real:
                return real[-1]
    return path
