// SPDX-License-Identifier: GPL-2.0-only
//! The binaries' behaviour on an ordinary host (no sched_ext needed): argument errors and the
//! refusal on a kernel without sched_ext end in a clear message and a non-zero status, no panic.
//! scx_pandemonium is the scheduler; pandemonium-tools holds the measurement tools.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scx_pandemonium"))
}

fn tools() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pandemonium-tools"))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn assert_no_panic(o: &Output) {
    let t = text(o);
    assert!(!t.contains("panicked"), "the binary panicked:\n{t}");
}

#[test]
fn help_lists_the_options() {
    let o = bin().arg("--help").output().unwrap();
    assert!(o.status.success());
    let t = text(&o);
    for opt in [
        "--no-adaptive",
        "-m, --mode <MODE>",
        "--autopower",
        "--compositor",
        "--verbose",
        "--version",
        "--stats",
        "--monitor",
        "--help-stats",
        "-d, --debug",
        "--exit-dump-len <LEN>",
        "Libbpf Options:",
        "--relaxed-maps",
        "--pin-root-path",
        "--kconfig",
        "--btf-custom-path",
        "--bpf-token-path",
    ] {
        assert!(t.contains(opt), "--help lacks {opt}:\n{t}");
    }
    // No subcommands (the tools are pandemonium-tools'), and the refused flags of other
    // schedulers are parsed but not advertised.
    for hidden in [
        "probe",
        "stress",
        "stress-worker",
        "Commands:",
        "--slice-us",
        "--primary-domain",
    ] {
        assert!(!t.contains(hidden), "--help shows {hidden}:\n{t}");
    }
}

/// The tools run from their own binary: the benchmark drivers call it.
#[test]
fn the_tools_run_from_their_own_binary() {
    for tool in ["probe", "stress", "frames", "audio"] {
        let o = tools().args([tool, "--help"]).output().unwrap();
        assert!(o.status.success(), "{tool} --help: {}", text(&o));
        assert!(text(&o).contains("--duration-s"), "{}", text(&o));
    }
    for (args, tool) in [
        (
            &["probe", "--duration-s", "0.05", "--period-us", "1000"][..],
            "probe",
        ),
        (
            &["frames", "--duration-s", "0.05", "--warmup-s", "0"],
            "frames",
        ),
        (&["audio", "--duration-s", "0.05"], "audio"),
    ] {
        let o = tools().args(args).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let json = format!(r#"{{"tool":"{tool}""#);
        assert!(
            String::from_utf8_lossy(&o.stdout).starts_with(&json),
            "{}",
            text(&o)
        );
    }
}

/// Flags of other scx schedulers (here scx_loader's bpfland and lavd modes) end in a message
/// saying what to do, with the usage-error status systemd does not retry.
#[test]
fn flags_of_other_scx_schedulers_are_refused_with_advice() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            // scx_bpfland's PowerSave flags: -m powersave is our powersave mode.
            &["-s", "20000", "-m", "powersave", "-I", "100", "-t", "100"],
            &["-s/--slice-us", "-I/--idle-resume-us", "-t/--throttle-us"],
        ),
        (
            &["-s", "20000", "-S"],
            &["-s/--slice-us is a flag", "-S/--sticky-tasks is a flag"],
        ),
        (
            &["-m", "performance", "-w"],
            &["scx_bpfland's -m/--primary-domain", "here -m is --mode"],
        ),
        (
            &["--primary-domain", "all", "-w"],
            &[
                "--primary-domain is a flag of other scx schedulers",
                "-w/--no-wake-sync",
            ],
        ),
        (
            &["--performance", "--slice-min-us", "3000"],
            &[
                "--slice-min-us is a flag",
                "--no-adaptive",
                "--performance is a flag",
            ],
        ),
        (&["-v", "-k"], &["-k/--local-kthreads", "SCX_FLAGS"]),
        // The published scx_pandemonium's hidden flags, from an SCX_FLAGS written for it.
        (
            &["--dump-log", "--nr-cpus", "8", "--no-adaptive"],
            &[
                "--dump-log is a flag of the published scx_pandemonium",
                "--nr-cpus is a flag of the published scx_pandemonium",
            ],
        ),
    ];
    for (args, needles) in cases {
        let o = bin().args(*args).output().unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}:\n{t}");
        for needle in *needles {
            assert!(t.contains(needle), "{args:?}: no {needle:?} in:\n{t}");
        }
        assert_no_panic(&o);
    }
}

/// Usage errors exit 2, which pandemonium.service does not retry (RestartPreventExitStatus=2):
/// a restart cannot make an unreadable file readable.
#[test]
fn an_unreadable_kconfig_is_a_usage_error_before_anything_loads() {
    assert_rejected(
        &["--kconfig", "/nonexistent/kconfig"],
        2,
        "--kconfig /nonexistent/kconfig",
    );
    let dir = tempfile::tempdir().unwrap();
    let nul = dir.path().join("kconfig");
    std::fs::write(&nul, "CONFIG_A=y\n\0").unwrap();
    assert_rejected(
        &["--kconfig", nul.to_str().unwrap()],
        2,
        "could not be passed on",
    );
}

/// More --compositor names than BPF's compositor_map holds (256, the built-in ones included) is
/// a usage error before the BPF program loads; a list that fits runs on to the sched_ext check.
#[test]
fn more_compositor_names_than_the_map_holds_is_a_usage_error() {
    use scx_pandemonium::compositor::{MAP_ENTRIES, names_for};
    let fixed = names_for(&[], &[]).len();
    let names: Vec<String> = (0..=MAP_ENTRIES - fixed)
        .map(|i| format!("comp{i}"))
        .collect();
    let args = |names: &[String]| -> Vec<String> {
        names
            .iter()
            .flat_map(|n| ["--compositor".to_string(), n.clone()])
            .collect()
    };
    let o = bin().args(args(&names)).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("more than the 256 the BPF map holds"), "{t}");
    assert_no_panic(&o);
    // gaming adds its own names, so a list that fits under auto can overflow there.
    let fits = &names[..MAP_ENTRIES - fixed];
    let o = bin()
        .args(args(fits))
        .args(["-m", "gaming"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    if !Path::new("/sys/kernel/sched_ext").exists() {
        let o = bin().args(args(fits)).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("no sched_ext support"), "{}", text(&o));
    }
}

/// The dump buffer is one BPF array value, which the kernel caps at 4 MiB: a larger
/// --exit-dump-len is refused before anything loads.
#[test]
fn an_exit_dump_len_out_of_range_is_a_usage_error() {
    for bad in ["4194305", "4294967295", "4294967296", "-1"] {
        let o = bin().args(["--exit-dump-len", bad]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert_no_panic(&o);
    }
    if !Path::new("/sys/kernel/sched_ext").exists() {
        let o = bin().args(["--exit-dump-len", "4194304"]).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("no sched_ext support"), "{}", text(&o));
    }
}

#[test]
fn version_names_git_target_and_bpf_build() {
    let o = bin().arg("--version").output().unwrap();
    assert!(o.status.success());
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3, "{t}");

    // "scx_pandemonium 0.1.0 x86_64-unknown-linux-gnu (git 0123456789ab)": scx_utils' version
    // string, as every scx scheduler prints it, then the build's commit, or "unknown" outside git.
    let head = format!(
        "scx_pandemonium {} (git ",
        scx_utils::build_id::full_version(env!("CARGO_PKG_VERSION"))
    );
    let hash = lines[0]
        .strip_prefix(&head)
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("first line: {}", lines[0]));
    assert!(
        hash == "unknown" || (hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit())),
        "git hash {hash:?}"
    );

    // "target: x86_64-unknown-linux-gnu": the triple this binary was built for.
    let target = lines[1].strip_prefix("target: ").expect("target line");
    assert!(
        target.starts_with(std::env::consts::ARCH) && target.contains("linux"),
        "{target}"
    );

    // "BPF: clang-19 19.1.7, -std=gnu23; vmlinux.h: <where it came from>".
    let bpf = lines[2].strip_prefix("BPF: ").expect("BPF line");
    let (compiler, rest) = bpf.split_once(", ").expect("compiler part");
    let version = compiler.rsplit(' ').next().unwrap();
    assert!(compiler.contains("clang"), "{compiler}");
    assert!(
        version.split('.').count() >= 2 && version.split('.').all(|n| n.parse::<u32>().is_ok()),
        "clang version {version:?}"
    );
    let (std, origin) = rest.split_once("; vmlinux.h: ").expect("vmlinux.h part");
    assert_eq!(std, "-std=gnu23");
    assert!(
        origin.contains("scx_cargo bundle") || origin.contains("BTF") || origin.contains('='),
        "vmlinux.h origin {origin:?}"
    );

    // -V is the one-line form.
    let short = bin().arg("-V").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&short.stdout).trim(),
        format!("scx_pandemonium {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn too_long_compositor_name_is_a_usage_error() {
    let o = bin()
        .args(["--compositor", "a-very-long-compositor"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("15 bytes"), "{t}");
    assert_no_panic(&o);
}

#[test]
fn a_bad_mode_is_a_usage_error_that_lists_the_modes() {
    for args in [&["-m", "turbo-max"][..], &["--mode", ""], &["--mode"]] {
        let o = bin().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert_no_panic(&o);
    }
    assert_rejected(
        &["-m", "turbo-max"],
        2,
        "the modes are auto, gaming, lowlatency, powersave, server",
    );
}

/// `--autopower` picks between auto and powersave; beside another mode it is refused before
/// anything loads, and beside auto it parses (the run then stops at the sched_ext check).
#[test]
fn autopower_goes_with_auto_only() {
    for mode in ["gaming", "powersave", "server"] {
        assert_rejected(
            &["--autopower", "-m", mode],
            2,
            &format!("cannot be combined with --mode {mode}"),
        );
    }
    if Path::new("/sys/kernel/sched_ext").exists() {
        eprintln!("this host has sched_ext; accepting --autopower would start the scheduler");
        return;
    }
    let o = bin().args(["--autopower", "-m", "auto"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("no sched_ext support"), "{}", text(&o));
}

/// Every mode passes parsing, in scx_loader's spelling too: the run then stops at the
/// sched_ext check, not at the argument.
#[test]
fn every_mode_is_accepted() {
    if Path::new("/sys/kernel/sched_ext").exists() {
        eprintln!("this host has sched_ext; accepting the mode would start the scheduler");
        return;
    }
    for mode in ["auto", "gaming", "LowLatency", "powersave", "server"] {
        let o = bin().args(["-m", mode]).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{mode}: {}", text(&o));
        assert!(text(&o).contains("no sched_ext support"), "{}", text(&o));
    }
}

#[test]
fn unknown_option_is_a_usage_error() {
    let o = bin().arg("--frobnicate").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_no_panic(&o);
}

/// On the hosts of this project the kernel has no sched_ext: the binary must say so and name the
/// kernel option. Built in this checkout, it also points at the project's VM. On a sched_ext
/// host this case cannot be produced, and the gate covers the rest.
#[test]
fn kernel_without_sched_ext_is_refused_clearly() {
    if Path::new("/sys/kernel/sched_ext").exists() {
        eprintln!("this host has sched_ext; the refusal is covered by unit tests and the VM gate");
        return;
    }
    let exe = Path::new(env!("CARGO_BIN_EXE_scx_pandemonium"));
    let in_checkout = scx_pandemonium::checkout::containing(exe).is_some();
    for uid in [None, Some(65534u32)] {
        let mut cmd = bin();
        // SAFETY: geteuid has no preconditions.
        if let Some(u) = uid.filter(|_| unsafe { libc::geteuid() } == 0) {
            cmd.uid(u).gid(u);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let t = text(&o);
        assert!(t.contains("no sched_ext support"), "{t}");
        assert!(t.contains("CONFIG_SCHED_CLASS_EXT=y"), "{t}");
        assert_eq!(t.contains("./pandemonium.py vm"), in_checkout, "{t}");
        assert_no_panic(&o);
    }
}

/// The same binary outside any checkout, as an installed one: no pointer at a script the user
/// does not have.
#[test]
fn an_installed_binary_does_not_mention_the_vm() {
    if Path::new("/sys/kernel/sched_ext").exists() {
        eprintln!("this host has sched_ext; the message choice is covered by unit tests");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("scx_pandemonium");
    std::fs::copy(env!("CARGO_BIN_EXE_scx_pandemonium"), &copy).unwrap();
    // Another test thread that forks while the copy's write descriptor is open hands it to its
    // child for a moment, and exec then fails with ETXTBSY: retry that, nothing else.
    let o = (0..50)
        .find_map(|_| match Command::new(&copy).output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                None
            }
            r => Some(r.unwrap()),
        })
        .expect("the copied binary stayed busy (ETXTBSY) for 1 s");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("CONFIG_SCHED_CLASS_EXT=y"), "{t}");
    assert!(!t.contains("pandemonium.py"), "{t}");
    assert_no_panic(&o);
}

/// Runs the binary with `args`, which must be rejected: the given exit status (2: clap usage
/// error, 1: a semantic check after parsing), a message containing `needle`, and no panic.
fn assert_rejected(args: &[&str], status: i32, needle: &str) {
    assert_rejected_by(bin(), args, status, needle);
}

fn assert_rejected_by(mut cmd: Command, args: &[&str], status: i32, needle: &str) {
    let o = cmd.args(args).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(status), "{args:?}:\n{t}");
    assert!(t.contains(needle), "{args:?}: no {needle:?} in:\n{t}");
    assert_no_panic(&o);
}

#[test]
fn compositor_names_are_checked_against_the_kernels_comm_rules() {
    assert_rejected(&["--compositor="], 2, "compositor name is empty");
    assert_rejected(&["--compositor", "0123456789abcdef"], 2, "16 bytes");
    assert_rejected(&["--compositor", "bin/sway"], 2, "not a path");
    // 15 bytes of a multi-byte name is still 15 bytes: the limit counts bytes, not characters.
    assert_rejected(&["--compositor", "ééééééééé"], 2, "18 bytes");
}

/// A 15-byte name (TASK_COMM_LEN - 1) passes parsing: the run then stops at the sched_ext
/// check, not at the argument.
#[test]
fn a_fifteen_byte_compositor_name_is_accepted() {
    if Path::new("/sys/kernel/sched_ext").exists() {
        eprintln!("this host has sched_ext; accepting the name would start the scheduler");
        return;
    }
    let o = bin()
        .args(["--compositor", "0123456789abcde"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("no sched_ext support"), "{}", text(&o));
}

/// Every numeric option of the tools refuses values outside its range with a message naming
/// the limit, including values that do not fit the type, NaN and infinity.
#[test]
fn numeric_options_are_range_checked() {
    let cases: &[(&[&str], i32, &str)] = &[
        (&["stress", "--workers", "0"], 1, "1 to 4096"),
        (&["stress", "--workers", "4097"], 1, "1 to 4096"),
        (
            &["stress", "--workers", "99999999999999999999"],
            2,
            "too large",
        ),
        (&["stress", "--nice", "20"], 1, "between -20 and 19"),
        (&["stress", "--nice", "-21"], 1, "between -20 and 19"),
        (&["stress", "--duration-s", "-1"], 1, "between 0 and"),
        (&["stress", "--duration-s", "nan"], 1, "between 0 and"),
        (&["stress", "--duration-s", "inf"], 1, "between 0 and"),
        (&["stress", "--duration-s", "1e8"], 1, "between 0 and"),
        (
            &["stress", "--run-us", "0", "--sleep-us", "5"],
            1,
            "positive run time",
        ),
        (
            &[
                "stress",
                "--run-us",
                "5",
                "--sleep-us",
                "18446744073709551615",
            ],
            1,
            "out of range",
        ),
        (&["frames", "--workers", "65"], 1, "1 to 64"),
        (&["frames", "--fps", "nan"], 1, "positive number"),
        (&["frames", "--duration-s", "inf"], 1, "between 0 and"),
        (&["audio", "--work-us", "6000"], 1, "does not fit"),
        (&["audio", "--rate", "0"], 1, "must be positive"),
        (&["probe", "--duration-s", "-1"], 1, "between 0 and"),
        (&["probe", "--period-us", "0"], 1, "must be positive"),
        (
            &["probe", "--period-us", "18446744073709551615"],
            1,
            "out of range",
        ),
        (
            &["probe", "--work-us", "18446744073709551615"],
            1,
            "out of range",
        ),
        (&["probe", "--count", "0"], 1, "must be positive"),
        (
            &["probe", "--sleep-range-us", "5000-1000"],
            1,
            "MIN exceeds MAX",
        ),
        (&["probe", "--sleep-range-us", "0-0"], 1, "above 0"),
        (
            &["probe", "--sleep-range-us", "1-18446744073709551615"],
            1,
            "out of range",
        ),
        (&["probe", "--sleep-range-us", "x"], 2, "expected MIN-MAX"),
        (&["probe", "--frames", "--fps", "0"], 1, "positive number"),
        (&["probe", "--frames", "--fps", "nan"], 1, "positive number"),
        (&["probe", "--frames", "--fps", "1e9"], 1, "resolution"),
        (
            &["probe", "--frames", "--frame-work-us", "99999999"],
            1,
            "does not fit",
        ),
    ];
    for (args, status, needle) in cases {
        assert_rejected_by(tools(), args, *status, needle);
    }
}

#[test]
fn help_stats_describes_every_field_and_exits() {
    use scx_pandemonium::stats::PandemoniumMetrics;
    use scx_stats::Meta;
    let o = bin().arg("--help-stats").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    let meta = PandemoniumMetrics::meta();
    assert!(meta.fields.len() > 40, "suspiciously few fields");
    for (name, f) in &meta.fields {
        let line = t
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("--help-stats lacks {name}:\n{t}"));
        assert!(line.contains(f.attrs.desc.as_deref().unwrap()), "{line}");
    }
    assert_no_panic(&o);
}

/// The socket's path is fixed; on a host where something runs an scx scheduler's stats server
/// there the connect fails differently, so only the message check depends on it.
#[test]
fn monitor_without_a_running_scheduler_fails_clearly() {
    use scx_pandemonium::stats::DEFAULT_SOCKET;
    let o = bin().args(["--monitor", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains(DEFAULT_SOCKET), "{t}");
    if !std::path::Path::new(DEFAULT_SOCKET).exists() {
        assert!(t.contains("no scx_pandemonium is running"), "{t}");
    }
    assert_no_panic(&o);
}

/// Test hooks are not in the binary a user runs: no environment variable makes it stall its own
/// control loop or move the stats socket (which the server replaces, as root). The gate stalls
/// the loop from outside instead (ptrace, tests/gate_support/mod.rs).
#[test]
fn the_release_binary_reads_no_test_hook_variables() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_scx_pandemonium")).unwrap();
    for hook in [
        "PANDEMONIUM_TEST_STALL_LOOP_SECS",
        "PANDEMONIUM_STATS_SOCKET",
        "PANDEMONIUM_TEST",
    ] {
        assert!(
            !bytes.windows(hook.len()).any(|w| w == hook.as_bytes()),
            "the binary still contains {hook}"
        );
    }
}

#[test]
fn bad_stats_intervals_are_usage_errors() {
    for args in [
        &["--monitor", "0"][..],
        &["--stats", "abc"],
        &["--monitor", "1", "--stats", "1"],
        &["--monitor", "1", "--no-adaptive"],
        &["--monitor", "1", "-d"],
        &["--monitor", "1", "--exit-dump-len", "4096"],
        &["--exit-dump-len", "-1"],
    ] {
        let o = bin().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert_no_panic(&o);
    }
}

/// Under systemd the journal reads a priority from each line's `<N>` prefix; the binary adds it
/// only when stderr is the very stream `JOURNAL_STREAM` names (here a file standing in for the
/// journal's socket), and a stale variable, as a child with stderr redirected inherits it,
/// changes nothing.
#[test]
fn error_lines_carry_a_priority_only_when_stderr_is_the_journal() {
    use std::os::unix::fs::MetadataExt;
    let run = |stream: &dyn Fn(&std::fs::Metadata) -> String| {
        let err = tempfile::NamedTempFile::new().unwrap();
        let m = err.as_file().metadata().unwrap();
        let o = bin()
            .args(["-v", "-k"])
            .env("JOURNAL_STREAM", stream(&m))
            .stderr(err.reopen().unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        std::fs::read_to_string(err.path()).unwrap()
    };

    let journal = run(&|m| format!("{}:{}", m.dev(), m.ino()));
    assert!(!journal.is_empty());
    for line in journal.lines() {
        assert!(line.starts_with("<3>pandemonium: error: "), "{journal}");
    }

    let stale = run(&|m| format!("{}:{}", m.dev(), m.ino() + 1));
    assert!(!stale.is_empty());
    for line in stale.lines() {
        assert!(line.starts_with("pandemonium: error: "), "{stale}");
    }
    assert!(stale.contains("-k/--local-kthreads"), "{stale}");
}
