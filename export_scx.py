#!/usr/bin/env python3
"""Export scx_pandemonium into a sched-ext/scx monorepo checkout as scheds/rust/scx_pandemonium.

What lands in SCX_DIR/scheds/rust/scx_pandemonium/:
  src/ (src/build_support/ and src/examples/ with it), tests/ (Rust only: not the Python tests or
  their fixtures), build.rs, README.md, LICENSE  copied as they are: the monorepo builds with our
              own build.rs, its scx_cargo path dependency supplying the monorepo's sched_ext headers
  Cargo.toml  rewritten: monorepo crates (scx_utils, scx_stats, scx_stats_derive, scx_cargo) as
              path dependencies when the checkout has them (or `workspace = true` when its root
              declares them), libbpf-rs aligned with the monorepo's scx_utils, [profile.*]
              dropped (only the workspace root's profiles apply)
and the crate is registered in the root Cargo.toml's [workspace] members (kept sorted if it is).
Not exported: target/, include/scx/, .ci/, .gitignore (so build.rs leaves the monorepo's source
tree alone: src/build_support/header_mirror.rs), the Python tools (tools/, *.py), Cargo.lock.

Files are staged in a temporary directory and formatted there with `cargo fmt` (with the
checkout's rustfmt.toml) before anything is compared, so a second run changes nothing. Only files
that differ are written; files of a previous export that no longer exist upstream are removed.

Standard library only (Python 3.11+: tomllib).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent
CRATE = "scx_pandemonium"
MEMBER = f"scheds/rust/{CRATE}"
COPY_DIRS = ("src", "tests", "benches")
COPY_FILES = ("build.rs", "README.md", "LICENSE", "COPYING")
EXCLUDE_PREFIXES = ("tests/fixtures/",)
EXCLUDE_PARTS = {"__pycache__", ".pytest_cache", "target"}
EXCLUDE_SUFFIXES = (".py", ".pyc", ".orig", ".rej", ".swp", "~")
# Crates the monorepo builds itself, where they usually live in a checkout.
MONOREPO_CRATES = {
    "scx_utils": "rust/scx_utils",
    "scx_stats": "rust/scx_stats",
    "scx_stats_derive": "rust/scx_stats/scx_stats_derive",
    "scx_cargo": "rust/scx_cargo",
}
# Dependencies whose version must match what a monorepo crate pins (libbpf-sys has
# `links = "bpf"`: two versions of it cannot be linked into one workspace). build.rs needs only
# scx_cargo, which brings its own libbpf-cargo.
ALIGN_WITH = {"libbpf-rs": "scx_utils"}
DEP_TABLES = ("dependencies", "build-dependencies", "dev-dependencies")


class ExportError(Exception):
    pass


def info(msg: str) -> None:
    print(msg, flush=True)


# -- the checkout -------------------------------------------------------------------

def read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ExportError(f"{path}: not valid TOML: {exc}") from None


def check_checkout(scx: Path) -> dict:
    """Returns the root manifest, or explains why SCX_DIR is not an sched-ext/scx checkout."""
    if not scx.is_dir():
        raise ExportError(f"{scx}: no such directory")
    scx = scx.resolve()
    if scx == PROJECT_ROOT or PROJECT_ROOT in scx.parents:
        raise ExportError(f"{scx} is this project, not an sched-ext/scx checkout")
    problems = []
    manifest = scx / "Cargo.toml"
    doc: dict = {}
    if not manifest.is_file():
        problems.append("no Cargo.toml")
    else:
        doc = read_toml(manifest)
        if not isinstance(doc.get("workspace"), dict):
            problems.append("its Cargo.toml has no [workspace]")
    if not (scx / "scheds" / "rust").is_dir():
        problems.append("no scheds/rust/ directory")
    if not (scx / "rust").is_dir():
        problems.append("no rust/ directory (where scx_utils and friends live)")
    if problems:
        raise ExportError(
            f"{scx} does not look like an sched-ext/scx checkout: {'; '.join(problems)}.\n"
            "Get one with: git clone https://github.com/sched-ext/scx")
    return doc


def monorepo_crate(scx: Path, root_doc: dict, name: str) -> tuple[str, str | None] | None:
    """(path relative to our crate dir, version) of a crate the checkout builds, if present."""
    rel = MONOREPO_CRATES.get(name)
    if rel is None or not (scx / rel / "Cargo.toml").is_file():
        return None
    pkg = read_toml(scx / rel / "Cargo.toml").get("package", {})
    if pkg.get("name") != name:
        return None
    version = pkg.get("version")
    if isinstance(version, dict) and version.get("workspace"):
        version = root_doc.get("workspace", {}).get("package", {}).get("version")
    return (os.path.relpath(scx / rel, scx / MEMBER), version if isinstance(version, str) else None)


def monorepo_requirement(scx: Path, crate: str, dep: str) -> str | None:
    """The version requirement the checkout's `crate` has on `dep`."""
    path = scx / MONOREPO_CRATES[crate] / "Cargo.toml"
    if not path.is_file():
        return None
    spec = read_toml(path).get("dependencies", {}).get(dep)
    version = spec.get("version") if isinstance(spec, dict) else spec
    return version if isinstance(version, str) else None


# -- Cargo.toml ---------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise ExportError(f"cannot write {v!r} as TOML")


def dump_toml(doc: dict) -> str:
    """Enough TOML for a Cargo manifest: tables, arrays of tables, dependency specs inline."""
    out: list[str] = []

    def is_aot(v) -> bool:
        return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)

    def emit(path: list[str], table: dict, header: str | None) -> None:
        inline = bool(path) and path[-1] in DEP_TABLES
        scalars = [(k, v) for k, v in table.items()
                   if inline or not (isinstance(v, dict) or is_aot(v))]
        if header and (scalars or not any(isinstance(v, dict) or is_aot(v)
                                          for v in table.values())):
            out.append(header)
        for k, v in scalars:
            out.append(f"{_key(k)} = {_value(v)}")
        if scalars or header:
            out.append("")
        if inline:
            return
        for k, v in table.items():
            sub = path + [k]
            name = ".".join(_key(p) for p in sub)
            if isinstance(v, dict):
                emit(sub, v, f"[{name}]")
            elif is_aot(v):
                for item in v:
                    emit(sub, item, f"[[{name}]]")

    emit([], doc, None)
    return "\n".join(out).rstrip("\n") + "\n"


def rewrite_manifest(doc: dict, scx: Path, root_doc: dict) -> tuple[dict, list[str]]:
    """Our Cargo.toml, adapted to live in the checkout's workspace; returns it and notes."""
    notes: list[str] = []
    doc = json.loads(json.dumps(doc))  # deep copy
    doc.setdefault("package", {})["name"] = CRATE
    for key in ("profile", "workspace", "patch", "replace"):
        if doc.pop(key, None) is not None:
            notes.append(f"Cargo.toml: dropped [{key}] (the workspace root's applies)")
    ws_deps = root_doc.get("workspace", {}).get("dependencies", {})
    if "lints" in root_doc.get("workspace", {}) and "lints" not in doc:
        doc["lints"] = {"workspace": True}
        notes.append("Cargo.toml: [lints] workspace = true (the workspace defines lints)")

    for table in DEP_TABLES:
        deps = doc.get(table)
        if not isinstance(deps, dict):
            continue
        for name, spec in list(deps.items()):
            spec = {"version": spec} if isinstance(spec, str) else dict(spec)
            extra = {k: spec[k] for k in ("features", "optional") if k in spec}
            crate = monorepo_crate(scx, root_doc, name)
            if name in ws_deps:
                deps[name] = {"workspace": True, **extra}
                notes.append(f"Cargo.toml: {name} from the workspace's [workspace.dependencies]")
            elif crate is not None:
                path, version = crate
                deps[name] = {"path": path, **({"version": version} if version else {}),
                              **{k: spec[k] for k in ("default-features",) if k in spec}, **extra}
                notes.append(f"Cargo.toml: {name} = path {path}"
                             + (f", version {version}" if version else ""))
            elif name in ALIGN_WITH and (
                    req := monorepo_requirement(scx, ALIGN_WITH[name], name)):
                if spec.get("version") != req:
                    notes.append(f"Cargo.toml: {name} {spec.get('version')} -> {req} "
                                 f"(the checkout's {ALIGN_WITH[name]} uses that)")
                spec["version"] = req
                deps[name] = spec["version"] if list(spec) == ["version"] else spec
    return doc, notes


MARKER = "# Exported from scx_pandemonium by its export_scx.py"
MANIFEST_HEAD = (f"{MARKER}; changes belong upstream, then\n"
                 "# re-export. Generated, so comments of the original manifest are not kept.\n\n")


# -- workspace members --------------------------------------------------------------

def _scan_array(text: str, pos: int) -> tuple[list[tuple[int, int, str]], int]:
    """String items of the TOML array whose '[' is at text[pos]: [(start, end, value)], and the
    position of its ']'. Comments and both string kinds are understood."""
    items = []
    i = pos + 1
    while i < len(text):
        c = text[i]
        if c == "]":
            return items, i
        if c == "#":
            i = text.find("\n", i)
            if i < 0:
                break
        elif c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if (c == '"' and text[j] == "\\") else 1
            items.append((i, j + 1, tomllib.loads(f"v = {text[i:j + 1]}")["v"]))
            i = j
        i += 1
    raise ExportError("root Cargo.toml: unterminated members array")


def register_member(text: str, member: str = MEMBER) -> str | None:
    """The root manifest with `member` in [workspace] members, or None if already covered."""
    doc = tomllib.loads(text)
    members = doc.get("workspace", {}).get("members", [])
    if any(m == member or fnmatch.fnmatchcase(member, m) for m in members):
        return None
    ws = re.search(r"(?m)^\[workspace\][ \t]*(#.*)?$", text)
    if not ws:
        raise ExportError("root Cargo.toml: no [workspace] header line")
    section_end = re.compile(r"(?m)^\s*\[").search(text, ws.end())
    limit = section_end.start() if section_end else len(text)
    m = re.compile(r"(?m)^[ \t]*members[ \t]*=[ \t]*\[").search(text, ws.end(), limit)
    quoted = json.dumps(member)
    if not m:
        new = text[:ws.end()] + f"\nmembers = [{quoted}]" + text[ws.end():]
    else:
        items, close = _scan_array(text, m.end() - 1)
        values = [v for _, _, v in items]
        if not items:
            new = text[:m.end()] + quoted + text[m.end():]
        else:
            seps = [text[a[1]:b[0]] for a, b in zip(items, items[1:])]
            clean = [s for s in seps if re.fullmatch(r"\s*,\s*", s)]
            if clean:
                sep = clean[0]
            elif "\n" in text[m.end():close]:
                line_start = text.rfind("\n", 0, items[-1][0]) + 1
                indent = text[line_start:items[-1][0]]
                sep = ",\n" + (indent if not indent.strip() else "    ")
            else:
                sep = ", "
            idx = len(items)
            if values == sorted(values):
                idx = next((k for k, v in enumerate(values) if v > member), len(items))
            if idx < len(items):
                at = items[idx][0]
                new = text[:at] + quoted + sep + text[at:]
            else:
                at = items[-1][1]
                new = text[:at] + sep + quoted + text[at:]
    if member not in tomllib.loads(new).get("workspace", {}).get("members", []):
        raise ExportError("root Cargo.toml: registering the member went wrong; add "
                          f"{quoted} to [workspace] members by hand")
    return new


# -- the export ---------------------------------------------------------------------

def _excluded(rel: str) -> bool:
    parts = rel.split("/")
    return (rel.startswith(EXCLUDE_PREFIXES) or rel.endswith(EXCLUDE_SUFFIXES)
            or any(p in EXCLUDE_PARTS or p.startswith(".") for p in parts))


def _dir_files(root: Path):
    """(relative path, path) of every file under root's COPY_DIRS, sorted per directory."""
    for d in COPY_DIRS:
        if (root / d).is_dir():
            for path in sorted((root / d).rglob("*")):
                if path.is_file():
                    yield path.relative_to(root).as_posix(), path


def plan_files(src: Path, scx: Path, root_doc: dict) -> tuple[dict[str, bytes], list[str]]:
    """The crate's files as exported (relative path -> bytes) and the manifest rewrite's notes."""
    files = {rel: path.read_bytes() for rel, path in _dir_files(src) if not _excluded(rel)}
    files.update({n: (src / n).read_bytes() for n in COPY_FILES if (src / n).is_file()})
    manifest, notes = rewrite_manifest(read_toml(src / "Cargo.toml"), scx, root_doc)
    files["Cargo.toml"] = (MANIFEST_HEAD + dump_toml(manifest)).encode()
    return files, notes


def cargo_fmt(files: dict[str, bytes], scx: Path) -> tuple[dict[str, bytes], str]:
    """Formats the staged crate with `cargo fmt` (the checkout's rustfmt.toml applies)."""
    cargo = shutil.which("cargo") or shutil.which(str(Path.home() / ".cargo/bin/cargo"))
    if not cargo:
        return files, "cargo not found: the exported crate was not formatted (run cargo fmt there)"
    with tempfile.TemporaryDirectory(prefix="scx-export-") as tmp:
        crate = Path(tmp) / CRATE
        for rel, data in files.items():
            (crate / rel).parent.mkdir(parents=True, exist_ok=True)
            (crate / rel).write_bytes(data)
        cmd = [cargo, "fmt", "--manifest-path", str(crate / "Cargo.toml")]
        config = next((scx / n for n in ("rustfmt.toml", ".rustfmt.toml") if (scx / n).is_file()),
                      None)
        if config:
            cmd += ["--", "--config-path", str(config)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return files, ("cargo fmt failed, the crate was exported unformatted: "
                           + (proc.stderr.strip().splitlines() or ["?"])[-1])
        formatted = {rel: (crate / rel).read_bytes() if rel.endswith(".rs") else data
                     for rel, data in files.items()}
    return formatted, "formatted with cargo fmt" + (f" ({config.name})" if config else "")


def compare(files: dict[str, bytes], crate_dir: Path) -> list[tuple[str, str]]:
    """[(action, rel)]: create / update / delete (stale files of a previous export)."""
    changes = []
    for rel, data in sorted(files.items()):
        dest = crate_dir / rel
        if not dest.is_file():
            changes.append(("create", rel))
        elif dest.read_bytes() != data:
            changes.append(("update", rel))
    return changes + [("delete", rel) for rel, _ in _dir_files(crate_dir) if rel not in files]


def export(scx: Path, *, dry_run: bool = False, fmt: bool = True, replace: bool = False,
           src: Path = PROJECT_ROOT) -> int:
    """Returns the number of changes made (or, with dry_run, that would be made)."""
    scx = Path(scx).resolve()
    root_doc = check_checkout(scx)
    crate_dir = scx / MEMBER
    files, notes = plan_files(src, scx, root_doc)
    manifest = crate_dir / "Cargo.toml"
    if manifest.is_file() and not manifest.read_text().startswith(MARKER):  # upstream's own?
        leftovers = sorted(p.name + ("/" if p.is_dir() else "") for p in crate_dir.iterdir()
                           if p.name not in files and p.name not in COPY_DIRS)
        if not replace:
            raise ExportError(
                f"{crate_dir} already holds a scx_pandemonium that export_scx.py did not write "
                "(the monorepo's own?). --replace overwrites it: its "
                f"{', '.join(d + '/' for d in COPY_DIRS if (crate_dir / d).is_dir())} are "
                "mirrored from this project (files only it has are deleted) and Cargo.toml, "
                "build.rs, README.md replaced" + (f"; left as they are: {', '.join(leftovers)}"
                                                  if leftovers else ""))
        if leftovers:
            notes.append(f"left in {MEMBER} as they are (not ours): {', '.join(leftovers)}")
    if fmt:
        files, note = cargo_fmt(files, scx)
        notes.append(note)
    changes = compare(files, crate_dir)
    root_manifest = scx / "Cargo.toml"
    new_root = register_member(root_manifest.read_text())

    prefix = "would " if dry_run else ""
    for note in notes:
        info(f"note: {note}")
    for action, rel in changes:
        info(f"{prefix}{action} {MEMBER}/{rel}")
    if new_root is not None:
        info(f"{prefix}register {MEMBER} in Cargo.toml [workspace] members")
    total = len(changes) + (new_root is not None)
    if total == 0:
        info(f"{MEMBER} is up to date ({len(files)} files)")
        return 0
    if dry_run:
        info(f"dry run: {total} change(s), nothing written")
        return total

    for action, rel in changes:
        dest = crate_dir / rel
        if action == "delete":
            dest.unlink()
            parent = dest.parent
            while parent != crate_dir and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(files[rel])
    if new_root is not None:
        root_manifest.write_text(new_root)
    info(f"exported {CRATE} to {crate_dir} ({total} change(s)); build it with:\n"
         f"  cd {scx} && cargo build --release -p {CRATE}")
    return total


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="export_scx.py",
        description=__doc__.split("\n\n")[0] + "\n\n" + "\n\n".join(__doc__.split("\n\n")[1:3]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  git clone https://github.com/sched-ext/scx ~/src/scx\n"
               "  ./export_scx.py --dry-run ~/src/scx\n"
               "  ./export_scx.py ~/src/scx && cd ~/src/scx && cargo build -p scx_pandemonium\n"
               "exit status: 0 done (or nothing to do), 1 error, 2 usage error")
    p.add_argument("scx_dir", metavar="SCX_DIR", help="an sched-ext/scx monorepo checkout")
    p.add_argument("-n", "--dry-run", action="store_true",
                   help="print what would change; write nothing")
    p.add_argument("--no-fmt", action="store_true", help="do not run cargo fmt on the export")
    p.add_argument("--replace", action="store_true",
                   help="overwrite a scheds/rust/scx_pandemonium that this script did not write "
                        "(by default that is refused)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        export(Path(args.scx_dir), dry_run=args.dry_run, fmt=not args.no_fmt,
               replace=args.replace)
    except (ExportError, OSError) as exc:
        print(f"export_scx.py: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
