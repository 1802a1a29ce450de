"""What pandemonium.py drives, one package per part:

vm/              run_in_vm(): a QEMU guest booting a sched_ext-capable Debian kernel
bench/           the bench-* benchmarks, in that VM or natively (guest/: what runs in the guest)
stress/          bench-stress, the reliability matrix (driver.sh runs in the guest)
gate_runner.py   the integration gate (tests/gate.rs) in the VM, once per vCPU count

Imported as `tools.pandemonium.<part>` with the repository root on sys.path: pandemonium.py's own
directory, and pytest's `pythonpath` (pytest.ini) for the tests. The modules use the root's
pandemonium_*.py helpers the same way.
"""
