"""Host tests of the admin phase (issue #32): the guest's raw counters turned into figures, a
figure that cannot be had turned into an error rather than a crash, and the figures reported
beside EEVDF and the configured values like any phase."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.pandemonium.bench import admin, scoreboard
from tools.pandemonium.bench import plan as P
from tools.pandemonium.bench.aggregate import aggregate
from tools.pandemonium.bench.parse import Record, parse_results
from tools.pandemonium.bench.report import markdown, phase_table, verdict

FIX = Path(__file__).parent / "fixtures" / "bench"
TEXT = (FIX / "admin.txt").read_text()


def test_every_figure_from_the_raw_counters():
    f = admin.figures(TEXT)
    assert not [v["error"] for v in f.values() if v["error"]]
    assert f["admin-weight"]["value"] == pytest.approx(3.0)  # 3 s of w300 against 1 s of w100
    assert f["admin-cpumax"]["value"] == pytest.approx(0.5)  # 2 s of CPU in a 4 s window
    assert f["admin-cpumax"]["extra"]["free_cpus"] == pytest.approx(1.5)
    assert f["admin-nice"]["value"] == pytest.approx(65.0)  # 7.8 s against 0.12 s
    # 100 samples (one overflow): 90 at 10 us, 98 by 20 us, the 99th in the 100 us bucket
    assert f["admin-nice-lat"]["value"] == 100.0
    assert f["admin-nice-lat"]["extra"]["p50_us"] == 10.0
    assert f["admin-idle-lat"]["value"] == 15.0  # 198 of 200 samples at 15 us
    assert f["admin-idle-share"]["value"] == pytest.approx(0.995)
    assert f["admin-build"]["value"] == pytest.approx(1.5)
    assert f["admin-build"]["extra"]["build_cpus"] == pytest.approx(0.2)  # 0.3 s in 1.5 s


def test_no_cpu_controller_is_an_error_per_figure_that_says_why():
    text = "\n".join(ln for ln in TEXT.splitlines()
                     if not ln.startswith(("admin-count weight", "admin-count cpumax")))
    text += ("\nadmin-note weight cannot enable the cpu controller (controllers: memory)"
             "\nadmin-note cpumax cannot enable the cpu controller (controllers: memory)\n")
    f = admin.figures(text)
    assert f["admin-weight"]["value"] is None
    assert "no w300 counter" in f["admin-weight"]["error"]
    assert "cannot enable the cpu controller" in f["admin-weight"]["error"]
    assert f["admin-cpumax"]["value"] is None and "controllers: memory" in f["admin-cpumax"]["error"]
    assert f["admin-nice"]["error"] is None and f["admin-build"]["error"] is None


def test_a_side_without_cpu_time_and_a_cut_off_tool_are_errors_not_crashes():
    text = TEXT.replace("admin-count nice nice19 2000000000 2120000000",
                        "admin-count nice nice19 5 5")
    text = text[:text.index("admin-end idlelat")]  # the guest died inside cyclictest
    f = admin.figures(text)
    assert f["admin-nice"]["value"] is None and "nice19 side got no CPU time" in f["admin-nice"]["error"]
    assert f["admin-idle-lat"]["value"] == 15.0  # what was printed still counts
    assert f["admin-idle-share"]["error"] and f["admin-build"]["error"]


def test_parse_results_keeps_one_step_and_expand_makes_one_record_per_figure(tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "c2-i1-eevdf.admin.out").write_text(TEXT)
    (tmp_path / "raw" / "c2-i1-lavd.admin.out").write_text("exited (status 1): no cgroup\n")
    (tmp_path / "steps.tsv").write_text(
        "2 1 eevdf admin 0 100 9100 - - - - - -\n2 1 lavd admin 201 9100 9100 - - - - - -\n")
    records, _, _ = parse_results(tmp_path)
    assert [r.phase for r in records] == ["admin", "admin"]  # steps stay steps (crash notes)
    figs = admin.expand(records)
    assert [r.phase for r in figs] == list(admin.FIGURES) * 2
    eevdf = {r.phase: r for r in figs if r.scheduler == "eevdf"}
    assert eevdf["admin-weight"].value == pytest.approx(3.0) and eevdf["admin-weight"].wall_s == 90.0
    lavd = [r for r in figs if r.scheduler == "lavd"]
    assert all(r.value is None and "did not attach" in r.error for r in lavd)


def _figs(sched, it, **values):
    return [Record(2, it, sched, name, 0, 1.0, values.get(name)) for name in admin.FIGURES
            if name in values]


def test_report_gives_ratio_to_eevdf_and_to_the_configured_value():
    recs = []
    for it in (0, 1, 2):
        recs += _figs("eevdf", it, **{"admin-weight": 3.0, "admin-build": 2.0})
    for it, w in ((1, 1.0), (2, 1.1)):
        recs += _figs("pandemonium", it, **{"admin-weight": w, "admin-build": 1.0})
        recs += _figs("bpfland", it, **{"admin-weight": 2.9, "admin-build": 3.0})
    cells = aggregate(recs)
    ours = next(c for c in cells if c.phase == "admin-weight" and c.scheduler == "pandemonium")
    assert ours.ratio == pytest.approx(1.05 / 3.0)
    assert verdict(ours).startswith("missed (target 3.00 +-10 %)")
    table = phase_table("admin-weight", cells)
    assert "closest to the configured 3.00 is best" in table and "ratio to configured" in table
    assert "| 0.35x of 3 |" in table
    build = phase_table("admin-build", cells)
    assert "ratio to configured" not in build and "lower is better" in build
    # Lower is better for the build, closest to 3 for the weights: bpfland's 2.9 is ahead of
    # ours there although it is the larger number.
    s = scoreboard.score_phase(cells, "admin-weight", 2)
    assert not s.ahead and sorted(s.behind) == ["bpfland", "eevdf"]
    assert scoreboard.score_phase(cells, "admin-build", 2).ahead
    md = markdown("bench-scale", {"accel": "tcg-multi", "vcpus": 2, "kernel": "k"}, cells,
                  P.report_phases(["admin"]), [])
    row = next(ln for ln in md.splitlines() if ln.startswith("| admin-weight (=3)"))
    assert "3.00 [1.00x of 3]" in row and "0.35x [0.35x of 3] (missed)" in row


def test_the_nice_target_is_eevdfs_ratio_and_the_cost_is_counted_once():
    recs = []
    for it in (0, 1):
        recs += _figs("eevdf", it, **{"admin-nice": 50.0})
    recs += _figs("pandemonium", 1, **{"admin-nice": 45.0})
    ours = next(c for c in aggregate(recs) if c.scheduler == "pandemonium")
    assert verdict(ours) == "met"  # 0.90x EEVDF's, although 0.66x the configured 68.3
    recs[-1].value = 20.0
    ours = next(c for c in aggregate(recs) if c.scheduler == "pandemonium")
    assert verdict(ours) == "missed (target EEVDF's +-15 %, or nearer the configured 68.27)"
    # Past EEVDF's band toward the configured 68.3 (EEVDF short of it) is met, up to 15 % over
    # it; beyond that, or away from it, it is not.
    for value, ok in ((65.0, True), (78.0, True), (79.0, False), (42.0, False)):
        recs[-1].value = value
        ours = next(c for c in aggregate(recs) if c.scheduler == "pandemonium")
        assert (verdict(ours) == "met") == ok, value
    step = Record(2, 1, "pandemonium", "admin", 0, 90.0, sched_cpu_pct=0.3, sched_rss_kb=9000,
                  extra={"figures": admin.figures(TEXT)})
    figs = admin.expand([step])
    assert [r.sched_cpu_pct for r in figs] == [0.3] + [None] * 6


def test_configured_closeness_weighs_over_and_under_alike():
    recs = (_figs("eevdf", 1, **{"admin-cpumax": 0.5}) + _figs("pandemonium", 1, **{"admin-cpumax": 0.4})
            + _figs("lavd", 1, **{"admin-cpumax": 0.6}))
    # |log(0.4/0.5)| = 0.223 > |log(0.6/0.5)| = 0.182: ours is farther than lavd's
    s = scoreboard.score_phase(aggregate(recs), "admin-cpumax", 2)
    assert s.behind == ["eevdf", "lavd"]


def test_the_admin_phase_is_part_of_bench_scale_and_reports_its_figures():
    assert "admin" in P.SCALE_PHASES
    assert P.report_phases(["hackbench", "admin"]) == ["hackbench", *admin.FIGURES]
    plan = P.Plan(phases=["admin"], schedulers=["pandemonium"], cores=[2], iterations=1)
    # 12 windows of BENCH_D (4 s): weight, cpu.max and the idle share 1 each, nice 3, the two
    # cyclictests 3 each (BENCH_CYC_D); the fixed 45 s cover settling, the build and hackbench.
    assert plan.step_weight("admin") == pytest.approx(45.0 + 4 * 12)


def test_the_guest_admin_functions_leave_run_phases_variables_alone():
    """run_phase keeps t0/c0/t1/c1 in globals around the phase; an admin helper that assigned
    one wrote a malformed steps.tsv line (found in the VM)."""
    script = (Path(admin.__file__).parent / "guest" / "driver.sh").read_text()
    block = script[script.index("# -- admin:"):script.index("phase_admin()")]
    for name in ("t0", "c0", "t1", "c1", "rc", "OUT", "why"):
        assert not re.search(rf"(^|[\s;]){name}=", block), name


def test_the_notes_say_where_the_capped_and_light_groups_cpu_went():
    from types import SimpleNamespace

    from tools.pandemonium.bench.verdicts import VERDICTS

    steps = [Record(2, it, "eevdf", "admin", 0, 90.0, extra={"figures": admin.figures(TEXT)})
             for it in (0, 1)]
    steps.append(Record(2, 1, "lavd", "admin", 201, 0.0, error="did not attach: no"))
    # Ejected with no part known to have ended attached: its side figures are not its own.
    steps.append(Record(2, 1, "flash", "admin", 200, 90.0, error="ejected",
                        extra={"figures": admin.figures(TEXT)}))
    notes = VERDICTS["bench-scale"](SimpleNamespace(records=steps), [])
    assert "the unlimited group's CPUs beside the capped one at 2 cores (median of runs): " \
        "eevdf 1.500" in notes  # flash's ejected run left out
    assert any(n.startswith("the cpu.weight=20 build's CPUs") and n.endswith("eevdf 0.200")
               for n in notes)


def test_an_ejected_scheduler_keeps_the_parts_it_finished_attached():
    """scx_flash 1.1.4 starved a SCHED_IDLE hog until the watchdog ejected it in the idle part:
    the figures before were still its own, the rest were measured under EEVDF."""
    text = TEXT.replace("admin-begin nicelat", "admin-state weight enabled\nadmin-state cpumax "
                        "enabled\nadmin-begin nicelat")
    text = text.replace("admin-count idleshare window_cs 4000 4400", "admin-count idleshare "
                        "window_cs 4000 4400\nadmin-state nice enabled\nadmin-state idle disabled")
    step = Record(2, 1, "flash", "admin", 200, 90.0,
                  error="the kernel ejected the scheduler during this phase (see the events)",
                  extra={"figures": admin.figures(text)})
    by = {r.phase: r for r in admin.expand([step])}
    for kept in ("admin-weight", "admin-cpumax", "admin-nice", "admin-nice-lat"):
        assert by[kept].value is not None and by[kept].error is None, kept
    for lost in ("admin-idle-lat", "admin-idle-share", "admin-build"):
        assert by[lost].value is None and "ejected" in by[lost].error, lost
    # Without the state lines (or with EEVDF's 'disabled') nothing of an ejected step is kept.
    step.extra = {"figures": admin.figures(TEXT)}
    assert all(r.value is None for r in admin.expand([step]))
