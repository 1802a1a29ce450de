"""The frames and audio phases (issue #33): the guest output's parsing (felt.py), their figures in
the report (frame rates are higher-is-better, the over-budget and xrun targets are bounds), the
closing notes, bench-scale's --phases/--schedulers, and the guest driver's side."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tools.pandemonium.common import tools_binary
from tools.pandemonium.bench import commands, felt, report, scoreboard
from tools.pandemonium.bench import plan as P
from tools.pandemonium.bench.aggregate import aggregate
from tools.pandemonium.bench.driver import GUEST_DIR
from tools.pandemonium.bench.parse import RC_EJECTED, Record, parse_results, parse_step
from tools.pandemonium.stress.workloads import BUILD_LOAD


def frames_json(**kw) -> str:
    d = {"tool": "frames", "fps": 144.0, "period_ns": 6944444, "workers": 4,
         "steam_game_id": "480", "interrupted": False, "frames": 1728, "p50_ns": 7_000_000,
         "p99_ns": 11_000_000, "max_ns": 30_000_000, "fps_avg": 140.1, "fps_1pct_low": 87.5,
         "fps_1pct_min_avg": 80.2, "budget_ns": 7638888, "over_budget": 294,
         "over_budget_ratio": 0.17, "latency_p99_ns": 9_000_000, "wake_p99_ns": 800_000}
    d.update(kw)
    return json.dumps(d)


def audio_json(**kw) -> str:
    d = {"tool": "audio", "period_ns": 5333333, "interrupted": False, "periods": 2250,
         "wakes": 2240, "skipped": 10, "xruns": 371, "xrun_ratio": 0.165,
         "wake_p50_ns": 90_000, "wake_p99_ns": 4_100_000, "wake_max_ns": 20_000_000,
         "preempted": 112, "preempted_ratio": 0.05, "run_delay_p99_ns": 2_500_000,
         "run_delay_max_ns": 9_000_000}
    d.update(kw)
    return json.dumps(d)


def guest_output(tool_json, floor=None, build=None, state="enabled") -> str:
    """What driver.sh phase_frames / phase_audio print."""
    return "\n".join([
        "felt-begin floor", floor or tool_json(frames=576, periods=750, fps_1pct_low=130.0,
                                               over_budget_ratio=0.01, xrun_ratio=0.0,
                                               wake_p99_ns=300_000), "felt-end floor",
        "felt-state floor enabled",
        "felt-begin build", build or tool_json(), "felt-end build", f"felt-state build {state}",
        "build-load builds=3 objects=17 steps=197 execs=4200", ""])


def test_frames_figures_read_the_build_part_and_the_floor():
    figs = felt.figures(guest_output(frames_json), "frames")
    assert list(figs) == [p.name for p in P.FRAMES_FIGURES]
    assert figs["frames-p50"]["value"] == 7.0
    assert figs["frames-p99"]["value"] == 11.0
    assert figs["frames-low"]["value"] == 87.5
    assert figs["frames-over"]["value"] == pytest.approx(17.0)
    assert figs["frames-floor-low"]["value"] == 130.0
    assert figs["frames-floor-over"]["value"] == pytest.approx(1.0)
    extra = figs["frames-low"]["extra"]
    assert extra["fps_1pct_min_avg"] == 80.2 and extra["steam_game_id"] == "480"
    assert extra["budget_ms"] == pytest.approx(7.638888)
    assert extra["build_load"] == {"builds": 3, "objects": 17, "steps": 197, "execs": 4200}
    assert "build_load" not in figs["frames-floor-low"]["extra"]
    assert all(f["error"] is None and f["state"] == "enabled" for f in figs.values())


def test_audio_figures_are_percent_and_microseconds():
    figs = felt.figures(guest_output(audio_json), "audio")
    assert list(figs) == [p.name for p in P.AUDIO_FIGURES]
    assert figs["audio-xruns"]["value"] == pytest.approx(16.5)
    assert figs["audio-wake"]["value"] == pytest.approx(4100.0)
    assert figs["audio-floor-xruns"]["value"] == 0.0
    assert figs["audio-floor-wake"]["value"] == pytest.approx(300.0)
    assert figs["audio-preempted"]["value"] == pytest.approx(5.0)
    assert figs["audio-run-delay"]["value"] == pytest.approx(2500.0)
    assert figs["audio-xruns"]["extra"]["skipped"] == 10
    assert figs["audio-xruns"]["extra"]["run_delay_max_us"] == pytest.approx(9000.0)
    # The scheduler's part is shown, never scored beside the xruns.
    assert P.PHASES["audio-preempted"].reference and P.PHASES["audio-run-delay"].reference
    # A tool without schedstat reports null: that figure alone is missing, not the others.
    figs = felt.figures(guest_output(audio_json, build=audio_json(run_delay_p99_ns=None)),
                        "audio")
    assert "measured nothing" in figs["audio-run-delay"]["error"]
    assert figs["audio-preempted"]["error"] is None


def test_a_missing_or_broken_part_is_an_error_per_figure_not_a_crash():
    # The build part's tool died (timeout's message instead of JSON), the floor part is fine.
    out = guest_output(frames_json, build="Terminated")
    figs = felt.figures(out, "frames")
    assert figs["frames-low"]["value"] is None
    assert "no frames report in the build part (Terminated)" in figs["frames-low"]["error"]
    assert figs["frames-floor-low"]["value"] == 130.0
    # Interrupted, or nothing measured.
    figs = felt.figures(guest_output(frames_json, build=frames_json(interrupted=True)), "frames")
    assert "interrupted" in figs["frames-p99"]["error"]
    figs = felt.figures(guest_output(audio_json, build=audio_json(periods=0)), "audio")
    assert "measured nothing" in figs["audio-xruns"]["error"]
    # Cut off before the build part began.
    figs = felt.figures("felt-begin floor\n" + frames_json() + "\nfelt-end floor\n", "frames")
    assert "did not run" in figs["frames-low"]["error"]
    assert figs["frames-floor-low"]["value"] == 87.5


def _step(tmp_path: Path, phase: str, text: str, sched="pandemonium", rc=0, it=1) -> Record:
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    (raw / f"c2-i{it}-{sched}.{phase}.out").write_text(text)
    return parse_step(f"2 {it} {sched} {phase} {rc} 100 2300 10 500 600 30 510 610", raw)


def test_a_step_becomes_one_record_per_figure(tmp_path):
    rec = _step(tmp_path, "frames", guest_output(frames_json))
    assert rec.error is None and rec.value is None
    out = felt.expand([rec])
    assert [r.phase for r in out] == [p.name for p in P.FRAMES_FIGURES]
    assert out[2].value == 87.5
    # The scheduler's cost is the step's, carried once.
    assert out[0].sched_cpu_pct is not None
    assert all(r.sched_cpu_pct is None for r in out[1:])


def test_an_ejected_scheduler_keeps_the_parts_it_finished_attached(tmp_path):
    rec = _step(tmp_path, "audio", guest_output(audio_json, state="disabled"), rc=RC_EJECTED)
    out = {r.phase: r for r in felt.expand([rec])}
    assert out["audio-floor-xruns"].value == 0.0 and out["audio-floor-xruns"].error is None
    assert out["audio-xruns"].value is None and "ejected" in out["audio-xruns"].error
    # Never attached: every figure says why.
    rec = _step(tmp_path, "audio", "exited (status 1)", rc=201, sched="ext:x")
    assert all("did not attach" in r.error for r in felt.expand([rec]))


def test_frame_rates_are_higher_is_better_and_bounds_are_absolute():
    low, over, xruns = P.PHASES["frames-low"], P.PHASES["frames-over"], P.PHASES["audio-xruns"]
    assert low.better == "higher" and over.limit == 1.0 and xruns.limit == 0.1
    assert report.better_text("frames-low") == "higher is better"
    assert report.fmt_value(87.46, "fps") == "87.5 fps"
    assert report.fmt_value(7.0, "ms") == "7.00 ms"

    def cell(phase, sched, values, ratio=None):
        return SimpleNamespace(phase=phase, scheduler=sched, values=values,
                               median=values[0] if values else None,
                               spread=(min(values), max(values)) if values else None,
                               ratio=ratio)

    assert report.verdict(cell("frames-low", "pandemonium", [87.0], ratio=1.7)) == "met"
    assert report.verdict(cell("frames-low", "pandemonium", [40.0], ratio=0.8)).startswith(
        "missed (target >= 1x")
    assert report.verdict(cell("frames-over", "pandemonium", [0.5], ratio=0.01)) == "met"
    assert report.verdict(cell("frames-over", "pandemonium", [17.0], ratio=0.3)) == \
        "missed (target <= 1.00 %)"
    # xruns: EEVDF may have none (no ratio); the bound alone decides.
    assert report.verdict(cell("audio-xruns", "pandemonium", [0.0])) == "met"
    assert report.verdict(cell("audio-xruns", "pandemonium", [0.19])) == \
        "missed (target <= 0.10 %)"
    assert report.verdict(cell("frames-low", "eevdf", [51.0])) == ""


def _records(values: dict[str, list[float]], phase="frames-low") -> list[Record]:
    out = []
    for sched, vals in values.items():
        for i, v in enumerate(vals, start=1):
            out.append(Record(2, i, sched, phase, 0, 10.0, value=v))
    return out


def test_the_scoreboard_reads_a_frame_rate_the_right_way_up():
    recs = _records({"eevdf": [51.0, 52.0], "pandemonium": [97.0], "bpfland": [90.0, 99.0]})
    cells = aggregate(recs)
    s = scoreboard.score_phase(cells, "frames-low", 2)
    assert s.ahead  # 97 >= bpfland's lowest run, 90
    cells = aggregate(_records({"eevdf": [51.0], "pandemonium": [87.0], "bpfland": [97.0]}))
    s = scoreboard.score_phase(cells, "frames-low", 2)
    assert not s.ahead and s.behind == ["bpfland"]
    table = scoreboard.table(cells, ["frames-low"])
    assert "Higher is better on frames-low" in table
    # The reference figures (the floor) are shown, not scored.
    cells = aggregate(_records({"eevdf": [130.0], "pandemonium": [120.0]}, "frames-floor-low"))
    assert scoreboard.score_phase(cells, "frames-floor-low", 2) is None


def test_notes_compare_with_the_anchors_and_gaming_mode(tmp_path):
    recs = [
        _step(tmp_path, "frames", guest_output(frames_json, build=frames_json(
            fps_1pct_low=51.0, p50_ns=8_000_000, over_budget_ratio=0.64)), sched="eevdf"),
        _step(tmp_path, "frames", guest_output(frames_json)),
        _step(tmp_path, "frames", guest_output(frames_json, build=frames_json(
            fps_1pct_low=84.0, over_budget_ratio=0.18)), sched="pandemonium-gaming"),
        _step(tmp_path, "frames", guest_output(frames_json, build=frames_json(
            fps_1pct_low=97.0, over_budget_ratio=0.016)), sched="bpfland"),
        _step(tmp_path, "audio", guest_output(audio_json)),
        _step(tmp_path, "audio", guest_output(audio_json, build=audio_json(xrun_ratio=0.0019)),
              sched="bpfland"),
    ]
    notes = felt.notes(SimpleNamespace(records=recs))
    game = next(n for n in notes if n.startswith("game beside a build at 2 cores"))
    assert game.index("eevdf 8.0 ms / 11.0 ms, 1 % low 51 fps") < game.index("pandemonium 7.0")
    assert "1 % min 80" in game and "build 197 steps" in game
    assert "pandemonium at 2 cores: 1 % low FPS 88 against bpfland 97 (target: at or above " \
           "each anchor's): missed" in notes
    assert "pandemonium at 2 cores: frames over budget 17.00 % (target <= 1 %): missed" in notes
    assert "pandemonium at 2 cores: xruns 16.50 % (target <= 0.1 %): missed" in notes
    assert "gaming mode against auto at 2 cores: 1 % low FPS 84 against 88 (target: ahead): " \
           "missed" in notes
    audio = next(n for n in notes if n.startswith("audio beside a build at 2 cores"))
    assert "bpfland xruns 0.19 %, wake P99 4.1 ms, preempted 5.00 %, waited P99 2.5 ms" in audio
    assert felt.notes(SimpleNamespace(records=[])) == []


def test_bench_scale_runs_frames_and_audio_only_when_asked():
    spec = commands.BY_NAME["bench-scale"]
    assert "frames" not in P.SCALE_PHASES and "audio" not in P.SCALE_PHASES
    assert commands.pick("bench-scale", "--phases", None, spec.phases, spec.more_phases) == \
        P.SCALE_PHASES
    assert commands.pick("bench-scale", "--phases", "audio,frames,floor", spec.phases,
                         spec.more_phases) == ["floor", "frames", "audio"]
    assert commands.pick("bench-scale", "--schedulers", "pandemonium-gaming,pandemonium",
                         spec.schedulers, spec.more_schedulers) == \
        ["pandemonium", "pandemonium-gaming"]
    with pytest.raises(Exception, match="choose from"):
        commands.pick("bench-contention", "--phases", "frames",
                      commands.BY_NAME["bench-contention"].phases)
    assert P.report_phases(["frames", "audio"]) == [p.name for p in P.FRAMES_FIGURES] + \
        [p.name for p in P.AUDIO_FIGURES]
    assert not P.is_external(P.PANDEMONIUM_GAMING)
    env = P.Sizes(phase_s=4).guest_env()
    assert env["BENCH_BESIDE_D"] == "12"
    plan = P.Plan(phases=["frames"], schedulers=[P.PANDEMONIUM], cores=[2], iterations=1)
    assert plan.step_weight("frames") == 12.0 + 4 * 4


def test_the_guest_driver_runs_gaming_mode_and_the_game_as_steam_launches_it():
    script = (GUEST_DIR / "driver.sh").read_text()
    assert 'pandemonium-gaming) echo "scx_pandemonium -m gaming' in script
    assert "env SteamGameId=$STEAM_GAME_ID" in script
    assert "phase_frames() { felt frames; }" in script and "phase_audio() { felt audio; }" in script
    # One build load for every driver: nothing generates its own tree any more.
    for d in (GUEST_DIR / "driver.sh", BUILD_LOAD.parent.parent / "stress" / "driver.sh"):
        text = d.read_text()
        assert "build_tree " in text and "printf 'SRC :=" not in text, d


@pytest.mark.skipif(not (shutil.which("busybox") and shutil.which("make")),
                    reason="needs busybox and make")
def test_build_load_runs_and_stops_every_process_it_started(tmp_path):
    bb = shutil.which("busybox")
    script = f"""
. {BUILD_LOAD}
BUILD_LOAD_DIR={tmp_path}/bl
BUILD_LOAD_STEPS=5
build_load_start 1
sleep 2
pg=$(cat {tmp_path}/bl/pgid)
build_load_stop
sleep 0.5
echo "pg=$pg"
"""
    proc = subprocess.run([bb, "sh", "-c", script], capture_output=True, text=True, timeout=60)
    out = proc.stdout
    assert "build-load builds=" in out, out + proc.stderr
    fields = dict(kv.split("=") for kv in out.split("build-load ")[1].split()[:4])
    assert int(fields["builds"]) >= 1 and int(fields["execs"]) >= 100
    assert int(fields["steps"]) == int(fields["builds"]) * 5 + int(fields["objects"])
    pg = out.split("pg=")[1].split()[0]
    alive = subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True, text=True).stdout
    assert not [ln for ln in alive.splitlines()
                if ln.split()[0] == pg and not ln.split()[1].startswith("Z")], alive
    assert not (tmp_path / "bl").exists()


@pytest.mark.skipif(not tools_binary().is_file() or not shutil.which("make"),
                    reason="needs the built pandemonium-tools and make")
def test_driver_sh_phases_give_every_figure_natively(tmp_path):
    """The real driver and tools, briefly: the output each phase leaves parses into every
    figure (no scheduler: EEVDF)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pandemonium-tools").symlink_to(tools_binary())
    res = tmp_path / "results"
    n = sum(1 for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("processor"))
    env = dict(os.environ, BENCH_RESULTS=str(res), BENCH_NO_HOTPLUG="1",
               BENCH_RUNS=f"{n}:0:eevdf", BENCH_PHASES="frames audio", BENCH_D="1",
               BENCH_BESIDE_D="1", BENCH_ATTACH_S="10", BENCH_STOP_S="10",
               PATH=f"{bin_dir}:{os.environ['PATH']}")
    env.pop("SteamGameId", None)
    proc = subprocess.run(["sh", str(GUEST_DIR / "driver.sh")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records, _, _ = parse_results(res)
    out = felt.expand(records)
    assert [r.phase for r in out] == P.report_phases(["frames", "audio"])
    assert all(r.error is None and r.value is not None for r in out), \
        [(r.phase, r.error) for r in out]
    frames = next(r for r in out if r.phase == "frames-low")
    assert frames.extra["steam_game_id"] == "480"  # launched as Steam launches a game
    assert frames.extra["build_load"]["execs"] > 0
