"""Benchmarks in the VM or natively (issues #7, #15; the cost benchmark of issue #6).

plan.py       phases, schedulers, run order (EEVDF brackets), sizes, ETA   (pure)
anchors.py    --external SPEC: known anchors (bpfland, lavd, upstream) installed by cargo, paths
driver.py     run_bench(plan, out_dir): a VM boot runs the plan, more boots resume a crashed one
stream.py     reassembles the steps the guest streams over the console (survive a guest crash)
resume.py     which runs a resumed boot skips, where a boot died, merging the boots (pure)
native.py     the same driver on this machine (sched_ext kernel, root); native vs VM decision
guest/        driver.sh (busybox sh executor), benchlat.c (pipe / launch latency percentiles) and
              coopbench.c (libgomp and sched_yield() fork-join loops, issue #34)
parse.py      raw guest output -> Record per (cores, iteration, scheduler, phase)   (pure)
aggregate.py  medians, spread, ratio to the bracketing EEVDF runs           (pure)
scoreboard.py ratio table and "ahead of every other scheduler on N of M phases"   (pure)
report.py     Markdown report (scoreboard first, a table per phase with targets), JSON
plots.py      matplotlib plots (installed when missing): scoreboard bars, one chart per phase
verdicts.py   per-command closing notes; which guest events fail a command
commands.py   the bench-* subcommands of pandemonium.py
"""
