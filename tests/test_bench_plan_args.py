"""Host tests of the benchmark plan and argument handling (no VM)."""

from __future__ import annotations

import pytest

from tools.pandemonium import cli
from tools.pandemonium.common import PandemoniumError
from tools.pandemonium.bench import commands
from tools.pandemonium.bench import plan as P


def _args(*argv: str):
    return cli.build_parser().parse_args(list(argv))


def test_runs_bracket_every_iteration_with_eevdf_largest_core_count_first():
    plan = P.Plan(phases=["latency"], schedulers=[P.PANDEMONIUM, P.PANDEMONIUM_BPF],
                  cores=[2, 4], iterations=2)
    tokens = [r.token() for r in plan.runs()]
    assert tokens == [
        "4:0:eevdf", "4:1:pandemonium", "4:1:pandemonium-bpf", "4:1:eevdf",
        "4:2:pandemonium", "4:2:pandemonium-bpf", "4:2:eevdf",
        "2:0:eevdf", "2:1:pandemonium", "2:1:pandemonium-bpf", "2:1:eevdf",
        "2:2:pandemonium", "2:2:pandemonium-bpf", "2:2:eevdf"]


def test_runs_without_bracket_have_no_eevdf():
    plan = P.Plan(phases=["idle"], schedulers=[P.PANDEMONIUM], cores=[2], iterations=3,
                  bracket=False)
    assert [r.scheduler for r in plan.runs()] == [P.PANDEMONIUM] * 3


def test_parse_cores_sorts_dedups_and_rejects_bad_input():
    assert P.parse_cores("4,2,4") == [2, 4]
    for bad in ("", "x", "0,2", "2,-1"):
        with pytest.raises(ValueError):
            P.parse_cores(bad)
    with pytest.raises(ValueError, match="at most 4"):
        P.parse_cores("2,8", max_cpus=4)


def test_accel_multi_only_when_each_vcpu_has_a_host_core():
    assert P.accel_for(2, 2) == "tcg-multi"
    assert P.accel_for(4, 2) == "tcg-single"


def test_eta_scales_remaining_weight_by_pace():
    assert P.eta_s(0, 100, 10) is None
    assert P.eta_s(25, 100, 50) == pytest.approx(150)
    assert P.eta_s(100, 100, 50) == 0
    assert P.fmt_duration(None) == "?"
    assert P.fmt_duration(59.6) == "1m00s"
    assert P.fmt_duration(42) == "42s"


def test_estimate_counts_attaches_and_fixed_jobs():
    plan = P.Plan(phases=["throughput", "latency"], schedulers=[P.PANDEMONIUM], cores=[2],
                  iterations=1, sizes=P.Sizes(phase_s=5, ops=P.Sizes().ops // 2))
    # 2 EEVDF runs + 1 pandemonium run, each throughput (20 s at half the ops) + latency (2 + 5)
    assert plan.estimate_s(attach_s=30) == pytest.approx(3 * (10 + 7) + 30)


def test_quick_uses_one_core_count_one_iteration_and_short_sizes():
    args = _args("bench-scale", "--quick", "--cores", "2,4", "--iterations", "3")
    plan = commands.plan_from_args(commands.BY_NAME["bench-scale"], args)
    assert plan.cores == [2] and plan.iterations == 1
    assert plan.sizes.phase_s == P.Sizes.quick().phase_s
    assert plan.phases == P.SCALE_PHASES and plan.bracket
    # EEVDF before ours only: the smoke proves the harness, and a closing run is the same code.
    assert [r.scheduler for r in plan.runs()] == [P.EEVDF, P.PANDEMONIUM, P.PANDEMONIUM_BPF]


def test_coop_regions_sizes_the_oversub_processes():
    spec = commands.BY_NAME["bench-scale"]
    plan = commands.plan_from_args(spec, _args("bench-scale", "--coop-regions", "200"))
    assert plan.sizes.guest_env()["BENCH_COOP_REGIONS"] == "200"
    plan = commands.plan_from_args(spec, _args("bench-scale"))
    assert plan.sizes.guest_env()["BENCH_COOP_REGIONS"] == str(P.Sizes().coop_regions)


def test_external_takes_names_and_paths_repeatedly_and_pandemonium_only_drops_them():
    args = _args("bench-scale", "--external", "scx_bpfland", "--external", "upstream",
                 "--external", "/opt/scx_x --slice-us 5000", "--external", "lavd")
    plan = commands.plan_from_args(commands.BY_NAME["bench-scale"], args)
    assert plan.schedulers == [P.PANDEMONIUM, P.PANDEMONIUM_BPF, "bpfland", "upstream",
                               "ext:scx_x", "lavd"]
    by = {e.label: e for e in plan.external}
    assert by["bpfland"].anchor.crate == "scx_bpfland" and by["bpfland"].anchor.version == "1.1.4"
    assert by["upstream"].anchor.crate == "scx_pandemonium"
    assert by["upstream"].anchor.version == "5.23.1"
    assert by["lavd"].anchor.crate == "scx_lavd"
    assert by["ext:scx_x"].args == ("--slice-us", "5000")
    assert str(by["ext:scx_x"].path) == "/opt/scx_x"
    # Every external is bracketed by EEVDF like ours.
    assert [r.token() for r in plan.runs()][:8] == [
        "4:0:eevdf", "4:1:pandemonium", "4:1:pandemonium-bpf", "4:1:bpfland", "4:1:upstream",
        "4:1:ext:scx_x", "4:1:lavd", "4:1:eevdf"]
    assert all(P.is_external(s) for s in ("bpfland", "upstream", "ext:scx_x"))
    assert not any(P.is_external(s) for s in ("eevdf", "pandemonium", "pandemonium-bpf"))
    args = _args("bench-scale", "--pandemonium-only", "--external", "/opt/scx_x")
    plan = commands.plan_from_args(commands.BY_NAME["bench-scale"], args)
    assert plan.schedulers == [P.PANDEMONIUM, P.PANDEMONIUM_BPF] and not plan.bracket


def test_external_help_names_the_known_anchors(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench-scale", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--external SPEC" in out and "scx_pandemonium 5.23.1" in out and "bpfland" in out
    assert "--vm" in out and "--no-build" in out


@pytest.mark.parametrize("argv,msg", [
    (["--iterations", "0"], "--iterations"),
    (["--cores", "two"], "expected numbers"),
    (["--phase-seconds", "0"], "--phase-seconds"),
    (["--coop-regions", "0"], "--coop-regions"),
    (["--external", ""], "needs a NAME or PATH"),
    (["--external", "no_such_scheduler_xyz"], "not a known name"),
    (["--external", "/opt/x 'a b'"], "not supported"),
])
def test_bad_arguments_are_user_errors(argv, msg):
    args = _args("bench-scale", *argv)
    with pytest.raises(PandemoniumError, match=msg):
        commands.plan_from_args(commands.BY_NAME["bench-scale"], args)


def test_every_command_has_help_and_known_phases(capsys):
    for spec in commands.COMMANDS:
        assert all(p in P.PHASES for p in spec.phases), spec.name
        with pytest.raises(SystemExit) as exc:
            cli.build_parser().parse_args([spec.name, "--help"])
        assert exc.value.code == 0
        assert "VM" in capsys.readouterr().out


def test_every_phase_has_a_guest_function_and_a_parser():
    from tools.pandemonium.bench.driver import GUEST_DIR
    from tools.pandemonium.bench.parse import PARSERS

    from tools.pandemonium.bench.admin import FIGURES
    from tools.pandemonium.bench.felt import FIGURES as FELT_FIGURES
    from tools.pandemonium.bench.oversub import FIGURES as OVERSUB_FIGURES, LATENCY

    script = (GUEST_DIR / "driver.sh").read_text()
    for name, phase in P.PHASES.items():
        if phase.part_of:  # a figure of another phase's step: that phase's parser makes it
            assert phase.part_of in PARSERS, name
            assert (name in FIGURES or name in FELT_FIGURES.get(phase.part_of, {})
                    or name in OVERSUB_FIGURES or name in LATENCY), name
            continue
        assert f"phase_{name}()" in script, name
        assert name in PARSERS, name


def test_progress_line_reports_step_status_and_eta(caplog):
    from tools.pandemonium.bench.driver import _STEP, Progress

    plan = P.Plan(phases=["ipc", "latency"], schedulers=[P.PANDEMONIUM], cores=[2],
                  iterations=1, sizes=P.Sizes(phase_s=4))
    prog = Progress(plan, attach_s=0)
    # 3 runs x (ipc 4 + latency 2+4): weights 4, 6, 4, 6, 4, 6
    assert prog.weights == [4.0, 6.0] * 3
    m = _STEP.search("junk BENCH-STEP 2 6 2 0 eevdf latency 0")
    assert prog.line(m, 20.0) == ("bench: [2/6] 2 cores, iteration 0, eevdf, latency: ok | "
                                  "elapsed 20s, ETA 40s")
    m = _STEP.search("BENCH-STEP 3 6 2 1 pandemonium ipc failed")
    assert "ipc: FAILED (failed)" in prog.line(m, 30.0)
    # run_in_vm hands it each console line
    with caplog.at_level("INFO", logger="pandemonium"):
        prog("BENCH-START")
        prog("[  3.1] random kernel line")
        prog("BENCH-STEP 1 6 2 0 eevdf ipc 0\r")
    assert [r.getMessage().split(" |")[0] for r in caplog.records] == [
        "bench: [1/6] 2 cores, iteration 0, eevdf, ipc: ok"]


def test_latency_type_phases_run_beside_pure_busy_loops_at_a_10ms_period():
    import re

    from tools.pandemonium.bench.driver import GUEST_DIR

    script = (GUEST_DIR / "driver.sh").read_text()

    def body(name):
        m = re.search(rf"^phase_{name}\(\) \{{(.*?)\}}$", script, re.S | re.M)
        return m.group(1)

    for name in ("latency", "burst", "deadline", "launch", "cyclictest", "hackbench"):
        assert "busy $((2 * N))" in body(name) and "load " not in body(name), name
    assert "PERIOD_US=10000" in script
    assert "probe_split --period-us $PERIOD_US" in body("latency")
    assert body("floor").strip() == "settle; probe_split --period-us $PERIOD_US;"
    split = re.search(r"^probe_split\(\) \{(.*?)^\}$", script, re.S | re.M).group(1)
    for step in ('probe "$@" & pp=$!', "set_event_pid", "sched_waking/enable",
                 "sched_switch/enable", "wake-to-run n=%d"):
        assert step in split, step
    cyc = body("cyclictest")
    for flag in ("--policy=other", "-i $PERIOD_US", '-t "$N"', "-m", "-q", '-D "$BENCH_CYC_D"',
                 "-h 100000"):
        assert flag in cyc, flag
    assert 'hackbench -P -g "$BENCH_HB_GROUPS" -l "$BENCH_HB_LOOPS"' in body("hackbench")
    assert "hackbench" in P.SCALE_PHASES and P.PHASES["hackbench"].target == 1.1
    env = P.Sizes().guest_env()
    assert int(env["BENCH_CYC_D"]) == 3 * int(env["BENCH_D"])


def test_phases_and_schedulers_narrow_the_plan_in_the_commands_order():
    spec = commands.BY_NAME["bench-scale"]
    plan = commands.plan_from_args(spec, _args("bench-scale", "--phases", "hackbench,latency",
                                               "--schedulers", "pandemonium"))
    assert plan.phases == ["latency", "hackbench"]
    assert plan.schedulers == [P.PANDEMONIUM]
    full = commands.plan_from_args(spec, _args("bench-scale"))
    assert full.phases == P.SCALE_PHASES
    assert full.schedulers == [P.PANDEMONIUM, P.PANDEMONIUM_BPF]


@pytest.mark.parametrize("argv", [("--phases", "latency,bogus"), ("--phases", ","),
                                  ("--schedulers", "eevdf")])
def test_unknown_phase_or_scheduler_is_refused_by_name(argv):
    spec = commands.BY_NAME["bench-scale"]
    with pytest.raises(PandemoniumError, match="choose from"):
        commands.plan_from_args(spec, _args("bench-scale", *argv))


def test_topology_is_checked_against_the_largest_core_count():
    spec = commands.BY_NAME["bench-trace"]
    args = _args("bench-trace", "--cores", "32", "--topology", "nodes=2,threads=2")
    topo = commands.topology_from_args(spec, args, commands.plan_from_args(spec, args))
    assert (topo.nodes, topo.threads) == (2, 2)
    args = _args("bench-trace", "--cores", "2")
    assert commands.topology_from_args(spec, args, commands.plan_from_args(spec, args)) is None
    for cores, topology, msg in (("6", "nodes=4", "do not split"),
                                 ("8", "sockets=2", "expected nodes=N")):
        args = _args("bench-trace", "--cores", cores, "--topology", topology)
        with pytest.raises(PandemoniumError, match=msg):
            commands.topology_from_args(spec, args, commands.plan_from_args(spec, args))


def test_the_vm_timeout_allows_for_icounts_pace():
    from tools.pandemonium.bench import driver

    plan = P.Plan(phases=["oversub"], schedulers=[P.PANDEMONIUM_COOP], cores=[4], iterations=1,
                  sizes=P.Sizes())
    assert driver.pace("tcg-multi") == driver.pace("tcg-single") == 1.0
    assert driver.pace("tcg-icount") == 11.0
    single = driver._timeout(plan, [], "tcg-single")
    icount = driver._timeout(plan, [], "tcg-icount")
    fixed = 900 + driver.BOOT_S_PER_VCPU * 4  # the margin and the boot do not scale
    assert icount - fixed == pytest.approx(11 * (single - fixed))
    # Guest time counts every vCPU's instructions: at 64 vCPUs only the boot allowance grows.
    big = P.Plan(phases=["oversub"], schedulers=[P.PANDEMONIUM_COOP], cores=[64], iterations=1,
                 sizes=P.Sizes())
    assert (driver._timeout(big, [], "tcg-icount") - driver.BOOT_S_PER_VCPU * 64
            == pytest.approx(icount - driver.BOOT_S_PER_VCPU * 4))
