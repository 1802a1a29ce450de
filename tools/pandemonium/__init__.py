"""Everything pandemonium.py runs, one module or package per part:

cli.py           the command line: build, run, test and vm, and every other part's subcommands
common.py        logging, errors, paths (project root, cache, target dir), sched_ext state
packages.py      src/build_support/system_packages.tsv: missing tools, install hints, the clang
build.py         installing missing packages, cargo, where the binaries are
install.py       install, uninstall, status, clean, rebuild (attached.py, coexist.py: which
                 scx_pandemonium runs, and which one each systemd unit would start)
gate_runner.py   the integration gate (tests/gate.rs) in the VM, once per vCPU count
vm/              run_in_vm(): a QEMU guest booting a sched_ext-capable Debian kernel
bench/           the bench-* benchmarks, in that VM or natively (guest/: what runs in the guest)
stress/          bench-stress, the reliability matrix (driver.sh runs in the guest)
soak/            bench-soak, an hour of mixed load (soak.sh runs in the guest)

The modules import each other relatively and never touch sys.path: whoever imports the package
puts its parent on the path (pandemonium.py's directory, the repository root, for
`tools.pandemonium`; pytest.ini's `pythonpath` for the tests).
"""
