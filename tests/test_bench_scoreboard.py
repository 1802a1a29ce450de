"""Host tests of the scoreboard: the 'ahead' definition, the table, failed schedulers' rows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tools.pandemonium.bench import commands, scoreboard
from tools.pandemonium.bench.aggregate import aggregate
from tools.pandemonium.bench.parse import Record
from tools.pandemonium.bench.report import markdown, phase_table


def _rec(phase, sched, it, value, cores=2, error=None):
    return Record(cores, it, sched, phase, 0 if error is None else 201, 1.0, value, error=error)


def _runs(phase, sched, values, cores=2):
    return [_rec(phase, sched, i + 1, v, cores) for i, v in enumerate(values)]


def test_ahead_means_median_at_most_every_others_worst_run():
    recs = (_runs("latency", "eevdf", [100, 100, 100, 100]) + _runs("latency", "pandemonium", [9, 10, 30])
            + _runs("latency", "bpfland", [8, 9, 11]) + _runs("latency", "pandemonium-bpf", [20, 20, 20]))
    # median 10 > bpfland's median 9 but within its runs (max 11): ahead
    s = scoreboard.score_phase(aggregate(recs), "latency", 2)
    assert s.ahead and s.behind == []
    recs = (_runs("latency", "eevdf", [100, 100]) + _runs("latency", "pandemonium", [12, 12, 12])
            + _runs("latency", "bpfland", [8, 9, 11]))
    s = scoreboard.score_phase(aggregate(recs), "latency", 2)
    assert not s.ahead and s.behind == ["bpfland"]  # 12 > 11: beyond bpfland's spread


def test_one_run_each_compares_values_and_ties_count_as_ahead():
    recs = _runs("hackbench", "eevdf", [2.0]) + _runs("hackbench", "pandemonium", [2.0])
    assert scoreboard.score_phase(aggregate(recs), "hackbench", 2).ahead
    recs = _runs("hackbench", "eevdf", [1.9]) + _runs("hackbench", "pandemonium", [2.0])
    s = scoreboard.score_phase(aggregate(recs), "hackbench", 2)
    assert not s.ahead and s.behind == ["eevdf"]


def test_failed_schedulers_are_left_out_and_a_failed_pandemonium_is_not_ahead():
    recs = (_runs("ipc", "eevdf", [10.0]) + _runs("ipc", "pandemonium", [9.0])
            + [_rec("ipc", "upstream", 1, None, error="did not attach: aborted")])
    s = scoreboard.score_phase(aggregate(recs), "ipc", 2)
    assert s.ahead and s.missing == ["upstream"]
    recs = _runs("ipc", "eevdf", [10.0]) + [_rec("ipc", "pandemonium", 1, None, error="x")]
    s = scoreboard.score_phase(aggregate(recs), "ipc", 2)
    assert not s.ahead and s.behind == ["eevdf"]
    # Nothing to compare with: the phase does not count.
    assert scoreboard.score_phase(aggregate(_runs("ipc", "pandemonium", [1.0])), "ipc", 2) is None


def _board_records():
    recs = []
    for cores in (2, 4):
        recs += _runs("latency", "eevdf", [1000, 1000], cores)
        recs += _runs("latency", "pandemonium", [200], cores)
        recs += _runs("latency", "bpfland", [300], cores)
        recs += _runs("launch", "eevdf", [100, 100], cores)
        recs += _runs("launch", "pandemonium", [1500 if cores == 2 else 90], cores)
        recs += _runs("launch", "bpfland", [120], cores)
        recs += [_rec("latency", "upstream", 1, None, cores, "did not attach: exited (status 1) "
                      "before sched_ext was enabled: BPF load | too slow"),
                 _rec("launch", "upstream", 1, None, cores, "did not attach: exited (status 1) "
                      "before sched_ext was enabled: BPF load | too slow")]
    return recs


def test_ahead_lines_and_table_per_core_count():
    cells = aggregate(_board_records())
    by = scoreboard.scores(cells, ["latency", "launch"])
    assert scoreboard.ahead_line(2, by[2]) == ("2 cores: ahead of every other scheduler on 1 of 2 "
                                               "phases; behind on launch (eevdf, bpfland)")
    assert scoreboard.ahead_line(4, by[4]) == ("4 cores: ahead of every other scheduler on 2 of 2 "
                                               "phases")
    table = scoreboard.table(cells, ["latency", "launch"])
    assert "| phase | eevdf | pandemonium | bpfland | upstream | ahead |" in table
    assert "| latency | 1000 us | 0.20x (met) | 0.30x | failed | yes |" in table
    assert "| launch | 100 us | 15.00x (missed) | 1.20x | failed | no (eevdf, bpfland) |" in table
    j = scoreboard.to_json(cells, ["latency", "launch"])
    assert j["2"]["ahead"] == 1 and j["2"]["phases"] == 2
    assert j["2"]["per_phase"]["latency"]["no_value"] == ["upstream"]


def test_report_puts_the_scoreboard_first_and_the_ahead_lines_last():
    cells = aggregate(_board_records())
    md = markdown("bench-scale", {"accel": "tcg-multi", "vcpus": 4, "kernel": "k"}, cells,
                  ["latency", "launch"], ["a note"])
    assert md.index("## scoreboard") < md.index("### latency: probe P99")
    assert md.rstrip().endswith("- 4 cores: ahead of every other scheduler on 2 of 2 phases")
    # The failed scheduler has a row in every phase table that says why ('|' made harmless).
    row = next(ln for ln in phase_table("launch", cells).splitlines()
               if ln.startswith("| 2 | upstream |"))
    assert "| 0 (1 failed) |" in row
    assert "FAILED: did not attach: exited (status 1) before sched_ext was enabled: BPF load / " \
           "too slow |" in row


def test_native_header():
    md = markdown("bench-scale", {"native": True, "kernel": "6.18.9", "cpus": 8}, [], [], [])
    assert "Native run on this machine (kernel 6.18.9, 8 CPUs online, no VM)" in md
    assert "VM benchmark" not in md


def test_round_robin_header_warns_of_lock_handoffs():
    env = {"kernel": "7.3.4", "vcpus": 2}
    for accel in ("tcg-single", "tcg-icount"):
        assert "costs milliseconds" in markdown("bench-scale", {**env, "accel": accel}, [], [], [])
    assert "costs milliseconds" not in markdown("bench-scale", {**env, "accel": "tcg-multi"}, [],
                                                [], [])
    one = {"kernel": "7.3.4", "vcpus": 1, "accel": "tcg-single"}
    assert "costs milliseconds" not in markdown("bench-scale", one, [], [], [])


@pytest.mark.parametrize("event,fatal", [
    ("attach-failed c2-i1-bpfland exited (status 1) before sched_ext was enabled: x", False),
    ("attach-failed c2-i1-ext:scx_x not enabled after 240s", False),
    ("ejected c2-i1-upstream: during latency: error", False),
    ("stop-status c2-i1-lavd exited with status 1", False),
    ("attach-failed c2-i1-pandemonium exited (status 1) before sched_ext was enabled", True),
    ("attach-failed c2-i1-pandemonium-bpf not enabled after 240s", True),
    ("stop-timeout c2-i1-bpfland: still running 60s after SIGTERM", True),
    ("skipped c2-i2-upstream: an earlier scheduler did not stop", True),
    ("hotplug-failed cpu1 -> 0", True),
    ("detached c2-i1-bpfland: sched_ext state disabled before phase ipc", False),
])
def test_an_external_anchors_own_failure_is_not_fatal(event, fatal):
    assert commands.event_is_fatal(event) is fatal


def test_failed_verdict_and_notes_for_a_non_attaching_anchor():
    recs = [_rec("ipc", "upstream", 1, None, error="did not attach: slow")]
    ev = ["attach-failed c2-i1-upstream exited (status 1) before sched_ext was enabled: slow"]
    result = SimpleNamespace(records=recs, events=ev, rc=0, out_dir=None, results_dir=None,
                             env={"externals": {"upstream": "scx_pandemonium 5.23.1 (crates.io)"},
                                  "version_upstream": "scx_pandemonium 5.23.1"})
    notes = commands.notes_for(commands.BY_NAME["bench-scale"], result, aggregate(recs))
    assert not commands.failed(result, notes)
    assert notes[0].startswith("guest event: attach-failed c2-i1-upstream")
    assert any(n.startswith("'upstream' is scx_pandemonium 5.23.1 (crates.io), reporting "
                            "'scx_pandemonium 5.23.1'") for n in notes)
    result.events = ["attach-failed c2-i1-pandemonium exited (status 1)"]
    assert commands.failed(result, commands.notes_for(commands.BY_NAME["bench-scale"], result, []))


def test_the_idle_floor_is_shown_not_scored_and_judges_the_latency_target():
    from tools.pandemonium.bench import verdicts
    recs = (_runs("floor", "eevdf", [900, 1000, 1100]) + _runs("floor", "pandemonium", [1200] * 3)
            + _runs("latency", "eevdf", [4000] * 4) + _runs("latency", "pandemonium", [3000] * 3))
    cells = aggregate(recs)
    assert scoreboard.score_phase(cells, "floor", 2) is None  # pandemonium is behind, uncounted
    assert [s.phase for s in scoreboard.scores(cells, ["floor", "latency"])[2]] == ["latency"]
    notes = verdicts.VERDICTS["bench-scale"](SimpleNamespace(records=recs), cells)
    assert notes[0] == "idle floor at 2 cores (probe P99, no load): eevdf 1000 us, pandemonium 1200 us"
    assert notes[1] == ("latency target at 2 cores: 0.2x EEVDF's 4000 us = 800 us, below the "
                        "lowest idle floor (1000 us)")
    recs = _runs("floor", "eevdf", [500] * 3) + _runs("latency", "eevdf", [4000] * 3)
    assert "at or above the lowest idle floor (500 us)" in verdicts.VERDICTS["bench-scale"](
        SimpleNamespace(records=recs), aggregate(recs))[1]


def test_probe_split_gives_the_schedulers_own_wake_to_run_part():
    from tools.pandemonium.bench import verdicts
    from tools.pandemonium.bench.parse import PARSERS
    out = ('{"tool":"probe","p50_ns":120000,"p99_ns":3100000,"p999_ns":3200000,'
           '"max_ns":3300000,"count":400}\nwake-to-run n=400 p50_us=54 p99_us=187 max_us=215\n')
    recs = []
    for sched, it, p99 in [("eevdf", 0, 4000), ("eevdf", 1, 4400), ("pandemonium", 1, 200),
                           ("pandemonium", 2, 180), ("pandemonium", 3, 400)]:
        r = _rec("latency", sched, it, None)
        PARSERS["latency"](out.replace("p99_us=187", f"p99_us={p99}"), r)
        recs.append(r)
    assert recs[0].value == 3100.0 and recs[0].extra["wake_run_n"] == 400
    line = verdicts.VERDICTS["bench-scale"](SimpleNamespace(records=recs), aggregate(recs))[-1]
    assert line.startswith("wake-to-run P99 at 2 cores")
    assert line.endswith("latency: eevdf 4200 us, pandemonium 200 us (0.05x)")
    r = _rec("latency", "eevdf", 1, None)
    PARSERS["latency"](out.split("wake-to-run")[0], r)  # no tracefs in the guest: no split
    assert "wake_run_p99_us" not in r.extra
