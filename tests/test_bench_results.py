"""Host tests of result parsing, aggregation, ratios and report formatting, on fixture outputs."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tools.pandemonium.bench import commands, verdicts
from tools.pandemonium.bench.aggregate import aggregate, bracket_ratio, eevdf_drift
from tools.pandemonium.bench.parse import (Record, cyclictest_percentiles, parse_results,
                                           perf_stat_counters)
from tools.pandemonium.bench.plots import plot
from tools.pandemonium.bench.report import fmt_value, markdown, phase_table, verdict, write_json

FIX = Path(__file__).parent / "fixtures" / "bench"
COST = "- - -"


def _results(tmp_path: Path, steps: list[tuple], outputs: dict[str, str]) -> Path:
    """A fake /results: steps as (cores, iter, sched, phase, rc, t0_cs, t1_cs, cost0, cost1)."""
    (tmp_path / "raw").mkdir(parents=True)
    (tmp_path / "steps.tsv").write_text(
        "".join(" ".join(map(str, s)) + "\n" for s in steps))
    for name, fixture in outputs.items():
        shutil.copy(FIX / fixture, tmp_path / "raw" / name)
    (tmp_path / "env.txt").write_text("kernel 6.18.15+deb13-cloud-amd64\ncpus_present 4\n")
    return tmp_path


def test_parse_each_tool_output(tmp_path):
    res = _results(tmp_path, [
        (2, 1, "pandemonium", "latency", 0, 100, 700, "10 8000 9000", "12 8100 9100"),
        (2, 1, "pandemonium", "deadline", 0, 700, 1300, COST, COST),
        (2, 1, "eevdf", "throughput", 0, 100, 2150, COST, COST),
        (2, 1, "eevdf", "ipc", 0, 0, 1, COST, COST),
        (2, 1, "eevdf", "messaging", 0, 0, 1, COST, COST),
        (2, 1, "eevdf", "cyclictest", 0, 0, 1, COST, COST),
        (2, 1, "eevdf", "pinned", 0, 0, 1, COST, COST),
    ], {"c2-i1-pandemonium.latency.out": "probe.txt", "c2-i1-pandemonium.deadline.out": "probe.txt",
        "c2-i1-eevdf.throughput.out": "throughput.txt", "c2-i1-eevdf.ipc.out": "benchlat.txt",
        "c2-i1-eevdf.messaging.out": "messaging.txt", "c2-i1-eevdf.cyclictest.out": "cyclictest.txt",
        "c2-i1-eevdf.pinned.out": "pinned.txt"})
    records, events, env = parse_results(res)
    by = {r.phase: r for r in records}
    assert not [r.error for r in records if r.error]
    assert by["latency"].value == pytest.approx(5112.0)
    assert by["latency"].p50 == pytest.approx(23.726)
    # 2 ticks over 6 s of guest time = 0.33 % of one CPU
    assert by["latency"].sched_cpu_pct == pytest.approx(100 * 2 / 100 / 6.0)
    assert by["latency"].sched_rss_kb == 8100 and by["latency"].sched_hwm_kb == 9100
    short = _results(tmp_path / "short", [(2, 1, "pandemonium", "idle", 0, 0, 150, "1 1 1", "2 1 1")],
                     {})
    assert parse_results(short)[0][0].sched_cpu_pct is None  # 1.5 s: one tick would read 0.67 %
    assert by["deadline"].value == pytest.approx(0.8)
    assert by["deadline"].extra["wake_miss_pct"] == pytest.approx(6.0)
    assert by["throughput"].value == pytest.approx(20.5)
    assert by["ipc"].value == pytest.approx(152.98)
    assert by["messaging"].value == pytest.approx(3.512)
    assert by["pinned"].extra["stranded"] == 1
    assert env["kernel"].startswith("6.18") and events == []


def test_failed_or_garbled_phase_is_an_error_not_a_value(tmp_path):
    res = _results(tmp_path, [
        (2, 1, "eevdf", "latency", 124, 0, 100, COST, COST),
        (2, 1, "eevdf", "burst", 0, 0, 100, COST, COST),
    ], {"c2-i1-eevdf.latency.out": "probe.txt", "c2-i1-eevdf.burst.out": "messaging.txt"})
    records, _, _ = parse_results(res)
    assert [r.value for r in records] == [None, None]
    assert "exit status 124" in records[0].error
    assert "no probe JSON" in records[1].error


def test_ejected_scheduler_fails_the_phase_even_with_good_output(tmp_path):
    res = _results(tmp_path, [(2, 1, "pandemonium", "pinned", 200, 0, 100, COST, COST)],
                   {"c2-i1-pandemonium.pinned.out": "pinned.txt"})
    (rec,), _, _ = parse_results(res)
    assert rec.value is None and "ejected" in rec.error
    result = SimpleNamespace(records=[rec], events=["ejected c2-i1-pandemonium: during pinned"],
                             rc=0, env={}, out_dir=tmp_path)
    notes = commands.notes_for(commands.BY_NAME["bench-pcpu"], result, aggregate([rec]))
    assert notes[0].startswith("FAIL guest event: ejected")


def test_malformed_steps_line_and_missing_results_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError):
        parse_results(tmp_path)
    (tmp_path / "steps.tsv").write_text("2 1 eevdf\n")
    with pytest.raises(ValueError, match="malformed"):
        parse_results(tmp_path)


def test_cyclictest_p99_counts_overflows_above_every_bucket():
    (p99,), mx = cyclictest_percentiles((FIX / "cyclictest.txt").read_text(), (0.99,))
    # 90 samples at 10 us, 8 at 20 us, 1 at 100 us, 1 overflow: the 99th of 100 is 100 us
    assert (p99, mx) == (100.0, 9794.0)
    with pytest.raises(ValueError):
        cyclictest_percentiles("# Histogram\n", (0.99,))


def test_missing_rapl_is_reported_as_unavailable_not_failed(tmp_path):
    res = _results(tmp_path, [(2, 1, "pandemonium", "rapl", 129, 0, 100, COST, COST)],
                   {"c2-i1-pandemonium.rapl.out": "rapl-missing.txt"})
    (rec,), _, _ = parse_results(res)
    assert rec.error is None and rec.value is None
    assert "Cannot find PMU" in rec.extra["rapl_unavailable"]


def test_perf_stat_counters_and_rapl():
    c = perf_stat_counters((FIX / "forkthread.txt").read_text())
    assert c["context-switches"] == 282 and c["cycles"] == "<not supported>"
    assert "user" not in c and "time" not in c
    assert perf_stat_counters((FIX / "rapl.txt").read_text())["power/energy-pkg"] == 12.34


def _rec(phase, cores, sched, it, value, cpu=None, rss=None):
    return Record(cores, it, sched, phase, 0, 1.0, value, sched_cpu_pct=cpu, sched_rss_kb=rss)


def test_ratio_uses_the_eevdf_runs_around_each_iteration():
    recs = [_rec("latency", 2, "eevdf", 0, 100.0), _rec("latency", 2, "eevdf", 1, 300.0),
            _rec("latency", 2, "eevdf", 2, 200.0),
            _rec("latency", 2, "pandemonium", 1, 20.0), _rec("latency", 2, "pandemonium", 2, 50.0),
            _rec("latency", 2, "pandemonium", 3, 30.0)]
    cells = {c.scheduler: c for c in aggregate(recs)}
    pan = cells["pandemonium"]
    # iteration 1: 20/mean(100,300)=0.1; 2: 50/mean(300,200)=0.2; 3: only EEVDF_2 -> 30/200=0.15
    assert pan.ratio == pytest.approx(0.15)
    assert pan.median == 30.0 and pan.spread == (20.0, 50.0)
    assert cells["eevdf"].ratio is None and cells["eevdf"].median == 200.0
    assert eevdf_drift(list(cells.values()))[("latency", 2)] == pytest.approx(3.0)
    # One EEVDF run (the CI smoke) measures no drift.
    lone = aggregate([_rec("latency", 2, "eevdf", 0, 100.0)])
    assert eevdf_drift(lone) == {}


def test_bracket_ratio_edge_cases():
    assert bracket_ratio(5, None, None) is None
    assert bracket_ratio(5, 10, None) == 0.5
    assert bracket_ratio(0, 0, 0) is None
    assert bracket_ratio(1, 0, None) is None


def test_failed_iterations_are_counted_not_averaged():
    failed = _rec("ipc", 2, "pandemonium", 1, None)
    failed.error = "exit status 1"
    (cell,) = aggregate([failed, _rec("ipc", 2, "pandemonium", 2, 7.0)])
    assert cell.values == [7.0] and cell.failures == 1 and cell.median == 7.0
    (idle,) = aggregate([_rec("idle", 2, "pandemonium", 1, None, cpu=0.1)])
    assert idle.failures == 0 and idle.median is None


def test_verdict_and_table_format():
    recs = [_rec("deadline", 4, "eevdf", 0, 8.0), _rec("deadline", 4, "eevdf", 1, 12.0),
            _rec("deadline", 4, "pandemonium", 1, 1.5), _rec("latency", 4, "eevdf", 0, 20000.0),
            _rec("latency", 4, "pandemonium-bpf", 1, 1000.0), _rec("latency", 4, "eevdf", 1, 20000.0)]
    cells = aggregate(recs)
    dl = next(c for c in cells if c.phase == "deadline" and c.scheduler == "pandemonium")
    # ratio 0.15 <= 0.25 but 1.5 % > 1 %: missed
    assert verdict(dl).startswith("missed") and "1 %" in verdict(dl)
    lat = next(c for c in cells if c.phase == "latency" and c.scheduler != "eevdf")
    assert verdict(lat) == "met"
    # No misses beside an EEVDF without misses either: no ratio (0/0), but met; misses where
    # EEVDF had none: no ratio, missed.
    zero = aggregate([_rec("deadline", 2, "eevdf", 0, 0.0), _rec("deadline", 2, "pandemonium", 1, 0.0),
                      _rec("deadline", 2, "pandemonium-bpf", 1, 0.5), _rec("deadline", 2, "eevdf", 1, 0.0)])
    dl0 = next(c for c in zero if c.scheduler == "pandemonium")
    assert dl0.ratio is None and verdict(dl0) == "met"
    dl1 = next(c for c in zero if c.scheduler == "pandemonium-bpf")
    assert dl1.ratio is None and verdict(dl1).startswith("missed")
    table = phase_table("latency", cells)
    assert "| 4 | eevdf | 20.0 ms | 20.0 ms - 20.0 ms | 2 | (drift 1.00x) |  |" in table
    assert "| 4 | pandemonium-bpf | 1000 us |" in table and "| 0.05x | met |" in table
    assert fmt_value(None, "us") == "-" and fmt_value(0.123, "%") == "0.12 %"


def test_markdown_and_json_round_trip(tmp_path):
    cells = aggregate([_rec("idle", 2, "pandemonium", 1, None, cpu=0.3, rss=20480)])
    md = markdown("bench-power", {"accel": "tcg-multi", "vcpus": 2, "kernel": "k"}, cells,
                  ["idle"], ["a note"])
    assert "tcg-multi" in md and "| idle | 2 | pandemonium | 0.30 % | 20.0 MiB | - |" in md
    assert "### idle" not in md  # a cost-only phase has no value table
    assert md.rstrip().endswith("- a note")
    write_json(tmp_path / "r.json", {"cells": [c.to_json() for c in cells]})
    back = json.loads((tmp_path / "r.json").read_text())["cells"][0]
    assert set(back) >= {"phase", "cores", "scheduler", "values", "median", "spread", "ratio",
                         "sched_cpu_pct", "sched_rss_kb"}


def test_plot_degrades_without_matplotlib(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_mpl(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    cells = aggregate([_rec("latency", 2, "eevdf", 0, 5.0)])
    assert plot(tmp_path, cells, ["latency"]) == "plots skipped: matplotlib unavailable"


def test_power_notes_report_cost_against_targets_and_rapl():
    recs = [_rec("idle", 2, "pandemonium", 1, None, cpu=0.2, rss=10240),
            _rec("busy", 2, "pandemonium", 1, None, cpu=1.5, rss=10240),
            Record(2, 1, "pandemonium", "rapl", 0, 1.0, None, extra={"rapl_unavailable": "no PMU"})]
    result = SimpleNamespace(records=recs, events=[], rc=0, env={}, out_dir=Path("/x"))
    notes = commands.notes_for(commands.BY_NAME["bench-power"], result, aggregate(recs))
    assert any(n.startswith("cost within target: pandemonium idle") for n in notes)
    assert any(n.startswith("cost target MISSED: pandemonium busy") for n in notes)
    assert any("RAPL unavailable" in n and "no PMU" in n for n in notes)


def test_profile_build_timing_in_trace_notes(tmp_path):
    # A --features profile build's lines, as the guest appends them at detach.
    res = _results(tmp_path, [(2, 1, "pandemonium", "bpfstats", 0, 0, 100, COST, COST)],
                   {"c2-i1-pandemonium.bpfstats.out": "bpfstats.txt"})
    out = res / "raw" / "c2-i1-pandemonium.bpfstats.out"
    out.write_text(out.read_text()
                   + "profile select_cpu calls 1956 ns/call 942 long 0 short ns/call 942\n"
                   + "profile dispatch calls 3050 ns/call 274230 long 25 short ns/call 4110\n"
                   + "profile dispatch step 10 calls 262 ns/call 2877 long 0 short ns/call 2877\n"
                   + "profile dispatch step 8 calls 1354 ns/call 1506 long 1 short ns/call 1480\n")
    records, _, _ = parse_results(res)
    prof = records[0].extra["profile"]
    assert prof["dispatch"] == {"calls": 3050, "ns_per_call": 274230, "long_calls": 25,
                                "short_ns_per_call": 4110}
    assert prof["dispatch step 8"]["long_calls"] == 1
    assert records[0].extra["bpf_run_cnt"] == 4000  # the kernel's figures still parsed
    result = SimpleNamespace(records=records, events=[], rc=0, env={}, out_dir=tmp_path,
                             results_dir=tmp_path / "vm")
    notes = commands.notes_for(commands.BY_NAME["bench-trace"], result, [])
    line = next(n for n in notes if "timed inside BPF" in n)
    assert "select_cpu 942 (n=1956, 0 longer), dispatch 4110 (n=3050, 25 longer)" in line
    # Steps in enum order, whatever order the lines came in.
    assert line.endswith("dispatch steps (enum disp_step): 8 1480 (n=1354, 1 longer), "
                         "10 2877 (n=262, 0 longer)")


def test_trace_and_sys_notes(tmp_path):
    res = _results(tmp_path, [(2, 1, "pandemonium", "bpfstats", 0, 0, 100, COST, COST)],
                   {"c2-i1-pandemonium.bpfstats.out": "bpfstats.txt"})
    records, _, _ = parse_results(res)
    assert records[0].value == pytest.approx(3.512)
    assert records[0].extra["bpf_run_cnt"] == 4000
    assert records[0].extra["trace_events"] == {"sched_switch": 5120, "sched_wakeup": 801}
    result = SimpleNamespace(records=records, events=[], rc=0, env={}, out_dir=tmp_path,
                             results_dir=tmp_path / "vm")
    per = records[0].extra["bpf_per_prog"]
    assert per["select_cpu"] == {"run_cnt": 3000, "run_time_ns": 900000, "ns_per_call": 300.0}
    assert per["dispatch"]["ns_per_call"] == 100.0
    assert per["prog_id 43"]["ns_per_call"] is None  # no symbol, never ran
    assert records[0].extra["attach_s"] == pytest.approx(12.34)
    x = records[0].extra
    assert (x["cpus_online"], x["nodes"], x["cpu0_siblings"]) == (2, 1, "0")
    notes = commands.notes_for(commands.BY_NAME["bench-trace"], result, [])
    assert any("3 BPF programs ran 4000 times, 250 ns per run" in n for n in notes)
    assert any("ns per call" in n and "select_cpu 300 (n=3000), dispatch 100 (n=1000)" in n
               and "attached in 12.34 s; 42 contended spinlocks" in n for n in notes)
    assert "profile" not in records[0].extra
    assert not any("timed inside BPF" in n for n in notes)
    raw = tmp_path / "vm" / "raw"
    raw.mkdir(parents=True)
    (raw / "c2-i1-pandemonium.sched.log").write_text("starting\nd/s: 10 idle: 5%\nd/s: 12 idle: 3%\n")
    notes = commands.notes_for(commands.BY_NAME["bench-sys"], result, [])
    assert any("2 telemetry lines; last: d/s: 12 idle: 3%" in n for n in notes)


def test_bpf_programs_are_named_by_their_callback():
    from tools.pandemonium.bench.parse import callback_of

    assert callback_of("pandemonium_select_cpu") == "select_cpu"
    assert callback_of("bpfland_enqueue") == "enqueue"
    # The longest callback that ends the name: not "init" for init_task, not "exit" for exit_task.
    assert callback_of("bpfland_init_task") == "init_task"
    assert callback_of("pandemonium_exit_task") == "exit_task"
    assert callback_of("pandemonium_cgroup_set_bandwidth") == "cgroup_set_bandwidth"
    assert callback_of("pandemonium_dump_cpu") == "dump_cpu"
    assert callback_of("bpfland_init") == "init"
    assert callback_of("some_syscall_prog") == "some_syscall_prog"
    assert callback_of("") == "-"


def test_fork_thread_notes_name_unsupported_counters(tmp_path):
    res = _results(tmp_path, [(2, 1, "pandemonium", "forkthread", 0, 0, 100, COST, COST)],
                   {"c2-i1-pandemonium.forkthread.out": "forkthread.txt"})
    records, _, _ = parse_results(res)
    result = SimpleNamespace(records=records, events=[], rc=0, env={}, out_dir=tmp_path)
    notes = commands.notes_for(commands.BY_NAME["bench-fork-thread"], result, [])
    assert any("context-switches 282" in n for n in notes)
    assert any(n.startswith("hardware counters unavailable") and "cache-misses, cycles" in n
               for n in notes)


def test_stop_timeout_event_is_a_failure_note():
    result = SimpleNamespace(records=[], events=["stop-timeout c2-i1-pandemonium: still running"],
                             rc=0, env={}, out_dir=Path("/x"))
    notes = commands.notes_for(commands.BY_NAME["bench-scale"], result, [])
    assert notes[0].startswith("FAIL guest event: stop-timeout")


def test_plot_writes_one_png_per_phase_with_values(tmp_path):
    pytest.importorskip("matplotlib")
    cells = aggregate([_rec("latency", 2, "eevdf", 0, 5.0), _rec("latency", 4, "eevdf", 0, 9.0),
                       _rec("idle", 2, "pandemonium", 1, None, cpu=0.1)])
    assert plot(tmp_path, cells, ["latency", "idle"]) == "1 plot(s) written"
    assert (tmp_path / "latency.png").stat().st_size > 1000
    assert not (tmp_path / "idle.png").exists()


def _expand_histogram(text: str) -> list[int]:
    out = []
    for line in text.splitlines():
        if line[:1].isdigit():
            lat, *counts = (int(x) for x in line.split())
            out += [lat] * sum(counts)
    return sorted(out)


def test_cyclictest_at_10ms_gives_p50_and_p99_from_the_histogram(tmp_path):
    """A real run: --policy=other -i 10000 -t 2 -h 100000 beside busy loops, empty rows dropped
    by the driver's awk filter."""
    text = (FIX / "cyclictest-10ms.txt").read_text()
    lat = _expand_histogram(text)
    res = _results(tmp_path, [(2, 1, "eevdf", "cyclictest", 0, 0, 200, COST, COST)],
                   {"c2-i1-eevdf.cyclictest.out": "cyclictest-10ms.txt"})
    (rec,), _, _ = parse_results(res)
    # The smallest latency with at least q of the samples at or below it.
    assert rec.value == lat[math.ceil(0.99 * len(lat)) - 1] == 25103.0
    assert rec.p50 == lat[math.ceil(0.5 * len(lat)) - 1]
    assert rec.max == 76721.0 and rec.error is None


def test_hackbench_wall_time_and_garbage(tmp_path):
    res = _results(tmp_path, [(2, 1, "pandemonium", "hackbench", 0, 0, 300, COST, COST),
                              (2, 1, "eevdf", "hackbench", 0, 0, 300, COST, COST)],
                   {"c2-i1-pandemonium.hackbench.out": "hackbench.txt",
                    "c2-i1-eevdf.hackbench.out": "messaging.txt"})
    ours, other = parse_results(res)[0]
    assert ours.value == pytest.approx(1.873) and ours.error is None
    assert other.value is None and "no 'Time:' line" in other.error


def test_hackbench_target_is_1_1x_eevdf():
    recs = [_rec("hackbench", 2, "eevdf", 0, 2.0), _rec("hackbench", 2, "eevdf", 1, 2.0),
            _rec("hackbench", 2, "pandemonium", 1, 2.3), _rec("hackbench", 2, "pandemonium-bpf", 1, 2.1)]
    cells = {c.scheduler: c for c in aggregate(recs)}
    assert verdict(cells["pandemonium"]).startswith("missed (target <= 1.1x")
    assert verdict(cells["pandemonium-bpf"]) == "met"


def test_plot_scoreboard_per_core_count(tmp_path):
    pytest.importorskip("matplotlib")
    recs = [_rec(p, c, "eevdf", i, 10.0) for p in ("latency", "ipc") for c in (2, 4) for i in (0, 1)]
    recs += [_rec(p, c, s, 1, v) for p in ("latency", "ipc") for c in (2, 4)
             for s, v in (("pandemonium", 5.0), ("bpfland", 20.0))]
    assert plot(tmp_path, aggregate(recs), ["latency", "ipc"]) == "4 plot(s) written"
    assert (tmp_path / "scoreboard-2c.png").stat().st_size > 1000
    assert (tmp_path / "scoreboard-4c.png").is_file() and (tmp_path / "ipc.png").is_file()


def test_plot_colours_follow_the_scheduler_not_the_plot():
    from tools.pandemonium.bench.plots import colors

    cells = aggregate([_rec("ipc", 2, "pandemonium", 1, 1.0), _rec("ipc", 2, "eevdf", 0, 1.0),
                       _rec("ipc", 2, "bpfland", 1, 1.0)])
    assert colors(cells) == {"eevdf": "C0", "pandemonium": "C1", "bpfland": "C2"}


def test_launch_reports_what_the_busy_loops_beside_it_got(tmp_path):
    res = _results(tmp_path, [(2, 1, "bpfland", "launch", 0, 0, 250, COST, COST)],
                   {"c2-i1-bpfland.launch.out": "launch.txt"})
    records, _, _ = parse_results(res)
    r = records[0]
    assert not r.error and r.value == pytest.approx(30770.462)
    # 3.00 s of CPU over 2.50 s: 1.2 CPUs, where 4 loops beside one chain on 2 CPUs get 1.6
    assert r.extra["load_cpus"] == pytest.approx(1.2)
    assert r.extra["load_fair_cpus"] == pytest.approx(1.6)
    eevdf = Record(2, 1, "eevdf", "launch", 0, 2.5, 31000.0,
                   extra={"load_cpus": 1.6, "load_fair_cpus": 1.6})
    notes = verdicts._launch_side(SimpleNamespace(records=[eevdf, r]))
    assert notes == ["busy loops' CPUs while the launches ran at 2 cores (median of runs; their "
                     "fair share beside the launch chain 1.60): eevdf 1.60 (1.00x), "
                     "bpfland 1.20 (0.75x)"]
    # A run without the line (an older driver) has launch times only, and no note.
    (res / "raw" / "c2-i1-bpfland.launch.out").write_text(
        (FIX / "launch.txt").read_text().splitlines()[0] + "\n")
    old = parse_results(res)[0][0]
    assert "load_cpus" not in old.extra
    assert verdicts._launch_side(SimpleNamespace(records=[old])) == []


def test_phase_plot_axis_labels_wrap_to_fit_beside_the_plot():
    from tools.pandemonium.bench.plan import PHASES
    from tools.pandemonium.bench.plots import axis_label

    for p in PHASES.values():
        label = axis_label(p.metric, p.unit)
        assert all(len(line) <= 40 for line in label.splitlines()), p.name
        assert label.split() == f"{p.metric} ({p.unit})".split()
    assert axis_label("probe P99", "us") == "probe P99 (us)"
