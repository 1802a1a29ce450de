"""What a benchmark run does, decided on the host: phases, schedulers, run order, time estimate.

Pure functions (no VM, no I/O) so that pytest covers them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

EEVDF = "eevdf"
PANDEMONIUM = "pandemonium"
PANDEMONIUM_BPF = "pandemonium-bpf"
PANDEMONIUM_GAMING = "pandemonium-gaming"  # -m gaming: boosts a game Steam launched (src/games/)
# --coop coopbench: the oversub phase's workload runs as cooperative groups (issue #34).
PANDEMONIUM_COOP = "pandemonium-coop"
# --coop-learn: the same groups recognised from behaviour, the name learned in the procdb first.
PANDEMONIUM_LEARN = "pandemonium-learn"
OURS = (PANDEMONIUM, PANDEMONIUM_BPF, PANDEMONIUM_GAMING, PANDEMONIUM_COOP, PANDEMONIUM_LEARN)
# Every other scheduler in a plan is an external one (anchors.py): a known anchor
# (bpfland, lavd, upstream) or "ext:<basename>" for a binary given by path.


def is_external(scheduler: str) -> bool:
    return scheduler not in (EEVDF, *OURS)


@dataclass(frozen=True)
class Phase:
    name: str
    metric: str  # what the table shows; lower is better unless `better` says otherwise
    unit: str
    est_s: float  # expected guest seconds beyond BENCH_D (for the ETA), scaled by timed
    timed: bool = True  # runs for BENCH_D seconds (times `windows`)
    windows: int = 1
    target: float | None = None  # issue #7: max ratio to EEVDF for pandemonium
    target_note: str = ""
    reference: bool = False  # what the guest allows any scheduler: shown, not scored
    # "lower" is better; "higher" is better (a frame rate: `target` is then a min ratio to
    # EEVDF); or "configured": closest to `configured` (what the administrator set, in the
    # figure's unit) is best, and pandemonium's target is being within `tol` of it.
    better: str = "lower"
    configured: float | None = None
    tol: float | None = None
    # tol is read against EEVDF's figure in the same boot instead (the configured value is
    # shown, but EEVDF itself lands off it, e.g. nice 19 hogs' share in a short window).
    tol_to_eevdf: bool = False
    part_of: str | None = None  # a figure of a guest phase that yields several (admin)
    # pandemonium's target as a bound on its own median, in the unit (at most, or at least when
    # higher is better), instead of a ratio to EEVDF.
    limit: float | None = None


def _figure(name: str, metric: str, unit: str, part_of: str, **kw) -> Phase:
    """A figure of a guest phase that yields several: no timed window of its own."""
    return Phase(name, metric, unit, 0.0, timed=False, part_of=part_of, **kw)


# The admin phase's figures (issue #32's bars as targets). The configured values are the
# kernel's own: cpu.weight 300/100; cpu.max 50000/100000 = 0.5 CPU; nice 0 against 19 is
# sched_prio_to_weight 1024/15; SCHED_IDLE's weight is 3, so plain hogs' share is 1024/1027.
ADMIN_FIGURES = [
    _figure("admin-weight", "cpu.weight 300/100 CPU-time ratio", "ratio", "admin",
            better="configured", configured=3.0, tol=0.10),
    _figure("admin-cpumax", "cpu.max 50000 100000 group's CPUs", "CPU", "admin",
            better="configured", configured=0.5, tol=0.10),
    _figure("admin-nice", "nice 0/19 CPU-time ratio", "ratio", "admin",
            better="configured", configured=1024 / 15, tol=0.15, tol_to_eevdf=True),
    _figure("admin-nice-lat", "cyclictest P99 beside nice-19 hogs", "us", "admin", target=1.0),
    _figure("admin-idle-lat", "cyclictest P99 beside SCHED_IDLE hogs", "us", "admin", target=1.0),
    _figure("admin-idle-share", "plain hogs' share beside SCHED_IDLE hogs", "share", "admin",
            better="configured", configured=1024 / 1027, tol=0.05),
    _figure("admin-build", "hackbench beside a cpu.weight=20 build", "s", "admin", target=1.0),
]

# What gamers and audio users feel beside a build (issue #33; felt.py): a 144 Hz game loop (4
# workers x 1 ms, a render thread) and a PipeWire-like period (256 frames at 48 kHz, 0.5 ms of
# work), each alone (the floor: reference figures) and then beside bench-soak's build load.
FRAMES_FIGURES = [
    _figure("frames-p50", "game frame time P50 beside a build", "ms", "frames"),
    _figure("frames-p99", "game frame time P99 beside a build", "ms", "frames"),
    # MangoHud's HUD "1%": the frame rate of the 1st percentile (felt.py, src/cli/frames).
    _figure("frames-low", "game 1 % low FPS beside a build", "fps", "frames", better="higher",
            target=1.0, target_note="and >= each anchor's (notes)"),
    _figure("frames-over", "game frames over budget (> 1/144 s + 10 %) beside a build", "%",
            "frames", limit=1.0),
    _figure("frames-floor-low", "game 1 % low FPS, no load", "fps", "frames", better="higher",
            reference=True),
    _figure("frames-floor-over", "game frames over budget, no load", "%", "frames",
            reference=True),
]
AUDIO_FIGURES = [
    _figure("audio-xruns", "audio periods missed (xruns) beside a build", "%", "audio",
            limit=0.1),
    _figure("audio-wake", "audio wakeup latency P99 beside a build", "us", "audio"),
    _figure("audio-floor-xruns", "audio periods missed (xruns), no load", "%", "audio",
            reference=True),
    _figure("audio-floor-wake", "audio wakeup latency P99, no load", "us", "audio",
            reference=True),
    # The scheduler's part of the xruns beside the build, from the kernel's own accounting of
    # the thread (src/cli/audio/counters.rs): the wake figure above also holds the timer's
    # lateness, which no scheduler decides. Shown beside the xruns, not scored a second time.
    _figure("audio-preempted", "audio periods whose work was preempted, beside a build", "%",
            "audio", reference=True),
    _figure("audio-run-delay", "audio wait for a CPU per period P99 (schedstat), beside a build",
            "us", "audio", reference=True),
]
# Oversubscribed parallel runtimes (issue #34; oversub.py): 2 or 3 processes of coopbench, each
# with a thread per CPU, looping parallel regions; each figure is the last process's completion
# time.
OVERSUB_FIGURES = [
    # One process alone: with k processes the best makespan is k times this (each team run
    # whole, in turn), which bounds what beating EEVDF by a factor can mean in a given boot.
    _figure("oversub-active-1", "1 libgomp process alone, OMP_WAIT_POLICY=active: time", "s",
            "oversub", reference=True),
    _figure("oversub-active", "2 libgomp processes, OMP_WAIT_POLICY=active: makespan", "s",
            "oversub", target=1 / 3, target_note="3x EEVDF's throughput (#34)"),
    _figure("oversub-passive", "2 libgomp processes, OMP_WAIT_POLICY=passive: makespan", "s",
            "oversub", target=1.0),
    # One process alone: the 2-process figure's yardstick. Under single-threaded TCG a spinner
    # whose sched_yield() finds nothing else to run keeps its vCPU's whole turn of the round
    # robin while the thread it waits for waits for its own turn, so alone can take longer
    # than two processes together: then the figure measures the emulator, not the scheduler.
    _figure("oversub-yield-1", "1 sched_yield() barrier process alone: time", "s", "oversub",
            reference=True),
    _figure("oversub-yield", "2 sched_yield() barrier processes (OpenBLAS style): makespan",
            "s", "oversub"),
    _figure("oversub-active-3", "3 libgomp processes, OMP_WAIT_POLICY=active: makespan", "s",
            "oversub", target=1 / 2, target_note="2x EEVDF's throughput (#34)"),
    _figure("oversub-passive-3", "3 libgomp processes, OMP_WAIT_POLICY=passive: makespan", "s",
            "oversub", target=1.0),
    # #34's bar is ours with the treatment off, not EEVDF: read in verdicts._oversub_latency.
    _figure("oversub-cyclictest", "cyclictest P99 beside 2 active-wait libgomp processes", "us",
            "oversub"),
]
BESIDE_WINDOWS = 3  # the frames and audio phases measure 3 BENCH_D beside the build, 1 alone

# Issue #7's phases. "est_s" is a rough guest cost besides the timed window: load start-up,
# the fixed-size jobs. The ETA corrects itself from the measured pace as steps complete.
PHASES: dict[str, Phase] = {p.name: p for p in [
    Phase("throughput", "stress-ng wall time", "s", 20.0, timed=False, target=1.03),
    # The probe alone in an idle guest: the floor a wakeup cannot beat here (timer and TCG
    # delivery), which the latency-type phases' targets are read against.
    Phase("floor", "probe P99, no load", "us", 2.0, reference=True),
    Phase("latency", "probe P99", "us", 2.0, target=0.2),
    Phase("burst", "probe P99", "us", 2.0, target=0.5),
    Phase("longrun", "probe P99", "us", 2.0, target=0.5),
    Phase("mixed", "probe P99", "us", 2.0, target=0.5),
    Phase("deadline", "deadline miss ratio", "%", 2.0, target=0.25,
          target_note="and <= 1 %"),
    Phase("ipc", "pipe round-trip P99", "us", 4.0, timed=False, target=1.0),  # issue #15
    Phase("launch", "fork+exec to exit P99", "us", 15.0, timed=False, target=1.0),
    Phase("messaging", "perf messaging wall time", "s", 10.0, timed=False, target=1.03),
    # ~14 s of TCG time go to printing the 100 000-row histogram (empty rows filtered). Three
    # windows: 4 s at 10 ms and 2 threads are 800 wakeups, whose P99 is their 8th worst, and
    # EEVDF's own P99 then moved 3.9-7.7 ms between runs of one boot.
    Phase("cyclictest", "cyclictest P99", "us", 14.0, target=1.0, windows=3),
    Phase("hackbench", "hackbench wall time", "s", 3.0, timed=False, target=1.1),
    # What an administrator sets (issue #32), one guest step with the figures below (admin.py):
    # 4 counter windows of BENCH_D, 2 cyclictest runs of 3 BENCH_D, hackbench beside a build.
    Phase("admin", "administrator's controls", "-", 45.0, windows=12),
    *ADMIN_FIGURES,
    # One guest step each with the figures above: the tool alone for BENCH_D, then the build
    # load's start (a 60-step tree) and 2 s to settle, then the tool beside it; the game warms
    # up 2 s in both runs (gaming mode's scan).
    Phase("frames", "game frames alone and beside a build", "-", 12.0,
          windows=1 + BESIDE_WINDOWS),
    *FRAMES_FIGURES,
    Phase("audio", "audio periods alone and beside a build", "-", 8.0,
          windows=1 + BESIDE_WINDOWS),
    *AUDIO_FIGURES,
    # One guest step with the figures above: each workload's 2 or 3 processes at once, in turn.
    Phase("oversub", "oversubscribed parallel runtimes", "-", 65.0, timed=False),
    *OVERSUB_FIGURES,
    # Building blocks of the other bench commands.
    Phase("idle", "scheduler CPU", "%", 0.0),
    Phase("busy", "scheduler CPU", "%", 1.0),
    Phase("rapl", "package energy", "J", 1.0),
    Phase("hogs", "probe P99", "us", 2.0),  # beside 4 busy loops per CPU
    Phase("recovery", "probe P99", "us", 3.0),
    Phase("pinned", "worst worker gap", "us", 1.0),
    Phase("forkthread", "perf messaging -t wall time", "s", 5.0, timed=False),
    Phase("telemetry", "telemetry lines", "lines", 1.0),
    Phase("bpfstats", "perf messaging wall time", "s", 5.0, timed=False),
]}
ATTACH_EST_S = 10.0  # BPF load + attach in the guest: 1 s under tcg-multi, more under load
SCALE_PHASES = ["throughput", "floor", "latency", "burst", "longrun", "mixed", "deadline", "ipc",
                "launch", "messaging", "cyclictest", "hackbench", "admin"]
# bench-scale runs these only when --phases names them: the CI smoke (--quick) stays as it was.
SCALE_EXTRA_PHASES = ["frames", "audio", "oversub"]


def report_phases(phases: list[str]) -> list[str]:
    """The plan's phases as the report shows them: a phase with figures becomes its figures."""
    out = []
    for name in phases:
        figures = [p.name for p in PHASES.values() if p.part_of == name]
        out += figures or [name]
    return out


@dataclass
class Sizes:
    """Per-phase sizes handed to the guest. The throughput job is fixed work (8 stress-ng int64
    workers x `ops` bogo-ops each), sized to take roughly 15-20 s under EEVDF in the 4-vCPU TCG
    guest; the others are sample counts chosen so one scheduler run stays near a minute."""
    phase_s: int = 4
    ops: int = 2400
    # Pipe round trips. 3000 took 0.24 s in the VM: its P99 (30 samples) was whether one host
    # stall of a vCPU thread fell into that quarter second, and one scheduler's three runs
    # spread 142-445 us. 20000 (1.5-2 s) puts 200 samples at the P99 and covers a daemon tick.
    pipe_count: int = 20000
    # fork+exec+reap of /bin/true beside busy loops, ~10-40 ms each in TCG. 200, not 60: the P99 of
    # 60 samples is their maximum, and one TCG stall decided the phase for any scheduler.
    launch_count: int = 200
    msg_loops: int = 50  # perf bench sched messaging -g 4 -l N
    # hackbench -P -g G -l L beside 2 busy loops per CPU: ~1-3 s under EEVDF at 2 TCG vCPUs
    hackbench_groups: int = 2
    hackbench_loops: int = 100
    # coopbench's parallel regions per process (a 48 x 48 multiply each): ~0.6 s alone at 2
    # vCPUs under TCG, so a makespan is not one scheduling accident.
    coop_regions: int = 600
    attach_timeout_s: int = 240
    stop_timeout_s: int = 60

    @classmethod
    def quick(cls) -> Sizes:
        return cls(phase_s=2, ops=80, pipe_count=1000, launch_count=20, msg_loops=20,
                   hackbench_loops=50, coop_regions=100)

    def guest_env(self) -> dict[str, str]:
        return {"BENCH_D": str(self.phase_s),
                "BENCH_CYC_D": str(self.phase_s * PHASES["cyclictest"].windows),
                "BENCH_BESIDE_D": str(self.phase_s * BESIDE_WINDOWS),
                "BENCH_OPS": str(self.ops),
                "BENCH_PIPE_N": str(self.pipe_count), "BENCH_LAUNCH_N": str(self.launch_count),
                "BENCH_MSG_LOOPS": str(self.msg_loops),
                "BENCH_HB_GROUPS": str(self.hackbench_groups),
                "BENCH_HB_LOOPS": str(self.hackbench_loops),
                "BENCH_COOP_REGIONS": str(self.coop_regions),
                "BENCH_ATTACH_S": str(self.attach_timeout_s),
                "BENCH_STOP_S": str(self.stop_timeout_s)}


@dataclass(frozen=True)
class Run:
    cores: int
    iteration: int
    scheduler: str

    def token(self) -> str:
        return f"{self.cores}:{self.iteration}:{self.scheduler}"


@dataclass
class Plan:
    phases: list[str]
    schedulers: list[str]  # without eevdf; eevdf brackets are added when bracket is set
    cores: list[int]
    iterations: int
    bracket: bool = True
    sizes: Sizes = field(default_factory=Sizes)
    external: list = field(default_factory=list)  # anchors.External, one per external label
    sched_args: list[str] = field(default_factory=list)  # extra scx_pandemonium arguments
    # EEVDF after each iteration too. The CI smoke (--quick) runs it before ours only: it proves
    # the harness end to end, a closing run is the same code, and it took a third of the smoke.
    closing_bracket: bool = True

    def runs(self) -> list[Run]:
        """Largest core count first, so the first sweep needs no hotplug at all and later ones
        only take CPUs offline. Per core count: EEVDF, then each iteration's schedulers followed
        by EEVDF again, so every scheduler run sits between two EEVDF runs of the same boot
        (without closing_bracket, EEVDF runs once per core count, first)."""
        out = []
        for cores in sorted(set(self.cores), reverse=True):
            if self.bracket:
                out.append(Run(cores, 0, EEVDF))
            for it in range(1, self.iterations + 1):
                out += [Run(cores, it, s) for s in self.schedulers]
                if self.bracket and self.closing_bracket:
                    out.append(Run(cores, it, EEVDF))
        return out

    def estimate_s(self, attach_s: float = ATTACH_EST_S) -> float:
        """Rough guest seconds for the whole plan (for the VM timeout and the first ETA)."""
        per_run = sum(self.step_weight(p) for p in self.phases)
        runs = self.runs()
        attaches = sum(1 for r in runs if r.scheduler != EEVDF)
        return len(runs) * per_run + attaches * attach_s

    def step_weight(self, phase: str) -> float:
        p = PHASES[phase]
        base = p.est_s * (self.sizes.ops / Sizes().ops if phase == "throughput" else 1.0)
        return base + (self.sizes.phase_s * p.windows if p.timed else 0.0)


def parse_cores(spec: str, max_cpus: int | None = None) -> list[int]:
    """'2,4' -> [2, 4]. Raises ValueError with a user-facing message."""
    try:
        cores = sorted({int(c) for c in spec.split(",") if c.strip()})
    except ValueError:
        raise ValueError(f"--cores {spec!r}: expected numbers like 2,4") from None
    if not cores or cores[0] < 1:
        raise ValueError(f"--cores {spec!r}: core counts must be at least 1")
    if max_cpus is not None and cores[-1] > max_cpus:
        raise ValueError(f"--cores {spec!r}: at most {max_cpus} vCPUs are supported")
    return cores


def accel_for(vcpus: int, host_cores: int) -> str:
    """Multi-threaded TCG only when every vCPU can have its own host core; otherwise its threads
    would time-share the host anyway and tcg-single is the mode that never oopsed."""
    return "tcg-multi" if vcpus <= host_cores else "tcg-single"


def eta_s(done_weights: float, total_weights: float, elapsed_s: float) -> float | None:
    """Remaining seconds at the pace so far; None before anything finished."""
    if done_weights <= 0 or elapsed_s <= 0:
        return None
    return max(0.0, elapsed_s * (total_weights - done_weights) / done_weights)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
