"""export_scx.py against fixture sched-ext/scx monorepo trees built in tmp dirs.

The build of the exported crate inside the fixture workspace is slow (libbpf-sys, bindgen, the
BPF compile): it runs only with PANDEMONIUM_SLOW_TESTS=1 (CARGO_TARGET_DIR is honored, so a
target dir that already holds this project's release build makes it quick).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import export_scx
from tools.pandemonium.build import cargo_env

ROOT = Path(__file__).resolve().parents[1]

with warnings.catch_warnings():
    # `slow` is this file's own marker; no pytest configuration registers it.
    warnings.simplefilter("ignore")
    slow = pytest.mark.slow

ROOT_MANIFEST = """\
[workspace]
members = [ "rust/scx_utils",
    "scheds/rust/scx_dummy",
    "scheds/rust/scx_zeta",
]
resolver = "2"

[profile.release]
lto = "thin"
"""


def crate(path: Path, name: str, version: str = "0.1.0", body: str = "") -> None:
    (path / "src").mkdir(parents=True)
    (path / "Cargo.toml").write_text(
        f'[package]\nname = "{name}"\nversion = "{version}"\nedition = "2021"\n{body}')
    (path / "src/main.rs").write_text("fn main() {}\n")


@pytest.fixture
def scx(tmp_path: Path) -> Path:
    """A minimal monorepo: workspace manifest, one dummy scheduler, an empty rust/."""
    root = tmp_path / "scx checkout"
    root.mkdir()
    (root / "Cargo.toml").write_text(ROOT_MANIFEST.replace('"rust/scx_utils",\n    ', ""))
    crate(root / "scheds/rust/scx_dummy", "scx_dummy")
    crate(root / "scheds/rust/scx_zeta", "scx_zeta")
    (root / "rust").mkdir()
    return root


@pytest.fixture
def scx_with_crates(scx: Path) -> Path:
    """The monorepo with its own scx_utils (pinning libbpf-rs), scx_stats and scx_cargo."""
    (scx / "Cargo.toml").write_text(ROOT_MANIFEST + '\n[workspace.package]\nversion = "1.2.3"\n')
    crate(scx / "rust/scx_utils", "scx_utils", "1.2.3",
          '\n[dependencies]\nlibbpf-rs = "=0.26.0"\n')
    crate(scx / "rust/scx_stats", "scx_stats", "1.0.9")
    (scx / "rust/scx_cargo/src").mkdir(parents=True)
    (scx / "rust/scx_cargo/Cargo.toml").write_text(
        '[package]\nname = "scx_cargo"\nversion.workspace = true\nedition = "2021"\n'
        '\n[dependencies]\nlibbpf-cargo = "=0.26.0"\n')
    return scx


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "export_scx.py"), *args],
                          capture_output=True, text=True, env=env)


# -- refusing what is not a checkout ------------------------------------------------

def test_refuses_a_plain_directory(tmp_path):
    proc = run(str(tmp_path))
    assert proc.returncode == 1
    assert "does not look like an sched-ext/scx checkout" in proc.stderr
    assert "no Cargo.toml" in proc.stderr and "no scheds/rust/" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_refuses_a_crate_without_workspace(scx):
    (scx / "Cargo.toml").write_text('[package]\nname = "x"\nversion = "0.1.0"\n')
    before = tree_hash(scx)
    proc = run(str(scx))
    assert proc.returncode == 1 and "has no [workspace]" in proc.stderr
    assert tree_hash(scx) == before


def test_refuses_without_rust_dir(scx):
    (scx / "rust").rmdir()
    proc = run(str(scx))
    assert proc.returncode == 1 and "no rust/ directory" in proc.stderr


def test_refuses_missing_dir_and_this_project(tmp_path):
    assert "no such directory" in run(str(tmp_path / "nope")).stderr
    assert "is this project" in run(str(ROOT)).stderr


def test_help():
    proc = run("--help")
    assert proc.returncode == 0 and "--dry-run" in proc.stdout and "SCX_DIR" in proc.stdout


# -- dry run, export, idempotence ---------------------------------------------------

def test_dry_run_writes_nothing(scx):
    before = tree_hash(scx)
    proc = run("--dry-run", str(scx))
    assert proc.returncode == 0, proc.stderr
    assert tree_hash(scx) == before
    assert "would create scheds/rust/scx_pandemonium/build.rs" in proc.stdout
    assert "would register scheds/rust/scx_pandemonium" in proc.stdout
    assert "nothing written" in proc.stdout


def test_export_files_and_member(scx):
    proc = run(str(scx))
    assert proc.returncode == 0, proc.stderr
    out = scx / "scheds/rust/scx_pandemonium"
    # copied as they are
    for rel in ("src/bpf/main.bpf.c", "src/bpf/intf.h", "README.md", "LICENSE"):
        assert (out / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
    assert (out / "src/main.rs").is_file() and (out / "tests/cli.rs").is_file()
    # not exported
    for rel in ("target", "include", "tests/vm", ".ci", "Cargo.lock", "pandemonium.py",
                "export_scx.py", "systemd", "tools", ".gitignore"):
        assert not (out / rel).exists(), rel
    assert not [p for p in out.rglob("*.py")]
    # registered, in sorted position, other members untouched
    root = tomllib.loads((scx / "Cargo.toml").read_text())
    assert root["workspace"]["members"] == ["scheds/rust/scx_dummy",
                                            "scheds/rust/scx_pandemonium",
                                            "scheds/rust/scx_zeta"]
    assert root["profile"]["release"]["lto"] == "thin"


def test_exported_manifest_with_registry_deps(scx):
    assert run(str(scx)).returncode == 0
    ours = tomllib.loads((ROOT / "Cargo.toml").read_text())
    got = tomllib.loads((scx / "scheds/rust/scx_pandemonium/Cargo.toml").read_text())
    assert got["package"]["name"] == "scx_pandemonium"
    assert got["package"]["version"] == ours["package"]["version"]
    assert "profile" not in got
    # our build.rs is exported as it is, so it keeps the build-dependencies it uses
    assert got["build-dependencies"] == ours["build-dependencies"]
    # without monorepo crates in the checkout, registry versions stay
    assert got["dependencies"] == ours["dependencies"]
    assert got.get("dev-dependencies") == ours.get("dev-dependencies")
    assert got["lib"] == ours["lib"] and got["bin"] == ours["bin"]
    # every target's file is exported with it (src/bin/, src/examples/)
    assert got["example"] == ours["example"]
    out = scx / "scheds/rust/scx_pandemonium"
    assert all((out / t["path"]).is_file() for t in [*got["bin"], *got["example"]])


def test_exported_manifest_uses_monorepo_crates(scx_with_crates):
    scx = scx_with_crates
    assert run("--no-fmt", str(scx)).returncode == 0
    got = tomllib.loads((scx / "scheds/rust/scx_pandemonium/Cargo.toml").read_text())
    # the monorepo's path and version, our features (autopower) kept
    assert got["dependencies"]["scx_utils"] == {"path": "../../../rust/scx_utils",
                                                "version": "1.2.3", "features": ["autopower"]}
    # libbpf-sys links "bpf": one libbpf-rs version per workspace, the one scx_utils uses
    assert got["dependencies"]["libbpf-rs"] == "=0.26.0"
    # version.workspace resolved from [workspace.package]
    ours = tomllib.loads((ROOT / "Cargo.toml").read_text())["build-dependencies"]
    assert got["build-dependencies"] == {**ours,
                                         "scx_cargo": {"path": "../../../rust/scx_cargo",
                                                       "version": "1.2.3"}}


def test_workspace_dependencies_are_used(scx):
    (scx / "Cargo.toml").write_text(
        ROOT_MANIFEST + '\n[workspace.dependencies]\nserde = { version = "1.0.200" }\n')
    assert run("--no-fmt", str(scx)).returncode == 0
    got = tomllib.loads((scx / "scheds/rust/scx_pandemonium/Cargo.toml").read_text())
    assert got["dependencies"]["serde"] == {"workspace": True, "features": ["derive"]}


def test_build_rs_and_build_support_are_ours_unchanged(scx):
    """One build.rs for both homes: formatting with cargo fmt changes nothing either."""
    assert run(str(scx)).returncode == 0
    out = scx / "scheds/rust/scx_pandemonium"
    ours = ["build.rs", *(p.relative_to(ROOT).as_posix()
                          for p in sorted((ROOT / "src/build_support").iterdir()) if p.is_file())]
    assert "src/build_support/clang.rs" in ours
    assert "src/build_support/system_packages.tsv" in ours
    for rel in ours:
        assert (out / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
    # every env! the crate reads at compile time is provided by that build.rs
    build = (out / "build.rs").read_text()
    needed = set(re.findall(r'env!\("(PANDEMONIUM_\w+)"\)', (ROOT / "src/version.rs").read_text()))
    assert needed and all(f"cargo:rustc-env={name}=" in build for name in needed)
    # build.rs mirrors headers into the source tree only where .gitignore asks (not exported)
    assert 'header_mirror::wanted(gitignore.as_deref())' in build


def test_second_run_changes_nothing(scx):
    assert run(str(scx)).returncode == 0
    first = tree_hash(scx)
    proc = run(str(scx))
    assert proc.returncode == 0, proc.stderr
    assert tree_hash(scx) == first
    assert "is up to date" in proc.stdout
    assert "would" not in run("--dry-run", str(scx)).stdout


def test_stale_files_of_an_earlier_export_are_removed(scx):
    assert run("--no-fmt", str(scx)).returncode == 0
    out = scx / "scheds/rust/scx_pandemonium"
    (out / "src/old_module").mkdir()
    (out / "src/old_module/gone.rs").write_text("// renamed upstream\n")
    (out / "meson.build").write_text("# the monorepo's own file\n")
    proc = run("--no-fmt", str(scx))
    assert "delete scheds/rust/scx_pandemonium/src/old_module/gone.rs" in proc.stdout
    assert not (out / "src/old_module").exists()
    assert (out / "meson.build").exists()  # top-level files we do not produce are left alone


def test_without_cargo_the_export_is_not_formatted(scx, monkeypatch, capsys):
    monkeypatch.setattr(export_scx.shutil, "which", lambda *a, **k: None)
    monkeypatch.setenv("HOME", str(scx / "nohome"))
    assert export_scx.main([str(scx)]) == 0
    assert "cargo not found" in capsys.readouterr().out
    assert (scx / "scheds/rust/scx_pandemonium/build.rs").is_file()


# -- pieces -------------------------------------------------------------------------

@pytest.mark.parametrize("before, after", [
    # sorted: inserted in place, in the list's own layout
    ('members = [ "a/x",\n    "scheds/rust/scx_z",\n]',
     'members = [ "a/x",\n    "scheds/rust/scx_pandemonium",\n    "scheds/rust/scx_z",\n]'),
    ('members = ["scheds/rust/scx_a", "scheds/rust/scx_b"]',
     'members = ["scheds/rust/scx_a", "scheds/rust/scx_b", "scheds/rust/scx_pandemonium"]'),
    ('members = ["tools/z"]', 'members = ["scheds/rust/scx_pandemonium", "tools/z"]'),
    ('members = [\n  "a", # first\n  "b",\n]', 'members = [\n  "a", # first\n  "b",\n  '
                                               '"scheds/rust/scx_pandemonium",\n]'),
    # unsorted: appended
    ('members = ["z", "a"]', 'members = ["z", "a", "scheds/rust/scx_pandemonium"]'),
    ("members = []", 'members = ["scheds/rust/scx_pandemonium"]'),
])
def test_register_member(before, after):
    text = f"[workspace]\n{before}\nresolver = \"2\"\n\n[profile.release]\nlto = true\n"
    assert export_scx.register_member(text) == text.replace(before, after)


def test_register_member_already_covered():
    assert export_scx.register_member(
        '[workspace]\nmembers = ["scheds/rust/scx_pandemonium"]\n') is None
    assert export_scx.register_member('[workspace]\nmembers = ["scheds/rust/*"]\n') is None
    new = export_scx.register_member('[workspace]\nresolver = "2"\n')
    assert tomllib.loads(new)["workspace"] == {"members": ["scheds/rust/scx_pandemonium"],
                                               "resolver": "2"}


def test_manifest_round_trips_through_dump_toml():
    doc = tomllib.loads((ROOT / "Cargo.toml").read_text())
    assert tomllib.loads(export_scx.dump_toml(doc)) == doc
    tricky = {"package": {"name": "x", "metadata": {"scx": {"ci": {"blocklist": ["a b"]}}}},
              "target": {"cfg(unix)": {"dependencies": {"nix": {"version": "0.30"}}}},
              "features": {"default": [], "x": ["nix/y"]}}
    assert tomllib.loads(export_scx.dump_toml(tricky)) == tricky


# -- the exported crate builds in the fixture workspace -----------------------------

@slow
@pytest.mark.skipif(os.environ.get("PANDEMONIUM_SLOW_TESTS") != "1",
                    reason="slow (full cargo build): set PANDEMONIUM_SLOW_TESTS=1")
def test_exported_crate_builds_in_the_workspace(scx):
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
    if not os.path.exists(cargo):
        pytest.skip("cargo not installed")
    # the project's lock file pins the registry dependencies to versions known to build
    shutil.copy(ROOT / "Cargo.lock", scx / "Cargo.lock")
    assert run(str(scx)).returncode == 0
    env = cargo_env()  # BPF_CLANG as pandemonium.py picks it
    env.setdefault("CARGO_TARGET_DIR", str(scx / "target"))
    meta = subprocess.run([cargo, "metadata", "--format-version=1", "--no-deps"], cwd=scx,
                          env=env, capture_output=True, text=True)
    assert meta.returncode == 0 and '"name":"scx_pandemonium"' in meta.stdout, meta.stderr
    build = subprocess.run([cargo, "build", "--release", "-p", "scx_pandemonium"], cwd=scx,
                           env=env, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-5000:]
    # build.rs names only files that exist there: a missing one would rerun it on every build
    again = subprocess.run([cargo, "build", "--release", "-p", "scx_pandemonium"], cwd=scx,
                           env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "Compiling scx_pandemonium" not in again.stderr, \
        again.stderr[-3000:]
    binary = Path(env["CARGO_TARGET_DIR"]) / "release" / "scx_pandemonium"
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    assert "-std=gnu23" in version and "vmlinux.h: " in version, version
    # the monorepo's source tree is left alone: no header mirror without our .gitignore
    assert not (scx / "scheds/rust/scx_pandemonium/include").exists()


def test_a_crate_we_did_not_write_is_replaced_only_on_request(scx):
    theirs = scx / "scheds/rust/scx_pandemonium"
    crate(theirs, "scx_pandemonium", "5.20.0")
    (theirs / "src/upstream_only.rs").write_text("// upstream's\n")
    (theirs / "pandemonium.py").write_text("# upstream's tool\n")
    before = tree_hash(scx)
    proc = run("--no-fmt", str(scx))
    assert proc.returncode == 1 and "--replace" in proc.stderr
    assert "left as they are: pandemonium.py" in proc.stderr
    assert tree_hash(scx) == before
    proc = run("--no-fmt", "--replace", str(scx))
    assert proc.returncode == 0, proc.stderr
    assert "delete scheds/rust/scx_pandemonium/src/upstream_only.rs" in proc.stdout
    assert (theirs / "pandemonium.py").exists() and not (theirs / "src/upstream_only.rs").exists()
    assert (theirs / "Cargo.toml").read_text().startswith(export_scx.MARKER)
    assert run("--no-fmt", str(scx)).returncode == 0  # ours now: no --replace needed


def test_workspace_lints_are_inherited(scx):
    (scx / "Cargo.toml").write_text(ROOT_MANIFEST + '\n[workspace.lints.rust]\nunused = "warn"\n')
    assert run("--no-fmt", str(scx)).returncode == 0
    got = tomllib.loads((scx / "scheds/rust/scx_pandemonium/Cargo.toml").read_text())
    assert got["lints"] == {"workspace": True}
