"""Resuming a bench run after the guest died: which runs to skip, where it died, how to merge.

A plan's steps are numbered k = 1.. in plan order (run by run, each run's phases in order), the
same numbers in every boot. A step is keyed by (cores, iteration, scheduler, phase), which is
what its steps.tsv line starts with. A scheduler run's phases share one attach, so a boot skips
whole runs only: a run an earlier boot finished entirely; a partly finished run runs again from
its start. When merging, each run's steps come from one boot, never mixed.

Pure functions over a Plan and sets of step keys, plus merge_boots (file copies), for pytest.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..common import read_text

from .plan import ATTACH_EST_S, EEVDF, Plan
from .stream import step_key

Key = tuple[int, int, str, str]
MAX_BOOTS = 3  # the first boot and at most 2 resumes


def plan_steps(plan: Plan) -> list[Key]:
    """Step k's key at index k - 1."""
    return [(r.cores, r.iteration, r.scheduler, p) for r in plan.runs() for p in plan.phases]


def run_keys(plan: Plan, run_index: int) -> list[Key]:
    """The step keys of run `run_index` (1-based, as BENCH_SKIP_RUNS counts)."""
    r = plan.runs()[run_index - 1]
    return [(r.cores, r.iteration, r.scheduler, p) for p in plan.phases]


def tag(key_or_run) -> str:
    """driver.sh's run tag, c<cores>-i<iteration>-<scheduler>."""
    cores, it, sched = (key_or_run[:3] if isinstance(key_or_run, tuple)
                        else (key_or_run.cores, key_or_run.iteration, key_or_run.scheduler))
    return f"c{cores}-i{it}-{sched}"


def finished_runs(plan: Plan, boots: list[set[Key]]) -> list[int]:
    """1-based indices of the runs one boot recorded every step of: what a resumed boot skips.
    Steps of one run from two boots do not finish it (two attaches; merge_boots keeps one)."""
    return [i for i in range(1, len(plan.runs()) + 1)
            if any(set(run_keys(plan, i)) <= got for got in boots)]


def kept_steps(plan: Plan, boots: list[set[Key]]) -> int:
    """How many steps merge_boots keeps from these boots."""
    run_boot = choose_run_boots(plan, boots)
    return sum(len(set(run_keys(plan, i)) & boots[b - 1]) for i, b in run_boot.items())


def death_step(plan: Plan, recorded: set[Key], skipped: list[int]) -> int | None:
    """The step a boot that died was in: the first step, in plan order, of a run it did not
    skip that it did not record. None: it recorded all of them."""
    n = len(plan.phases)
    for k, key in enumerate(plan_steps(plan), start=1):
        if (k - 1) // n + 1 not in skipped and key not in recorded:
            return k
    return None


def first_step_to_run(plan: Plan, skipped: list[int]) -> int | None:
    """The step a boot that skips `skipped` starts at (a partly finished run from its start):
    where a boot that recorded nothing died."""
    return death_step(plan, set(), skipped)


def remaining_estimate_s(plan: Plan, skipped: list[int], attach_s: float = ATTACH_EST_S) -> float:
    """Rough guest seconds for the runs a resumed boot still has to do (for its timeout)."""
    per_run = sum(plan.step_weight(p) for p in plan.phases)
    todo = [r for i, r in enumerate(plan.runs(), start=1) if i not in skipped]
    return len(todo) * per_run + attach_s * sum(1 for r in todo if r.scheduler != EEVDF)


def choose_run_boots(plan: Plan, boots: list[set[Key]]) -> dict[int, int]:
    """run index -> the boot (1-based) whose steps of that run to keep: the latest boot that
    finished the run; else the boot with most steps of it (the latest on a tie). Runs no boot
    recorded a step of are absent."""
    out = {}
    for i in range(1, len(plan.runs()) + 1):
        keys = set(run_keys(plan, i))
        counts = [(len(keys & got), b) for b, got in enumerate(boots, start=1)]
        full = [b for n, b in counts if n == len(keys)]
        if full:
            out[i] = full[-1]
        elif (best := max(counts, default=(0, 0)))[0] > 0:
            out[i] = best[1]
    return out


def step_boots(plan: Plan, run_boot: dict[int, int], recorded: set[Key]) -> list[int]:
    """Per step (index k - 1): the boot it came from, 0 when it was not recorded."""
    n = len(plan.phases)
    return [run_boot.get((k - 1) // n + 1, 0) if key in recorded else 0
            for k, key in enumerate(plan_steps(plan), start=1)]


def boot_ranges(per_step: list[int]) -> str:
    """'steps 1-16 from boot 1, 17-33 from boot 2, 34 missing' from step_boots()."""
    parts, start = [], 0
    for k in range(1, len(per_step) + 1):
        if k == len(per_step) or per_step[k] != per_step[start]:
            span = f"{start + 1}" if k == start + 1 else f"{start + 1}-{k}"
            b = per_step[start]
            parts.append(f"{span} {'missing' if b == 0 else f'from boot {b}'}")
            start = k
    return "steps " + ", ".join(parts) if parts else "no steps"


def cross_boot_brackets(plan: Plan, run_boot: dict[int, int]) -> list[str]:
    """Scheduler runs whose EEVDF bracket (the EEVDF runs just before and after, at the same core
    count) does not lie in the scheduler run's boot: those ratios are not same-boot comparisons."""
    runs = plan.runs()
    out = []
    for i, r in enumerate(runs, start=1):
        if r.scheduler == EEVDF or i not in run_boot:
            continue
        before = next((j for j in range(i - 1, 0, -1) if runs[j - 1].scheduler == EEVDF
                       and runs[j - 1].cores == r.cores), None)
        after = next((j for j in range(i + 1, len(runs) + 1) if runs[j - 1].scheduler == EEVDF
                      and runs[j - 1].cores == r.cores), None)
        others = [(j, run_boot.get(j)) for j in (before, after) if j is not None]
        if any(b != run_boot[i] for _, b in others):
            where = ", ".join(f"{tag(runs[j - 1])} boot {b or '-'}" for j, b in others)
            out.append(f"{tag(r)} (boot {run_boot[i]}) against EEVDF {where}")
    return out


def recorded_keys(results: Path) -> dict[Key, str]:
    """key -> steps.tsv line of a results directory (the tar's or the streamed one)."""
    return {step_key(line): line for line in read_text(results / "steps.tsv").splitlines()
            if len(line.split()) == 13}


@dataclass
class Merged:
    run_boot: dict[int, int]
    step_boot: list[int]
    recorded: set[Key] = field(default_factory=set)


def merge_boots(plan: Plan, sources: list[Path], dest: Path) -> Merged:
    """Write one results directory (steps.tsv in plan order, raw/, events.log, env.txt) from the
    boots' results directories (sources[b - 1] is boot b's); each run from choose_run_boots."""
    lines = [recorded_keys(s) for s in sources]
    run_boot = choose_run_boots(plan, [set(x) for x in lines])
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "raw").mkdir(parents=True)
    kept, recorded = [], set()
    for i, r in enumerate(plan.runs(), start=1):
        b = run_boot.get(i)
        if b is None:
            continue
        src = sources[b - 1]
        for key in run_keys(plan, i):
            if key in lines[b - 1]:
                kept.append(lines[b - 1][key])
                recorded.add(key)
        # The run's outputs, scheduler log, load logs, stack (c2-i1-pandemonium. does not
        # match c2-i1-pandemonium-bpf.*).
        for f in sorted((src / "raw").glob(f"{tag(r)}.*")):
            if f.is_file():
                shutil.copy2(f, dest / "raw" / f.name)
    (dest / "steps.tsv").write_text("".join(line + "\n" for line in kept))
    events = [e for s in sources for e in read_text(s / "events.log").splitlines() if e.strip()]
    (dest / "events.log").write_text("".join(e + "\n" for e in events))
    for s in reversed(sources):  # the same kernel and tools in every boot; the latest says so
        if (s / "env.txt").is_file():
            shutil.copy2(s / "env.txt", dest / "env.txt")
            break
    return Merged(run_boot, step_boots(plan, run_boot, recorded), recorded)
