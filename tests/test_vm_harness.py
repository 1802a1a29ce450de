"""Host-only tests of the VM harness's pure parts: no network, no root, no QEMU."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import shutil
import struct
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from tools.pandemonium.common import PROJECT_ROOT, PandemoniumError
from tools.pandemonium.vm import accel, guest_init, initramfs, qemu
from tools.pandemonium.vm.apt_private import signature_failed_suites
from tools.pandemonium.vm.apt_sources import (parse_deb822, parse_one_line, pick_debian_mirror,
                                              read_system_sources)
from tools.pandemonium.vm.console import ConsoleState, extract_results, is_oops
from tools.pandemonium.vm.cpio import Archive
from tools.pandemonium.vm.elfdeps import parse_ldd, shared_libs
from tools.pandemonium.vm.kernel import bzimage_version, choose_version, kernel_versions

needs = lambda tool: pytest.mark.skipif(not shutil.which(tool), reason=f"{tool} not installed")  # noqa: E731


# -- apt sources -----------------------------------------------------------------

DEB822 = """\
Types: deb
# a snapshot comment
URIs: http://mirror.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.org/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: https://thirdparty.example.com/node_20.x
Suites: nodistro
Components: main
Signed-By: /usr/share/keyrings/nodesource.gpg
"""


def test_deb822_picks_main_archive_not_security_or_third_party():
    entries = parse_deb822(DEB822)
    assert [e.uris[0] for e in entries] == [
        "http://mirror.example.org/debian", "http://mirror.example.org/debian-security",
        "https://thirdparty.example.com/node_20.x"]
    uri, keyring = pick_debian_mirror(entries)
    assert uri == "http://mirror.example.org/debian"
    assert keyring == "/usr/share/keyrings/debian-archive-keyring.gpg"


def test_deb822_disabled_stanza_and_inline_key_are_skipped():
    text = ("Types: deb\nURIs: http://off.example.org/debian\nSuites: trixie\n"
            "Components: main\nEnabled: no\n\n"
            "Types: deb\nURIs: http://on.example.org/debian/\nSuites: trixie\nComponents: main\n"
            "Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n abc\n")
    uri, keyring = pick_debian_mirror(parse_deb822(text))
    assert uri == "http://on.example.org/debian"  # trailing slash dropped
    assert keyring is None  # inline key: fall back to the default keyring


def test_one_line_format_with_options():
    text = """\
# deb http://commented.example.org/debian bookworm main
deb [arch=amd64] https://thirdparty.example.com/apt cloud-sdk-bookworm main
deb http://security.example.org/debian-security bookworm-security main
deb-src http://src.example.org/debian bookworm main
deb [signed-by=/etc/k.gpg arch=amd64] http://mirror.example.net/debian trixie main contrib
"""
    entries = parse_one_line(text)
    assert len(entries) == 4
    assert entries[0].options == {"arch": "amd64"}
    uri, keyring = pick_debian_mirror(entries)
    assert (uri, keyring) == ("http://mirror.example.net/debian", "/etc/k.gpg")


def test_no_debian_source_is_an_error():
    with pytest.raises(LookupError):
        pick_debian_mirror(parse_one_line("deb http://x.example.com/apt nodistro main\n"))


def test_read_system_sources_ignores_disabled_files(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d/debian.sources").write_text(DEB822)
    (tmp_path / "sources.list.d/other.list.disabled-by-farm").write_text(
        "deb http://disabled.example.org/debian bookworm main\n")
    (tmp_path / "sources.list").write_text("deb http://first.example.org/debian sid main\n")
    entries = read_system_sources(tmp_path)
    assert all("disabled" not in e.uris[0] for e in entries)
    assert pick_debian_mirror(entries)[0] == "http://first.example.org/debian"


def test_signature_failures_are_attributed_to_suites():
    out = """\
Hit:1 http://m.example.org/debian trixie-backports InRelease
Get:2 http://m.example.org/debian sid InRelease [193 kB]
Err:2 http://m.example.org/debian sid InRelease
  The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 762F67A0B2C39DE4
W: GPG error: http://m.example.org/debian sid InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 762F67A0B2C39DE4
E: The repository 'http://m.example.org/debian experimental InRelease' is not signed.
"""
    assert signature_failed_suites(out) == {"sid", "experimental"}
    assert signature_failed_suites("Hit:1 http://m.example.org/debian sid InRelease\n") == set()


# -- kernel selection --------------------------------------------------------------

PKGNAMES = [
    "linux-image-6.18.15+deb13-cloud-amd64",  # 6.x: full image with config
    "linux-image-7.0.13+deb13-cloud-amd64", "linux-binary-7.0.13+deb13-cloud-amd64",  # no base
    "linux-image-7.2.13+deb14-cloud-amd64", "linux-binary-7.2.13+deb14-cloud-amd64",
    "linux-base-7.2.13+deb14-cloud-amd64",
    "linux-image-7.3.4+deb13-cloud-amd64", "linux-binary-7.3.4+deb13-cloud-amd64",
    "linux-base-7.3.4+deb13-cloud-amd64", "linux-binary-unsigned-7.3.4+deb13-cloud-amd64",
    "linux-binary-7.10.1+deb14-cloud-amd64",  # newest, but no config published
    "linux-image-7.3-cloud-amd64",  # release candidate naming: not a +debN ABI
    "linux-image-7.3.4+deb13-amd64", "linux-headers-7.3.4+deb13-cloud-amd64",
]


def test_kernel_versions_groups_packages_by_version():
    versions = kernel_versions(PKGNAMES)
    assert versions["7.3.4+deb13-cloud-amd64"] == {"image", "binary", "base"}
    assert "7.3-cloud-amd64" not in versions
    assert "7.3.4+deb13-amd64" not in versions  # other flavour


def test_choose_version_latest_prefix_full_and_errors():
    versions = kernel_versions(PKGNAMES)
    full = {"6.18.15+deb13-cloud-amd64"}
    assert choose_version("latest", versions, full) == "7.3.4+deb13-cloud-amd64"
    assert choose_version("7.2", versions, full) == "7.2.13+deb14-cloud-amd64"
    assert choose_version("6.18.15+deb13-cloud-amd64", versions, full) == "6.18.15+deb13-cloud-amd64"
    with pytest.raises(PandemoniumError, match="Published without image or config: .*7.0.13"):
        choose_version("7.0", versions, full)
    with pytest.raises(PandemoniumError, match="Published without image or config: 6.18.15"):
        choose_version("6.18.15+deb13-cloud-amd64", versions, set())  # meta-only image


def test_bzimage_version_from_setup_header(tmp_path):
    head = bytearray(0x1000)
    head[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", head, 0x20E, 0x600)
    text = b"7.3.4+deb13-cloud-amd64 (debian-kernel@lists) #1 SMP\0"
    head[0x800:0x800 + len(text)] = text
    (tmp_path / "vmlinuz").write_bytes(bytes(head))
    assert bzimage_version(tmp_path / "vmlinuz") == "7.3.4+deb13-cloud-amd64"
    (tmp_path / "junk").write_bytes(b"\0" * 0x1000)
    assert bzimage_version(tmp_path / "junk") is None


# -- console transcript ------------------------------------------------------------

def _dump(files: dict[str, bytes]) -> tuple[list[str], str]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    b64 = base64.encodebytes(raw).decode().splitlines()
    return b64, hashlib.sha256(raw).hexdigest()


def test_transcript_exit_code_and_results(tmp_path):
    b64, digest = _dump({"./stats.json": b'{"ok": 1}', "./sub/log.txt": b"hi\n"})
    transcript = [
        "\x1bc\x1b[?7lSeaBIOS (version 1.16)\r",
        "[    0.79] mtrr: your CPUs had inconsistent fixed MTRR settings\r",
        "user output mentioning @@PANDEMONIUM-EXIT@@ 0 wrongnonce\r",
        "@@PANDEMONIUM-EXIT@@ $rc $PANDEMONIUM_NONCE\r",  # e.g. the command cat'ing /init
        "@@PANDEMONIUM-EXIT@@ 3 n0nce\r",
        "@@PANDEMONIUM-RESULTS-BEGIN@@ n0nce\r",
        *b64[:1], "[   12.5] sched_ext: a stray kernel line inside the dump", *b64[1:],
        f"@@PANDEMONIUM-RESULTS-END@@ n0nce {digest}\r",
        "[   13.0] reboot: Power down\r",
    ]
    state = ConsoleState("n0nce")
    for line in transcript:
        state.feed(line + "\n")
    assert state.exit_code == 3
    assert not state.oops_seen
    names = extract_results(state.results_tar(), tmp_path)
    assert sorted(names) == ["./stats.json", "./sub/log.txt"]
    assert (tmp_path / "sub/log.txt").read_text() == "hi\n"


def test_transcript_damaged_dump_is_detected():
    b64, digest = _dump({"./a": b"x" * 5000})
    state = ConsoleState("n")
    for line in ["@@PANDEMONIUM-EXIT@@ 0 n", "@@PANDEMONIUM-RESULTS-BEGIN@@ n",
                 *b64[:-1], f"@@PANDEMONIUM-RESULTS-END@@ n {digest}"]:
        state.feed(line)
    with pytest.raises(ValueError, match="checksum"):
        state.results_tar()
    cut = ConsoleState("n")
    for line in ["@@PANDEMONIUM-RESULTS-BEGIN@@ n", *b64]:
        cut.feed(line)
    with pytest.raises(ValueError, match="cut short"):
        cut.results_tar()
    assert ConsoleState("n").results_tar() is None


def test_oops_detection():
    oopses = [
        "[  112.1] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI",
        "[   5.0] BUG: kernel NULL pointer dereference, address: 0000000000000008",
        "[   5.0] general protection fault, probably for non-canonical address 0xdead",
        "[   9.9] Kernel panic - not syncing: Fatal exception",
        "[   9.9] BUG: unable to handle page fault for address: ffff",
    ]
    for line in oopses:
        assert is_oops(line), line
    for line in ["[    2.4] reboot: Power down", "hackbench: Time: 0.53",
                 "[ 1.0] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100",
                 "sched_ext: BPF scheduler \"pandemonium\" disabled (runtime error)", "DEBUG: fine"]:
        assert not is_oops(line), line
    state = ConsoleState("n")
    for line in ["booting", oopses[0], "[  112.2] RIP: 0010:__schedule+0x1a/0x900"]:
        state.feed(line)
    assert state.oops_seen and state.exit_code is None
    assert state.oops_lines == [oopses[0]]


# -- shared libraries ---------------------------------------------------------------

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd6a5f2000)
\tlibnuma.so.1 => /lib/x86_64-linux-gnu/libnuma.so.1 (0x00007f0d7a5c0000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0d7a3df000)
\tlibbpf.so.1 => not found
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0d7a5f3000)
"""


def test_parse_ldd():
    paths, missing = parse_ldd(LDD)
    assert paths == ["/lib/x86_64-linux-gnu/libnuma.so.1", "/lib/x86_64-linux-gnu/libc.so.6",
                     "/lib64/ld-linux-x86-64.so.2"]
    assert missing == ["libbpf.so.1"]
    assert parse_ldd("\tstatically linked\n") == ([], [])
    assert parse_ldd("\tnot a dynamic executable\n") == ([], [])


@needs("ldd")
def test_shared_libs_of_a_real_binary_include_the_loader():
    libs = shared_libs(Path(shutil.which("ls")).resolve())
    assert any("libc.so" in lib for lib in libs)
    assert any("ld-linux" in lib for lib in libs)


# -- cpio / initramfs ---------------------------------------------------------------

def _cpio_list(data: bytes) -> list[str]:
    proc = subprocess.run(["cpio", "-t", "--quiet"], input=data, capture_output=True, check=True)
    return proc.stdout.decode().split()


@needs("cpio")
def test_cpio_archive_lists_and_extracts(tmp_path):
    archive = Archive()
    archive.add_file("/usr/local/bin/tool", b"#!/bin/sh\necho hi\n", 0o755)
    archive.add_symlink("/bin/sh", "/bin/busybox")
    archive.add_dir("/tmp", 0o1777)
    buf = io.BytesIO()
    archive.write(buf)
    data = buf.getvalue()
    assert len(data) % 4 == 0
    names = _cpio_list(data)
    assert names == ["bin", "tmp", "usr", "usr/local", "usr/local/bin", "bin/sh", "usr/local/bin/tool"]
    subprocess.run(["cpio", "-idm", "--quiet"], input=data, cwd=tmp_path, check=True)
    tool = tmp_path / "usr/local/bin/tool"
    assert tool.read_bytes() == b"#!/bin/sh\necho hi\n"
    assert tool.stat().st_mode & 0o777 == 0o755
    assert os.readlink(tmp_path / "bin/sh") == "/bin/busybox"


@needs("cpio")
@needs("busybox")
def test_build_base_contents_cache_and_overlay(tmp_path, monkeypatch):
    monkeypatch.setenv("PANDEMONIUM_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "config"
    config.write_text("CONFIG_SCHED_CLASS_EXT=y\n")
    payload = tmp_path / "payload"
    (payload / "sub").mkdir(parents=True)
    (payload / "sub/data.txt").write_text("data")
    script = tmp_path / "helper.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    files = [initramfs.parse_add(str(script)), initramfs.parse_add(f"{payload}:/opt/")]
    base = initramfs.build_base("7.3.4+deb13-cloud-amd64", config, files)
    names = set(_cpio_list(gzip.decompress(base.read_bytes())))
    for expected in ("init", "bin/busybox", "bin/sh", "boot/config-7.3.4+deb13-cloud-amd64",
                     "usr/local/bin/helper.sh", "opt/payload/sub/data.txt", "etc/passwd",
                     "results", "proc", "sys", "dev", "tmp"):
        assert expected in names, expected
    mtime = base.stat().st_mtime_ns
    assert initramfs.build_base("7.3.4+deb13-cloud-amd64", config, files) == base  # cache hit
    assert base.stat().st_mtime_ns >= mtime

    overlay = initramfs.run_overlay(["true"], "n")
    image = initramfs.assemble(base, overlay, tmp_path / "initrd")
    raw = image.read_bytes()
    start = len(raw) - len(overlay)
    assert start % 4 == 0 and raw[start:start + 6] == b"070701"
    assert _cpio_list(raw[start:]) == ["etc", "etc/pandemonium", "etc/pandemonium/run.sh"]


def test_parse_add_defaults():
    assert initramfs.parse_add("/usr/bin/stress-ng").guest == "/usr/local/bin/stress-ng"
    assert initramfs.parse_add("/a/b:/opt/x").guest == "/opt/x"
    assert initramfs.parse_add("/a/b:/opt/").guest == "/opt/b"
    with pytest.raises(PandemoniumError, match="must be absolute"):
        initramfs.parse_add("/a/b:relative")


def test_the_guest_gets_the_scheduler_and_the_tools_binary(tmp_path, monkeypatch):
    from tools.pandemonium.vm.runner import _guest_files

    release = tmp_path / "release"
    release.mkdir()
    for name in ("scx_pandemonium", "pandemonium-tools"):
        (release / name).write_bytes(b"#!/bin/sh\n")
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path))
    guest = [f.guest for f in _guest_files([], [], include_scheduler=True)]
    # The bench and stress drivers call both by name, from /usr/local/bin.
    assert guest == ["/usr/local/bin/scx_pandemonium", "/usr/local/bin/pandemonium-tools"]
    assert _guest_files([], [], include_scheduler=False) == []


def test_the_guest_drivers_run_the_tools_from_their_own_binary():
    for rel in ("tools/pandemonium/bench/guest/driver.sh", "tools/pandemonium/stress/driver.sh"):
        text = (PROJECT_ROOT / rel).read_text()
        assert not re.search(r"scx_pandemonium (probe|stress)\b", text), rel
        assert re.search(r"pandemonium-tools (probe|stress)\b", text), rel


# -- guest scripts ----------------------------------------------------------------

def test_init_script_is_valid_sh():
    subprocess.run(["sh", "-n"], input=guest_init.INIT.encode(), check=True)
    assert "@@PANDEMONIUM-EXIT@@ $rc $PANDEMONIUM_NONCE" in guest_init.INIT


def test_run_script_quoting_round_trips_through_sh():
    cmd = ["sh", "-c", "echo \"a  b\" '$HOME'; echo $FOO; exit 3"]
    script = guest_init.run_script(cmd, "n1", {"FOO": "it's"})
    proc = subprocess.run(["sh", "-c", script + 'sh -c "$PANDEMONIUM_CMD"; echo "rc=$? $PANDEMONIUM_NONCE"'],
                          capture_output=True, text=True)
    assert proc.stdout == "a  b $HOME\nit's\nrc=3 n1\n"
    with pytest.raises(ValueError):
        guest_init.run_script(["true"], "n", {"BAD-NAME": "x"})


# -- accel / qemu command line ----------------------------------------------------

def test_accel_modes_and_qemu_command():
    assert accel.resolve("tcg-multi", Path("/nonexistent")) == "tcg-multi"
    with pytest.raises(ValueError):
        accel.resolve("hvf", Path("/nonexistent"))
    cmd = qemu.qemu_command(Path("/k"), Path("/i"), cpus=4, mem_mb=1024, accel="tcg-single")
    joined = " ".join(cmd)
    assert "-accel tcg,thread=single" in joined and "-smp 4" in joined and "-m 1024" in joined
    assert "-no-reboot" in cmd and "panic=-1" in joined and "console=ttyS0" in joined
    # The deterministic mode must stay single-threaded: QEMU refuses icount with thread=multi.
    cmd = qemu.qemu_command(Path("/k"), Path("/i"), cpus=2, mem_mb=1024, accel="tcg-icount")
    joined = " ".join(cmd)
    assert "-accel tcg,thread=single" in joined and "-icount shift=0,sleep=off" in joined
    assert accel.resolve("tcg-icount", Path("/nonexistent")) == "tcg-icount"


def test_icount_shift_comes_from_the_environment_and_is_checked(monkeypatch):
    monkeypatch.setenv(accel.ICOUNT_SHIFT_ENV, "2")
    cmd = qemu.qemu_command(Path("/k"), Path("/i"), cpus=2, mem_mb=1024, accel="tcg-icount")
    assert "-icount shift=2,sleep=off" in " ".join(cmd)
    # Only tcg-icount reads it.
    assert "-icount" not in qemu.qemu_command(Path("/k"), Path("/i"), cpus=2, mem_mb=1024,
                                              accel="tcg-single")
    for bad in ("fast", "-1", "11"):
        monkeypatch.setenv(accel.ICOUNT_SHIFT_ENV, bad)
        with pytest.raises(PandemoniumError, match="PANDEMONIUM_ICOUNT_SHIFT"):
            qemu.qemu_command(Path("/k"), Path("/i"), cpus=2, mem_mb=1024, accel="tcg-icount")


@pytest.mark.parametrize("output, verdict", [
    ("[    0.9] Run /init as init process\n[    1.0] Kernel panic - not syncing: VFS\n",
     (True, "guest kernel booted under KVM")),
    ("KVM internal error. Suberror: 1\nemulation failure\n", (False, "KVM internal error")),
    ("", (False, "no guest kernel output under KVM within the probe time")),
])
def test_kvm_probe_reads_the_guest_console(tmp_path, monkeypatch, output, verdict):
    fake_qemu = tmp_path / "qemu"
    fake_qemu.write_text(f"#!/bin/sh\nprintf '{output}'\n")
    fake_qemu.chmod(0o755)
    monkeypatch.setattr(accel.os, "access", lambda *a: True)
    assert accel.probe_kvm(Path("/k"), qemu=str(fake_qemu)) == verdict


def test_auto_accel_without_qemu_names_the_package(monkeypatch, tmp_path):
    # A fresh machine: the KVM probe ran QEMU before anything checked for it, and died in
    # Popen with a traceback.
    monkeypatch.setattr(accel.shutil, "which", lambda *a, **k: None)
    monkeypatch.setattr(accel, "cache_dir", lambda *a: tmp_path)
    with pytest.raises(PandemoniumError, match="(?s)missing qemu-system-x86_64.*apt-get install"):
        accel.resolve("auto", Path("/k"))


def test_topology_splits_cpus_into_numa_nodes_and_smt_siblings():
    flat = qemu.parse_topology(None)
    assert flat.flat and flat.qemu_args(4, 1024) == ["-smp", "4"]
    assert qemu.parse_topology("") == flat
    topo = qemu.parse_topology("nodes=4,threads=2")
    assert (topo.nodes, topo.threads, str(topo)) == (4, 2, "nodes=4,threads=2")
    args = topo.qemu_args(64, 2050)
    assert args[:2] == ["-smp", "64,sockets=4,cores=8,threads=2"]
    # One RAM backend per node, its sizes adding up to -m (the last takes the remainder).
    sizes = [a.split("size=")[1] for a in args if a.startswith("memory-backend-ram")]
    assert sizes == ["512M", "512M", "512M", "514M"]
    assert "node,nodeid=3,memdev=mem3" in args and "cpu,node-id=3,socket-id=3" in args
    # SMT alone: one socket, no -numa.
    smt = qemu.parse_topology("threads=2").qemu_args(8, 1024)
    assert smt == ["-smp", "8,sockets=1,cores=4,threads=2"]
    cmd = qemu.qemu_command(Path("/k"), Path("/i"), cpus=32, mem_mb=2048, accel="tcg-icount",
                            topology=qemu.parse_topology("nodes=2,threads=2"))
    joined = " ".join(cmd)
    assert "-smp 32,sockets=2,cores=8,threads=2" in joined and "-m 2048" in joined
    assert joined.count("-numa node,") == 2
    for bad in ("nodes=0", "cores=2", "nodes=2,nodes=4", "nodes=x", "threads"):
        with pytest.raises(PandemoniumError):
            qemu.parse_topology(bad)
    with pytest.raises(PandemoniumError, match="do not split"):
        topo.qemu_args(12, 2048)
    with pytest.raises(PandemoniumError, match="128 MB per node"):
        topo.qemu_args(64, 256)


# -- CLI ----------------------------------------------------------------------------

def test_cli_parses_vm_options_and_reports_errors(capsys):
    from tools.pandemonium import cli

    args = cli.build_parser().parse_args(
        ["vm", "--cpus", "4", "--add", "/x:/y", "--add", "/z", "--accel", "tcg-multi", "uname", "-r"])
    assert (args.cpus, args.add, args.accel, args.cmd) == (4, ["/x:/y", "/z"], "tcg-multi", ["uname", "-r"])
    with pytest.raises(SystemExit) as exc:
        cli.main(["vm", "--no-scheduler", "--kernel", "/nonexistent/kdir", "--", "true"])
    assert exc.value.code == 1
    assert "kernel directory /nonexistent/kdir does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["vm", "--help"])
    assert exc.value.code == 0


def test_perf_wrapper_resolves_to_real_binary(tmp_path):
    from tools.pandemonium.vm.elfdeps import resolve_tool

    wrapper = tmp_path / "perf"
    wrapper.write_text('#!/bin/sh\nversion="$(uname -r)"\nexec "perf_${version%.*-*}" "$@"\n')
    wrapper.chmod(0o755)
    real = tmp_path / "perf_6.1"
    shutil.copy(Path(shutil.which("true")).resolve(), real)  # any ELF will do
    assert resolve_tool(str(wrapper)) == real
    assert resolve_tool(str(real)) == real


def _child(script: str) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def test_follow_copies_the_output_and_hands_over_every_line(tmp_path):
    from tools.pandemonium.vm.follow import EOF, follow

    seen = []
    proc = _child("printf 'one\\ntwo\\r\\n\\377 three'")
    with open(tmp_path / "log", "wb") as log:
        ended = follow(proc, log, seen.append, deadline=time.monotonic() + 30)
    proc.wait()
    assert ended == EOF
    assert seen == ["one", "two\r", "\ufffd three"]
    assert (tmp_path / "log").read_bytes() == b"one\ntwo\r\n\xff three"


def test_follow_stops_at_the_deadline_without_progress_or_when_told(tmp_path):
    from tools.pandemonium.vm.follow import STALLED, TIMEOUT, Stop, follow

    def stop_at_fatal(line):
        seen.append(line)
        if "fatal" in line:
            raise Stop("told to")
        return line.startswith("progress")

    log = open(tmp_path / "log", "wb")
    for script, stall_s, expect, lines in (
            ("echo progress; exec sleep 20", None, TIMEOUT, ["progress"]),
            ("echo progress; echo chatter; exec sleep 20", 0.3, STALLED, ["progress", "chatter"]),
            ("printf 'fatal x\\nafter\\n'; exec sleep 20", None, "told to", ["fatal x", "after"])):
        seen = []
        proc = _child(script)
        started = time.monotonic()
        ended = follow(proc, log, stop_at_fatal, deadline=started + 1.5, stall_s=stall_s)
        proc.kill()
        proc.wait()
        assert (ended, seen) == (expect, lines), script
        assert time.monotonic() - started < 10
    log.close()


def test_follow_ends_when_the_child_exits_though_its_output_stays_open(tmp_path):
    from tools.pandemonium.vm.follow import EOF, follow

    proc = _child("echo done; sleep 5 & exit 0")  # the background sleep keeps the pipe open
    with open(tmp_path / "log", "wb") as log:
        started = time.monotonic()
        ended = follow(proc, log, lambda line: None, deadline=started + 15)
    assert ended == EOF and time.monotonic() - started < 10
    proc.stdout.close()


def test_boot_stops_at_a_fatal_qemu_message(tmp_path):
    fake = tmp_path / "fake-qemu"
    fake.write_text("#!/bin/sh\necho booting\necho 'KVM internal error. Suberror: 1'\n"
                    "exec sleep 20\n")
    fake.chmod(0o755)
    lines = []
    res = qemu.boot([str(fake)], ConsoleState("n0nce"), timeout_s=15,
                    log_path=tmp_path / "vm-console.log", echo=False, on_line=lines.append)
    assert res.stop_reason == "QEMU reported 'KVM internal error'"
    assert not res.timed_out and not res.stalled and res.duration_s < 10
    assert lines == ["booting", "KVM internal error. Suberror: 1"]
