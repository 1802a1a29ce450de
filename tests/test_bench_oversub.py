"""The oversub phase's parsing (tools/pandemonium/bench/oversub.py)."""

from tools.pandemonium.bench import plan as P
from tools.pandemonium.bench.oversub import expand, figures
from tools.pandemonium.bench.parse import PARSERS, Record


def _line(wall, nivcsw=3):
    return ('{"coopbench": {"mode": "omp", "threads": 2, "regions": 600, "n": 48, '
            f'"wall_s": {wall}, "user_s": 1.0, "sys_s": 0.0, "nvcsw": 10, "nivcsw": {nivcsw}, '
            '"checksum": 1.0}}')


OUT = "\n".join([
    "oversub-begin omp-active", _line(0.95), _line(1.02, 5), "oversub-end omp-active",
    "oversub-state omp-active enabled",
    "oversub-begin omp-passive", _line(1.4), "oversub-end omp-passive",
    "oversub-state omp-passive enabled",
])


def test_each_part_is_a_figure_with_the_later_process_as_makespan():
    f = figures(OUT)
    a = f["oversub-active"]
    assert a["value"] == 1.02 and a["error"] is None and a["state"] == "enabled"
    assert a["extra"]["process_s"] == [0.95, 1.02] and a["extra"]["nivcsw"] == 8
    assert f["oversub-passive"]["value"] is None
    assert "1 of 2 coopbench processes" in f["oversub-passive"]["error"]
    assert "did not run" in f["oversub-yield"]["error"]


def test_the_three_process_parts_need_three_reports():
    three = "\n".join(["oversub-begin omp-active-3", _line(1.5), _line(1.6), _line(1.7, 4),
                       "oversub-end omp-active-3", "oversub-state omp-active-3 enabled",
                       "oversub-begin omp-passive-3", _line(2.1), _line(2.0),
                       "oversub-end omp-passive-3"])
    f = figures(OUT + "\n" + three)
    a = f["oversub-active-3"]
    assert a["value"] == 1.7 and a["error"] is None and a["extra"]["nivcsw"] == 10
    assert f["oversub-passive-3"]["value"] is None
    assert "2 of 3 coopbench processes" in f["oversub-passive-3"]["error"]
    # The 2-process figures read their own parts only.
    assert f["oversub-active"]["value"] == 1.02


def test_the_step_expands_into_the_plan_figures():
    rec = Record(2, 1, P.PANDEMONIUM_COOP, "oversub", 0, 10.0)
    PARSERS["oversub"](OUT, rec)
    recs = expand([rec])
    assert [r.phase for r in recs] == [p.name for p in P.OVERSUB_FIGURES]
    assert recs[1].value == 1.02 and recs[0].value is None and "did not run" in recs[0].error
    assert P.report_phases(["oversub"]) == [p.name for p in P.OVERSUB_FIGURES]


def test_the_coop_scheduler_is_ours_and_the_old_probe_phase_is_hogs():
    assert not P.is_external(P.PANDEMONIUM_COOP)
    assert "hogs" in P.PHASES and "oversub" in P.SCALE_EXTRA_PHASES
    assert P.Sizes().guest_env()["BENCH_COOP_REGIONS"] == "600"


def test_the_learning_scheduler_is_ours_and_its_warm_up_is_no_figure():
    assert not P.is_external(P.PANDEMONIUM_LEARN)
    # The driver's warm-up pairs print no section of their own: only the three parts count.
    out = "oversub-learned 2 1\n" + OUT
    assert set(figures(out)) == {"oversub-active-1", "oversub-active", "oversub-passive",
                                 "oversub-yield-1", "oversub-yield", "oversub-active-3",
                                 "oversub-passive-3", "oversub-cyclictest"}
    assert figures(out)["oversub-active"]["value"] == 1.02


def test_the_yield_barrier_alone_is_its_own_part_and_a_reference():
    alone = "\n".join(["oversub-begin yield-1", _line(17.6), "oversub-end yield-1",
                        "oversub-begin yield", _line(4.2), _line(6.0), "oversub-end yield"])
    f = figures(alone)
    assert f["oversub-yield-1"]["value"] == 17.6 and f["oversub-yield-1"]["error"] is None
    assert f["oversub-yield"]["value"] == 6.0
    assert P.PHASES["oversub-yield-1"].reference and not P.PHASES["oversub-yield"].reference


def test_the_active_wait_alone_is_its_own_part_and_a_reference():
    alone = "\n".join(["oversub-begin omp-active-1", _line(0.61), "oversub-end omp-active-1",
                        "oversub-state omp-active-1 enabled", OUT])
    f = figures(alone)
    assert f["oversub-active-1"]["value"] == 0.61 and f["oversub-active-1"]["error"] is None
    assert f["oversub-active"]["value"] == 1.02
    assert P.PHASES["oversub-active-1"].reference and not P.PHASES["oversub-active"].reference


def test_the_report_reads_each_makespan_against_k_times_its_own_alone_run():
    from types import SimpleNamespace

    from tools.pandemonium.bench import verdicts

    def step(sched, it=1, **parts):
        """One oversub step as parse_oversub leaves it: PART=(value, state) per figure."""
        rec = Record(2, it, sched, "oversub", 0, 10.0)
        rec.extra = {"figures": {f"oversub-{k.replace('_', '-')}": {
            "value": v, "error": None if v is not None else "did not run", "state": st}
            for k, (v, st) in parts.items()}}
        return rec
    on, off = "enabled", "disabled"
    ejected = step("pandemonium-coop", it=2, active_1=(0.4, on), active=(9.9, off),
                   active_3=(None, on))
    ejected.error = "ejected during the step"
    records = [step("eevdf", active_1=(0.55, off), active=(1.5, off), active_3=(2.4, off)),
               step("pandemonium-coop", active_1=(0.6, on), active=(1.1, on)), ejected,
               step("bpfland", active=(2.0, on)),
               Record(2, 1, "eevdf", "hackbench", 0, 1.0, 0.8)]
    notes = verdicts._oversub_bound(SimpleNamespace(records=records))
    # In a step that failed, a part that ended with the scheduler ejected (run partly under
    # EEVDF) is left out, the parts before it count. One yardstick for all: the fastest median
    # alone (pandemonium-coop's 0.5 s of 0.6 and 0.4).
    assert notes == [
        "oversub-active at 2 cores against 2 x one process alone (pandemonium-coop's median "
        "0.50 s, the fastest; near 1.00x the teams run whole, in turn): eevdf 1.50 s (1.50x), "
        "pandemonium-coop 1.10 s (1.10x), bpfland 2.00 s (2.00x)",
        "oversub-active-3 at 2 cores against 3 x one process alone (pandemonium-coop's median "
        "0.50 s, the fastest; near 1.00x the teams run whole, in turn): eevdf 2.40 s (1.60x)"]
    assert verdicts._oversub_bound(SimpleNamespace(records=[])) == []


# cyclictest -h rows: latency (us) then one count per thread; 100 samples, P99 is the 99th.
HIST = "\n".join(["# /dev/cpu_dma_latency set to 0us", "000050 40 40", "000400 9 10",
                  "003000 1 0", "# Max Latencies: 03000 00400",
                  "# Histogram Overflows: 00000 00000"])


def test_the_latency_part_is_cyclictest_p99_beside_the_active_processes():
    out = "\n".join(["oversub-begin omp-active-lat", HIST, "oversub-end omp-active-lat",
                     "oversub-state omp-active-lat enabled"])
    f = figures(out)["oversub-cyclictest"]
    assert f["value"] == 400.0 and f["error"] is None and f["state"] == "enabled"
    assert f["extra"] == {"p50_us": 50.0, "max_us": 3000.0}
    # A process that ended before cyclictest did leaves part of the window unloaded: no figure.
    early = out.replace("oversub-end", "oversub-note omp-active-lat a coopbench process ended "
                        "before cyclictest\noversub-end")
    f = figures(early)["oversub-cyclictest"]
    assert f["value"] is None and "ended before cyclictest" in f["error"]
    assert "did not run" in figures(OUT)["oversub-cyclictest"]["error"]
    assert "no cyclictest histogram rows" in figures(
        "oversub-begin omp-active-lat\noversub-end omp-active-lat")["oversub-cyclictest"]["error"]
    assert not P.PHASES["oversub-cyclictest"].target  # its bar is ours plain, not EEVDF


def test_the_report_reads_the_latency_beside_against_ours_with_the_treatment_off():
    from types import SimpleNamespace

    from tools.pandemonium.bench import verdicts

    def step(sched, p99_us, it=1):
        rec = Record(2, it, sched, "oversub", 0, 10.0)
        rec.extra = {"figures": {"oversub-cyclictest": {"value": p99_us, "error": None,
                                                        "state": "enabled"}}}
        return rec
    records = [step("eevdf", 9000.0), step("pandemonium", 4000.0),
               step("pandemonium", 6000.0, it=2), step("pandemonium-coop", 4500.0),
               step("pandemonium-coop", 5500.0, it=2)]
    assert verdicts._oversub_latency(SimpleNamespace(records=records)) == [
        "oversub-cyclictest at 2 cores against ours with the cooperative treatment off (median "
        "of runs, min-max, ratio to pandemonium's 5.00 ms): eevdf 9.00 ms (9.00-9.00, 1.80x), "
        "pandemonium 5.00 ms (4.00-6.00, 1.00x), pandemonium-coop 5.00 ms (4.50-5.50, 1.00x)"]
    # Without the plain run there is nothing to read against.
    assert verdicts._oversub_latency(SimpleNamespace(records=records[:1] + records[3:])) == []
