"""tools/packaging/arch/PKGBUILD, read by bash as makepkg reads it (no pacman needed): its fields,
the files package() installs, and build()/package() run against this checkout's existing release
build (a no-op cargo build; skipped when there is no build)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tools.pandemonium import build
from tools.pandemonium import install
from tools.pandemonium import packages as pkgs
from tools.pandemonium.common import cargo_target_dir, tools_binary

ROOT = Path(__file__).resolve().parents[1]

PKGBUILD = ROOT / "tools/packaging/arch/PKGBUILD"
SCALARS = ("pkgname", "_crate", "pkgver", "pkgrel", "pkgdesc")
ARRAYS = ("arch", "license", "depends", "makedepends", "provides", "conflicts", "backup",
          "options", "source", "sha256sums")
# base-devel, which makepkg assumes, brings these build tools (pacman names).
BASE_DEVEL = {"make", "pkgconf", "gcc"}
# Shared libraries of the binary -> the Arch package that ships them.
ARCH_LIB_PACKAGES = {"libelf.so": "libelf", "libz.so": "zlib", "libgcc_s.so": "gcc-libs",
                     "libc.so": "glibc", "libm.so": "glibc", "ld-linux-x86-64.so": "glibc"}


def bash(script: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, **kw)


def sourced(body: str) -> str:
    """`body` after sourcing the PKGBUILD as makepkg does (startdir = its directory)."""
    return f'set -e\nstartdir={PKGBUILD.parent}\nsource {PKGBUILD}\n{body}'


def read_pkgbuild() -> dict:
    """Scalars as strings, arrays as lists, and the functions it defines ("functions")."""
    script = sourced("\n".join(
        [f'printf "%s\\t%s\\n" {v} "${v}"' for v in SCALARS]
        + [f'printf "%s\\t" {a}; printf "%s\\x1f" "${{{a}[@]}}"; echo' for a in ARRAYS]
        + ['printf "functions\\t%s\\n" "$(compgen -A function | tr "\\n" " ")"']))
    proc = bash(script)
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in proc.stdout.split("\n"):  # not splitlines(): it also splits at \x1f
        key, _, value = line.partition("\t")
        if key in SCALARS:
            out[key] = value
        elif key == "functions":
            out[key] = value.split()
        elif key:
            out[key] = [v for v in value.split("\x1f") if v]
    return out


@pytest.fixture(scope="module")
def pkg() -> dict:
    return read_pkgbuild()


def test_fields(pkg):
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]
    assert pkg["pkgname"] == f"{cargo['name']}-git" and pkg["_crate"] == cargo["name"]
    assert pkg["arch"] == ["x86_64"]
    assert pkg["license"] == [cargo["license"]] == ["GPL-2.0-only"]
    assert {"libelf", "zlib"} <= set(pkg["depends"])
    assert {"cargo", "clang"} <= set(pkg["makedepends"])
    assert re.fullmatch(r"[1-9]\d*", pkg["pkgrel"])
    assert re.fullmatch(re.escape(cargo["version"]) + r"\.r\d+\.g[0-9a-f]{7}", pkg["pkgver"])
    assert {"pkgver", "build", "package"} <= set(pkg["functions"])
    # the package provides scx_pandemonium alone: never the distribution's whole scx-scheds
    assert pkg["provides"] == [cargo["name"]]
    assert cargo["name"] in pkg["conflicts"] and "scx-scheds" in pkg["conflicts"]
    assert not [p for p in pkg["provides"] if p.startswith("scx-scheds")]
    assert pkg["backup"] == [install.Layout().env_file.lstrip("/")]
    # the checkout the PKGBUILD sits in, whatever directory that is
    assert pkg["source"] == [f"{cargo['name']}::git+file://{ROOT}"]
    assert pkg["sha256sums"] == ["SKIP"]


def test_every_build_tool_of_the_package_table_is_a_dependency(pkg):
    """src/build_support/system_packages.tsv's build group, by pacman name: depends, makedepends or
    base-devel."""
    needed = set(pkgs.packages(pkgs.group("build"), "pacman"))
    assert needed <= set(pkg["depends"]) | set(pkg["makedepends"]) | BASE_DEVEL, needed


def test_files_package_installs_exist_in_the_repo():
    body = bash(sourced("declare -f package"))
    assert body.returncode == 0, body.stderr
    sources = re.findall(r"install -D\S*\s+(\S+)\s", body.stdout)
    assert "LICENSE" in sources and "README.md" in sources
    # pandemonium.py install copies the two binaries and renders these two
    assert "pandemonium.py install --no-build" in body.stdout
    for rel in [*sources, "pandemonium.py", install.UNIT_TEMPLATE.relative_to(ROOT).as_posix(),
                install.DEFAULT_TEMPLATE.relative_to(ROOT).as_posix()]:
        assert (ROOT / rel).is_file(), rel


def test_pkgver_function_matches_the_checkout():
    proc = bash(sourced(f'srcdir={ROOT.parent}; _crate={ROOT.name}; cd "$srcdir"; pkgver'))
    assert proc.returncode == 0, proc.stderr
    count = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()
    version = tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"]
    assert proc.stdout == f"{version}.r{count}.g{head}"


def test_the_binary_needs_only_what_depends_lists(pkg):
    binary = cargo_target_dir() / "release" / "scx_pandemonium"
    if not binary.is_file() or not shutil.which("ldd"):
        pytest.skip(f"no release build at {binary} (./pandemonium.py build), or no ldd")
    libs = [Path(lib).name for lib in re.findall(r"^\s*(\S+\.so)[.\d]*\s", subprocess.run(
        ["ldd", str(binary)], capture_output=True, text=True).stdout, re.M)]
    libs = [lib for lib in libs if not lib.startswith("linux-vdso")]
    assert "libelf.so" in libs and "libz.so" in libs
    unknown = [lib for lib in libs if lib not in ARCH_LIB_PACKAGES]
    assert not unknown, f"which Arch package ships {unknown}? add it to depends and this map"
    assert {ARCH_LIB_PACKAGES[lib] for lib in libs} <= set(pkg["depends"])


def test_build_and_package_run_against_the_existing_build(tmp_path):
    binary = cargo_target_dir() / "release" / "scx_pandemonium"
    if not binary.is_file():
        pytest.skip(f"no release build at {binary}: build first (./pandemonium.py build); "
                    "this test only re-runs cargo on an existing build")
    if not shutil.which("cargo", path=build.cargo_env()["PATH"]):
        pytest.skip("cargo not installed")
    srcdir, pkgdir = tmp_path / "src", tmp_path / "pkg"
    srcdir.mkdir()
    # makepkg's clone of the checkout, minus the clone: the checkout itself, already built
    (srcdir / "scx_pandemonium").symlink_to(ROOT, target_is_directory=True)
    # build.rs reruns when BPF_CLANG differs from the build's: use the tools' own cargo env
    env = dict(build.cargo_env(), CARGO_TARGET_DIR=str(cargo_target_dir()))
    proc = bash(sourced(f'srcdir={srcdir}; pkgdir={pkgdir}\n'
                        'cd "$srcdir"; build\ncd "$srcdir"; package'),
                env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # The existing target dir was used: at most our crate is rebuilt (sources edited since the
    # last build), never a dependency.
    assert set(re.findall(r"Compiling (\S+)", proc.stderr)) <= {"scx_pandemonium"}, proc.stderr

    files = sorted(p.relative_to(pkgdir).as_posix() for p in pkgdir.rglob("*") if p.is_file())
    assert files == ["etc/default/pandemonium",
                     "usr/bin/pandemonium-tools",
                     "usr/bin/scx_pandemonium",
                     "usr/lib/systemd/system/pandemonium.service",
                     "usr/share/doc/scx_pandemonium-git/README.md",
                     "usr/share/doc/scx_pandemonium-git/systemd.md",
                     "usr/share/licenses/scx_pandemonium-git/LICENSE"]
    # the scheduler and its tools, both as cargo built them, both executable
    for installed, built in (("usr/bin/scx_pandemonium", binary),
                             ("usr/bin/pandemonium-tools", tools_binary())):
        assert (pkgdir / installed).read_bytes() == built.read_bytes(), installed
        assert os.stat(pkgdir / installed).st_mode & 0o7777 == 0o755, installed
    unit = (pkgdir / "usr/lib/systemd/system/pandemonium.service").read_text()
    assert "\nExecStart=/usr/bin/scx_pandemonium $PANDEMONIUM_ARGS\n" in unit
    assert "\nEnvironmentFile=-/etc/default/pandemonium\n" in unit
    for installed, ours in (("usr/share/licenses/scx_pandemonium-git/LICENSE", "LICENSE"),
                            ("usr/share/doc/scx_pandemonium-git/README.md", "README.md"),
                            ("usr/share/doc/scx_pandemonium-git/systemd.md", "systemd/README.md"),
                            ("etc/default/pandemonium", "systemd/pandemonium.default")):
        assert (pkgdir / installed).read_bytes() == (ROOT / ours).read_bytes(), installed
