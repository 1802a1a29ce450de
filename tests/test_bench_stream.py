"""The console stream of finished steps (guest/driver.sh save, stream.StreamSaver)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tools.pandemonium.bench.driver import GUEST_DIR
from tools.pandemonium.bench.parse import parse_results
from tools.pandemonium.bench.stream import StreamSaver, replay

COST = "- - - - - -"


def frame(k: int, relpath: str, data: bytes, sha: str | None = None) -> list[str]:
    """What driver.sh save prints for one file (base64 wrapped at 76, as busybox does)."""
    gz = gzip.compress(data)
    b64 = base64.b64encode(gz).decode()
    return ([f"BENCH-SAVE-BEGIN {k} {relpath}"]
            + [b64[i:i + 76] for i in range(0, len(b64), 76)]
            + [f"BENCH-SAVE-END {k} {relpath} {sha or hashlib.sha256(gz).hexdigest()}"])


def step_lines(k: int, cores: int, it: int, sched: str, phase: str, out: bytes = b"idle\n",
               rc: int = 0) -> list[str]:
    """driver.sh's console lines for one finished step: output, steps.tsv line, progress."""
    line = f"{cores} {it} {sched} {phase} {rc} {100 * k} {100 * k + 50} {COST}"
    return (frame(k, f"raw/c{cores}-i{it}-{sched}.{phase}.out", out)
            + [f"BENCH-SAVE-STEP {k} {line}", f"BENCH-STEP {k} 99 {cores} {it} {sched} {phase} 0"])


def feed(saver: StreamSaver, lines: list[str]) -> StreamSaver:
    for line in lines:
        saver.feed(line + "\r\n")  # as the serial console delivers them
    return saver


# -- StreamSaver ----------------------------------------------------------------------------

def test_reassembles_files_steps_and_events_into_a_results_directory(tmp_path):
    out = b"x" * 5000 + b"\nlast line\n"  # several base64 lines
    lines = (frame(0, "env.txt", b"kernel 6.18-test\ncpus_present 2\n") + ["BENCH-START 2"]
             + ["BENCH-EVENT attach-failed c2-i1-bpfland exited (status 3)"]
             + step_lines(1, 2, 0, "eevdf", "idle", out)
             + step_lines(2, 2, 1, "bpfland", "idle", b"why it did not attach\n", rc=201)
             + ["BENCH-DONE"])
    s = feed(StreamSaver(tmp_path / "st"), lines)
    assert (s.total, s.done, s.damaged) == (2, True, [])
    assert (tmp_path / "st/raw/c2-i0-eevdf.idle.out").read_bytes() == out
    assert sorted(s.steps) == [1, 2]
    records, events, env = parse_results(tmp_path / "st")
    assert [(r.scheduler, r.rc, r.error) for r in records] == [
        ("eevdf", 0, None), ("bpfland", 201, "did not attach: why it did not attach")]
    assert events == ["attach-failed c2-i1-bpfland exited (status 3)"]
    assert env == {"kernel": "6.18-test", "cpus_present": "2"}


def test_a_whole_kernel_line_inside_a_block_is_skipped(tmp_path):
    block = frame(1, "raw/c2-i0-eevdf.idle.out", b"y" * 3000)
    block.insert(2, "[  812.331012] sched_ext: BPF scheduler \"pandemonium\" enabled")
    block.insert(4, "rcu: INFO: rcu_preempt self-detected stall on CPU")
    lines = ["[  812.3] noise BENCH-SAVE-BEGIN 1 raw/c2-i0-eevdf.idle.out"] + block[1:]
    s = feed(StreamSaver(tmp_path / "st"), lines + ["BENCH-SAVE-STEP 1 2 0 eevdf idle 0 1 2 "
                                                    + COST])
    assert s.damaged == []
    assert (tmp_path / "st/raw/c2-i0-eevdf.idle.out").read_bytes() == b"y" * 3000
    assert list(s.steps) == [1]


def test_a_kernel_line_torn_into_base64_fails_the_checksum_and_loses_that_step_only(tmp_path):
    torn = frame(1, "raw/c2-i0-eevdf.idle.out", os.urandom(2000))
    torn[3] = torn[3][:30] + "[ 9.1] int3: 0000" + torn[3][30:]  # not base64: line skipped
    lines = torn + ["BENCH-SAVE-STEP 1 2 0 eevdf idle 0 1 2 " + COST] \
        + step_lines(2, 2, 1, "pandemonium", "idle")
    s = feed(StreamSaver(tmp_path / "st"), lines)
    assert not (tmp_path / "st/raw/c2-i0-eevdf.idle.out").exists()
    assert list(s.steps) == [2]  # step 1's line came, its output did not: not recorded
    assert any("checksum mismatch" in d for d in s.damaged)
    assert any("step 1" in d and "did not arrive intact" in d for d in s.damaged)
    assert (tmp_path / "st/steps.tsv").read_text().split()[2] == "pandemonium"


def test_a_wrong_checksum_is_skipped_and_later_files_still_arrive(tmp_path):
    bad = frame(1, "raw/c2-i0-eevdf.idle.out", b"data", sha="0" * 64)
    s = feed(StreamSaver(tmp_path / "st"), bad + step_lines(2, 2, 1, "pandemonium", "idle"))
    assert "raw/c2-i0-eevdf.idle.out" not in s.saved
    assert "raw/c2-i1-pandemonium.idle.out" in s.saved
    assert len(s.damaged) == 1 and "checksum" in s.damaged[0]


def test_a_block_cut_short_by_the_crash_or_by_the_next_block_is_dropped(tmp_path):
    first = frame(1, "raw/c2-i0-eevdf.idle.out", b"a" * 500)[:-1]  # no END: next BEGIN comes
    s = feed(StreamSaver(tmp_path / "st"), first + step_lines(2, 2, 1, "pandemonium", "idle")
             + frame(3, "raw/c2-i1-eevdf.idle.out", b"b" * 500)[:2])  # then the guest died
    assert list(s.steps) == [2] and not s.done
    s.close()
    assert [("cut short" in d) for d in s.damaged] == [True, True]
    assert sorted(p.name for p in (tmp_path / "st/raw").iterdir()) == [
        "c2-i1-pandemonium.idle.out"]


def test_an_end_marker_of_another_file_or_a_path_outside_results_is_refused(tmp_path):
    a = frame(1, "raw/a.out", b"a")
    b = frame(2, "raw/b.out", b"b")
    evil = frame(3, "../../etc/passwd", b"root")
    s = feed(StreamSaver(tmp_path / "st"), a[:-1] + b[-1:] + evil)
    assert s.saved == set()
    assert "ended by the marker" in s.damaged[0] and "not a path" in s.damaged[1]
    assert not (tmp_path / "etc").exists()


def test_a_step_line_with_a_kernel_line_glued_on_is_not_taken(tmp_path):
    lines = frame(1, "raw/c2-i0-eevdf.idle.out", b"ok") + [
        "BENCH-SAVE-STEP 1 2 0 eevdf idle 0 1 2 - - - - - -[  3.2] BUG: unable to handle"]
    s = feed(StreamSaver(tmp_path / "st"), lines)
    assert s.steps == {} and (tmp_path / "st/steps.tsv").read_text() == ""


def test_replay_reads_a_saved_console_log(tmp_path):
    log_file = tmp_path / "vm-console.log"
    log_file.write_bytes(("\r\n".join(["# qemu ...", "\x1b[2J boot"] + step_lines(
        1, 2, 0, "eevdf", "idle")) + "\r\n").encode())
    s = replay(log_file, tmp_path / "st")
    assert list(s.steps) == [1]


# -- driver.sh under the host's shells --------------------------------------------------------

def _ncpu() -> int:
    return sum(1 for ln in Path("/proc/cpuinfo").read_text().splitlines()
               if ln.startswith("processor"))


def _busybox_only_path(tmp_path: Path) -> str:
    """A PATH of busybox applets only, as the guest's initramfs installs them."""
    bb = shutil.which("busybox")
    d = tmp_path / "bb"
    d.mkdir()
    for name in subprocess.run([bb, "--list"], capture_output=True, text=True).stdout.split():
        if name not in ("[", "[["):
            (d / name).symlink_to(bb)
    return str(d)


def _run_driver(tmp_path: Path, shell: str, **extra) -> tuple[subprocess.CompletedProcess, Path]:
    res = tmp_path / "results"
    n = _ncpu()
    env = dict(os.environ, BENCH_RESULTS=str(res), BENCH_NO_HOTPLUG="1", BENCH_STREAM="1",
               BENCH_RUNS=f"{n}:0:eevdf {n}:1:eevdf", BENCH_PHASES="idle busy", BENCH_D="1",
               BENCH_ATTACH_S="10", BENCH_STOP_S="10", TMPDIR=str(tmp_path))
    env.update(extra)
    cmd = ["sh", str(GUEST_DIR / "driver.sh")]
    if shell == "busybox":
        if not shutil.which("busybox"):
            pytest.skip("no busybox on this host")
        env["PATH"] = _busybox_only_path(tmp_path)
        cmd = [shutil.which("busybox"), "sh", str(GUEST_DIR / "driver.sh")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return proc, res


@pytest.mark.parametrize("shell", ["busybox", "sh"])
def test_driver_sh_streams_every_step_so_the_host_rebuilds_results(tmp_path, shell):
    """The real driver, with the guest's busybox applets only: what StreamSaver rebuilds from its
    console output is what it wrote to /results (steps.tsv, each output, env.txt)."""
    proc, res = _run_driver(tmp_path, shell)
    assert "BENCH-DONE" in proc.stdout, proc.stdout + proc.stderr
    s = feed(StreamSaver(tmp_path / "st"), proc.stdout.splitlines())
    assert s.damaged == [] and s.done and s.total == 4
    assert sorted(s.steps) == [1, 2, 3, 4]
    assert (tmp_path / "st/steps.tsv").read_text() == (res / "steps.tsv").read_text()
    for f in (res / "raw").glob("*.out"):
        assert (tmp_path / "st/raw" / f.name).read_bytes() == f.read_bytes(), f.name
    assert (tmp_path / "st/env.txt").read_bytes() == (res / "env.txt").read_bytes()
    # the step's output comes before its steps.tsv line, which comes before the progress line
    out = proc.stdout
    assert out.index("BENCH-SAVE-END 1 raw/") < out.index("BENCH-SAVE-STEP 1 ") \
        < out.index("BENCH-STEP 1 4 ")
    assert list((tmp_path).glob("bench-save.*")) == []  # its temporary gzip is removed


def test_driver_sh_cuts_a_large_streamed_file_with_a_note(tmp_path):
    proc, res = _run_driver(tmp_path, "sh", BENCH_STREAM_MAX="40")
    s = feed(StreamSaver(tmp_path / "st"), proc.stdout.splitlines())
    env_txt = (tmp_path / "st/env.txt").read_text()
    full = (res / "env.txt").read_text()
    assert len(full) > 40 and env_txt.startswith(full[:40])
    assert f"streamed copy cut at 40 of {len(full.encode())} bytes" in env_txt
    assert sorted(s.steps) == [1, 2, 3, 4]  # the small outputs whole


def test_driver_sh_without_stream_prints_no_frames(tmp_path):
    proc, _ = _run_driver(tmp_path, "sh", BENCH_STREAM="0")
    assert "BENCH-STEP 4 4" in proc.stdout and "BENCH-SAVE" not in proc.stdout


def test_driver_sh_skips_finished_runs_and_keeps_step_numbers(tmp_path):
    n = _ncpu()
    proc, res = _run_driver(tmp_path, "sh", BENCH_SKIP_RUNS="1")
    assert f"BENCH-RESUME-SKIP 1 c{n}-i0-eevdf steps 1-2" in proc.stdout
    assert "BENCH-STEP 1 " not in proc.stdout and "BENCH-STEP 2 " not in proc.stdout
    assert f"BENCH-STEP 3 4 {n} 1 eevdf idle 0" in proc.stdout
    assert f"BENCH-STEP 4 4 {n} 1 eevdf busy 0" in proc.stdout
    assert [ln.split()[1] for ln in (res / "steps.tsv").read_text().splitlines()] == ["1", "1"]
    s = feed(StreamSaver(tmp_path / "st"), proc.stdout.splitlines())
    assert sorted(s.steps) == [3, 4]
