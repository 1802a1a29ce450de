"""The console stream of finished steps (guest/driver.sh save, stream.StreamSaver) and resuming a
bench run whose guest died (resume.py, driver.run_bench with a fake VM)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tools.pandemonium.bench import commands, driver
from tools.pandemonium.bench import plan as P
from tools.pandemonium.bench import resume as R
from tools.pandemonium.bench.driver import GUEST_DIR, Progress
from tools.pandemonium.bench.parse import parse_results
from tools.pandemonium.bench.report import header
from tools.pandemonium.bench.stream import StreamSaver

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


def test_a_saved_console_log_reassembles_line_by_line(tmp_path):
    log_file = tmp_path / "vm-console.log"
    log_file.write_bytes(("\r\n".join(["# qemu ...", "\x1b[2J boot"] + step_lines(
        1, 2, 0, "eevdf", "idle")) + "\r\n").encode())
    s = StreamSaver(tmp_path / "st")
    for raw in log_file.read_bytes().splitlines(keepends=True):
        s.feed(raw.decode("utf-8", errors="replace"))
    s.close()
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


# -- resume planning --------------------------------------------------------------------------

def _plan(**kw) -> P.Plan:
    # runs: c2-i0-eevdf, c2-i1-pandemonium, c2-i1-eevdf, c2-i2-pandemonium, c2-i2-eevdf
    return P.Plan(**{"phases": ["idle", "busy"], "schedulers": [P.PANDEMONIUM], "cores": [2],
                     "iterations": 2, "sizes": P.Sizes(phase_s=2), **kw})


def _keys(plan, ks) -> set:
    steps = R.plan_steps(plan)
    return {steps[k - 1] for k in ks}


def test_plan_steps_are_numbered_run_by_run():
    plan = _plan()
    steps = R.plan_steps(plan)
    assert len(steps) == 10
    assert steps[0] == (2, 0, "eevdf", "idle") and steps[3] == (2, 1, "pandemonium", "busy")
    assert R.run_keys(plan, 3) == [(2, 1, "eevdf", "idle"), (2, 1, "eevdf", "busy")]


def test_only_whole_runs_are_skipped_and_a_partial_run_runs_again_from_its_start():
    plan = _plan()
    done = _keys(plan, [1, 2, 3, 4, 5])  # died in step 6: run 3 half done
    assert R.finished_runs(plan, [done]) == [1, 2]
    assert R.death_step(plan, done, []) == 6
    assert R.first_step_to_run(plan, [1, 2]) == 5
    # a hole from a damaged stream: that run runs again, later ones are kept
    holey = _keys(plan, [1, 2, 3, 5, 6, 7, 8])
    assert R.finished_runs(plan, [holey]) == [1, 3, 4]
    # run 3's two steps from two boots (two attaches) do not finish it
    assert R.finished_runs(plan, [_keys(plan, [1, 2, 5]), _keys(plan, [6])]) == [1]
    assert R.kept_steps(plan, [_keys(plan, [1, 2, 5]), _keys(plan, [6])]) == 3
    assert R.death_step(plan, holey, []) == 4
    assert R.first_step_to_run(plan, [1, 3, 4]) == 3
    # a resumed boot that died at once: the first step it attempted
    assert R.death_step(plan, set(), [1, 2]) == 5
    assert R.death_step(plan, _keys(plan, range(5, 11)), [1, 2]) is None


def test_remaining_estimate_counts_only_the_runs_still_to_do():
    plan = _plan()
    assert R.remaining_estimate_s(plan, []) == plan.estimate_s()
    per_run = sum(plan.step_weight(p) for p in plan.phases)
    assert R.remaining_estimate_s(plan, [1, 2, 3]) == 2 * per_run + P.ATTACH_EST_S


def test_each_run_comes_from_one_boot():
    plan = _plan()
    boot1 = _keys(plan, [1, 2, 3, 4, 5])
    boot2 = _keys(plan, [5, 6, 7, 8, 9, 10])
    assert R.choose_run_boots(plan, [boot1, boot2]) == {1: 1, 2: 1, 3: 2, 4: 2, 5: 2}
    # nobody finished run 3: the boot with most of it, the latest on a tie
    assert R.choose_run_boots(plan, [_keys(plan, [5]), _keys(plan, [6])])[3] == 2
    assert R.choose_run_boots(plan, [_keys(plan, [5, 6]), _keys(plan, [6])])[3] == 1
    assert 4 not in R.choose_run_boots(plan, [boot1])


def test_boot_ranges_and_brackets_that_span_two_boots():
    plan = _plan()
    run_boot = {1: 1, 2: 1, 3: 2, 4: 2, 5: 2}
    per_step = R.step_boots(plan, run_boot, set(R.plan_steps(plan)) - _keys(plan, [10]))
    assert per_step == [1, 1, 1, 1, 2, 2, 2, 2, 2, 0]
    assert R.boot_ranges(per_step) == "steps 1-4 from boot 1, 5-9 from boot 2, 10 missing"
    assert R.boot_ranges([1]) == "steps 1 from boot 1"
    assert R.cross_boot_brackets(plan, run_boot) == [
        "c2-i1-pandemonium (boot 1) against EEVDF c2-i0-eevdf boot 1, c2-i1-eevdf boot 2"]
    assert R.cross_boot_brackets(plan, {i: 1 for i in range(1, 6)}) == []


def _write_results(d: Path, plan: P.Plan, ks, marker: str, events=()) -> Path:
    (d / "raw").mkdir(parents=True, exist_ok=True)
    steps = R.plan_steps(plan)
    with open(d / "steps.tsv", "a") as f:
        for k in ks:
            c, i, s, ph = steps[k - 1]
            f.write(f"{c} {i} {s} {ph} 0 {k * 100} {k * 100 + 300} {COST}\n")
            (d / "raw" / f"c{c}-i{i}-{s}.{ph}.out").write_text(f"{marker} step {k}\n")
    (d / "events.log").write_text("".join(e + "\n" for e in events))
    (d / "env.txt").write_text(f"kernel {marker}\n")
    return d


def test_merge_takes_each_run_from_its_boot_and_keeps_plan_order(tmp_path):
    plan = _plan(schedulers=[P.PANDEMONIUM, P.PANDEMONIUM_BPF], iterations=1)
    # runs: c2-i0-eevdf 1-2, c2-i1-pandemonium 3-4, c2-i1-pandemonium-bpf 5-6, c2-i1-eevdf 7-8
    b1 = _write_results(tmp_path / "b1", plan, [1, 2, 3, 4, 5], "boot1", ["ejected c2-i1-x"])
    (b1 / "raw" / "c2-i1-pandemonium.sched.log").write_text("log1\n")
    (b1 / "raw" / "c2-i1-pandemonium-bpf.sched.log").write_text("bpf log1\n")
    b2 = _write_results(tmp_path / "b2", plan, [5, 6, 7, 8], "boot2", ["stop-status x"])
    merged = R.merge_boots(plan, [b1, b2], tmp_path / "merged")
    assert merged.step_boot == [1, 1, 1, 1, 2, 2, 2, 2]
    records, events, env = parse_results(tmp_path / "merged")
    assert [(r.scheduler, r.phase) for r in records] == [
        (k[2], k[3]) for k in R.plan_steps(plan)]
    raw = tmp_path / "merged" / "raw"
    assert (raw / "c2-i1-pandemonium-bpf.idle.out").read_text() == "boot2 step 5\n"
    assert (raw / "c2-i1-pandemonium.busy.out").read_text() == "boot1 step 4\n"
    assert (raw / "c2-i1-pandemonium.sched.log").read_text() == "log1\n"
    # boot 1's log of the run boot 2 redid is not taken for boot 2's
    assert not (raw / "c2-i1-pandemonium-bpf.sched.log").exists()
    assert events == ["ejected c2-i1-x", "stop-status x"]
    assert env["kernel"] == "boot2"


# -- run_bench across boots, with a fake VM -----------------------------------------------------

class FakeVm:
    """run_in_vm stand-in: each boot streams the steps it gets to over on_line and either dies
    (an oops, no tar) at `die_at` or finishes with its /results tar extracted in out_dir."""

    def __init__(self, plan: P.Plan, deaths: list[int | None]) -> None:
        self.plan, self.deaths, self.envs = plan, list(deaths), []

    def __call__(self, cmd, *, out_dir, env, on_line, timeout, **kw):
        self.envs.append(dict(env, timeout=timeout))
        die_at = self.deaths.pop(0)
        skip = [int(x) for x in env["BENCH_SKIP_RUNS"].split()]
        steps = R.plan_steps(self.plan)
        n = len(self.plan.phases)
        done = []
        for line in frame(0, "env.txt", b"kernel fake\n") + [f"BENCH-START {len(steps)}"]:
            on_line(line)
        for k, (c, i, s, ph) in enumerate(steps, start=1):
            if (k - 1) // n + 1 in skip:
                continue
            if k == die_at:
                on_line("[  99.1] int3: 0000 [#1] PREEMPT SMP NOPTI")
                return SimpleNamespace(rc=125, out_dir=None, oops_lines=[
                    "int3: 0000 [#1] PREEMPT SMP NOPTI"], timed_out=False,
                    exit_marker_seen=False, accel_used="tcg-multi", kernel_version="6.x",
                    duration_s=10.0, log_path=out_dir / "vm-console.log")
            for line in step_lines(k, c, i, s, ph, f"boot{len(self.envs)}\n".encode()):
                on_line(line)
            done.append(k)
        on_line("BENCH-DONE")
        _write_results(out_dir, self.plan, done, f"boot{len(self.envs)}")
        return SimpleNamespace(rc=0, out_dir=out_dir, oops_lines=[], timed_out=False,
                               exit_marker_seen=True, accel_used="tcg-multi",
                               kernel_version="6.x", duration_s=10.0,
                               log_path=out_dir / "vm-console.log")


@pytest.fixture
def fake_vm(monkeypatch):
    def install(plan, deaths):
        vm = FakeVm(plan, deaths)
        monkeypatch.setattr("tools.pandemonium.vm.run_in_vm", vm)
        monkeypatch.setattr(driver, "check_tools", lambda: None)
        monkeypatch.setattr(driver, "benchlat_binary", lambda: Path("/bin/true"))
        monkeypatch.setattr(driver, "coopbench_binary", lambda: Path("/bin/true"))
        monkeypatch.setattr(driver, "_first_line", lambda cmd: "?")
        return vm
    return install


def test_one_boot_with_its_tar_is_used_as_before(tmp_path, fake_vm):
    plan = _plan()
    vm = fake_vm(plan, [None])
    result = driver.run_bench(plan, tmp_path, accel="tcg-multi")
    assert result.results_dir == tmp_path / "vm" and len(result.records) == 10
    assert "boots" not in result.env and vm.envs[0]["BENCH_STREAM"] == "1"
    assert vm.envs[0]["BENCH_SKIP_RUNS"] == ""
    assert commands.crash_notes(result.env) == []


def test_a_guest_that_dies_is_resumed_from_the_run_it_was_in(tmp_path, fake_vm):
    plan = _plan()
    vm = fake_vm(plan, [6, None])  # boot 1 dies in step 6 (run 3's second phase)
    result = driver.run_bench(plan, tmp_path, accel="tcg-multi")
    assert vm.envs[1]["BENCH_SKIP_RUNS"] == "1 2"
    assert vm.envs[1]["timeout"] < vm.envs[0]["timeout"]  # only the runs still to do
    assert result.rc == 0 and len(result.records) == 10
    assert result.results_dir == tmp_path / "merged"
    env = result.env
    assert env["boots"] == 2 and env["step_boots"] == "steps 1-4 from boot 1, 5-10 from boot 2"
    assert env["resumes"] == [{"boot": 2, "from_step": 5,
                               "after": "kernel oops: int3: 0000 [#1] PREEMPT SMP NOPTI"}]
    assert env["recovered_from_stream"] == [{"boot": 1, "steps": 5, "after": env["resumes"][0]
                                             ["after"]}]
    # run 3 (c2-i1-eevdf) is boot 2's whole, though boot 1 had its first phase
    assert (tmp_path / "merged/raw/c2-i1-eevdf.idle.out").read_text() == "boot2 step 5\n"
    notes = commands.crash_notes(env)
    assert any(n.startswith("boots: 2 (resumed at step 5 in boot 2 after: kernel oops: int3")
               for n in notes)
    assert any("recovered from the console stream" in n for n in notes)
    assert any("c2-i1-pandemonium (boot 1) against EEVDF c2-i0-eevdf boot 1, c2-i1-eevdf boot 2"
               in n for n in notes)
    assert not any(n.startswith("FAIL") for n in notes)
    assert "took 2 boots" in header(env)


def test_the_same_step_killing_the_guest_twice_stops_the_resumes(tmp_path, fake_vm):
    plan = _plan()
    vm = fake_vm(plan, [6, 6, None])
    result = driver.run_bench(plan, tmp_path, accel="tcg-multi")
    assert len(vm.envs) == 2 and result.rc == 125
    assert "step 6 (eevdf busy at 2 cores, iteration 1) killed the guest in boot 1 and again " \
           "in boot 2" in result.env["resume_stopped"]
    assert len(result.records) == 4 + 1  # runs 1-2 from boot 1, run 3's first phase from boot 2
    notes = commands.crash_notes(result.env)
    assert any(n.startswith("FAIL not resumed further: step 6") for n in notes)
    assert "FAIL 5 of 10 planned steps recorded" in notes


def test_resumes_are_bounded(tmp_path, fake_vm):
    plan = _plan()
    # each boot dies in a different step: boot 1 inside run 1 (redone whole by boot 2), boot 2
    # inside run 2, boot 3 inside run 4; no fourth boot
    vm = fake_vm(plan, [2, 4, 8, None])
    result = driver.run_bench(plan, tmp_path, accel="tcg-multi")
    assert len(vm.envs) == R.MAX_BOOTS == 3
    assert [e["BENCH_SKIP_RUNS"] for e in vm.envs] == ["", "", "1"]
    assert "died in 3 boots" in result.env["resume_stopped"]
    assert result.env["step_boots"] == "steps 1-2 from boot 2, 3-7 from boot 3, 8-10 missing"
    assert [r["from_step"] for r in result.env["resumes"]] == [1, 3]


def test_a_crash_after_the_driver_finished_is_recovered_from_the_stream_without_a_resume(
        tmp_path, fake_vm, monkeypatch):
    plan = _plan()
    vm = fake_vm(plan, [None])
    real = vm.__call__

    def tar_lost(cmd, **kw):  # the oops came during the final results dump
        res = real(cmd, **kw)
        (kw["out_dir"] / "steps.tsv").unlink()
        return SimpleNamespace(**dict(vars(res), out_dir=None))
    monkeypatch.setattr("tools.pandemonium.vm.run_in_vm", tar_lost)
    result = driver.run_bench(plan, tmp_path, accel="tcg-multi")
    assert len(vm.envs) == 1 and len(result.records) == 10
    assert result.env["recovered_from_stream"][0]["steps"] == 10
    assert (tmp_path / "merged/raw/c2-i2-eevdf.busy.out").read_text() == "boot1\n"


def test_progress_of_a_resumed_boot_counts_only_its_own_steps():
    plan = _plan()
    prog = Progress(plan, attach_s=0, skipped=[1, 2])
    assert prog.weights[:4] == [0.0] * 4 and all(w > 0 for w in prog.weights[4:])


def test_boots_that_record_nothing_end_in_a_clear_error(tmp_path, fake_vm):
    from tools.pandemonium.common import PandemoniumError

    plan = _plan()
    fake_vm(plan, [1, 1])
    with pytest.raises(PandemoniumError, match=r"no results from the guest in 2 boot\(s\).*"
                                               r"step 1 .* killed the guest in boot 1 and again"):
        driver.run_bench(plan, tmp_path, accel="tcg-multi")
