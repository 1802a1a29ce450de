"""Benchmarks in the VM (issue #7; the cost benchmark of issue #6).

plan.py      phases, schedulers, run order (EEVDF brackets), sizes, ETA   (pure)
driver.py    run_bench(plan, out_dir): one VM boot runs the plan           (API documented there)
guest/       driver.sh (busybox sh executor) and benchlat.c (pipe / launch latency percentiles)
parse.py     raw guest output -> Record per (cores, iteration, scheduler, phase)   (pure)
aggregate.py medians, spread, ratio to the bracketing EEVDF runs           (pure)
report.py    Markdown tables with targets, JSON, matplotlib plots
commands.py  the bench-* subcommands of pandemonium.py
"""
