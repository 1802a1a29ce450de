// SPDX-License-Identifier: GPL-2.0-only
//! scx_pandemonium: command line, preflight checks, and the load / run / restart loop.

use anyhow::Result;
use clap::Parser;
use libbpf_rs::PrintLevel;
use libbpf_rs::libbpf_sys::bpf_object_open_opts;
use log::{LevelFilter, error, info};
use scx_pandemonium::adaptive::Controller;
use scx_pandemonium::refused::Refused;
use scx_pandemonium::scheduler::{MAX_EXIT_DUMP_LEN, Options, Scheduler};
use scx_pandemonium::tuning::{Mode, mode_log};
use scx_pandemonium::watchdog::{self, Watchdog};
use scx_pandemonium::{
    autopower, compositor, coop, libbpf_opts, logger, preflight, stats, trace_pipe, version,
};
use scx_utils::libbpf_clap_opts::LibbpfOpts;
use std::mem::MaybeUninit;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A behavioral, adaptive sched_ext CPU scheduler.
///
/// Classifies every task as LAT_CRITICAL, INTERACTIVE or BATCH from how it behaves and keeps
/// interactive work responsive under full CPU load. Needs root and a kernel with sched_ext
/// (CONFIG_SCHED_CLASS_EXT, Linux 6.12+). Stop it with Ctrl-C or SIGTERM; the kernel's default
/// scheduler takes over again at once.
#[derive(Parser, Debug)]
#[command(name = "scx_pandemonium", version, long_version = version::long_version())]
struct Cli {
    /// BPF-only mode: run with the mode's knobs and no adaptive control loop.
    #[arg(long)]
    no_adaptive: bool,

    /// What to favour: auto, gaming, lowlatency, powersave or server (scx_loader's modes).
    ///
    /// auto (the default): the adaptive loop's own tuning. gaming: gamescope's and wineserver's
    /// threads LAT_CRITICAL while they run in frame-paced bursts, longer interactive slices,
    /// background work preempted sooner. lowlatency: half the slices and preemption delay. powersave: doubled slices, work
    /// kept on cache-near CPUs rather than waking idle ones. server: throughput, doubled batch
    /// slices, less preemption. The adaptive loop tunes around the mode and never leaves its
    /// rails; the startup log prints the knobs. scx_loader's spellings (LowLatency, PowerSave)
    /// work too.
    #[arg(short, long, value_name = "MODE", default_value = "auto",
          value_parser = Mode::parse)]
    mode: Mode,

    /// Follow the system's power profile (scx_utils' autopower, as scx_lavd's --autopower):
    /// power-saver runs powersave, balanced and performance run auto; read every second from
    /// power-profiles-daemon, else cpufreq's energy_performance_preference or scaling_governor.
    /// Each switch is logged. Only with --mode auto.
    #[arg(long)]
    autopower: bool,

    /// Treat processes with this name (comm, at most 15 bytes) as compositors, in addition to
    /// the built-in list: LAT_CRITICAL while they behave interactively (short bursts between
    /// sleeps). A name buys nothing more: one that runs CPU-bound is BATCH and gets its weight's
    /// share like any other task. Repeatable.
    #[arg(long = "compositor", value_name = "NAME", value_parser = compositor::parse_name)]
    compositors: Vec<String>,

    /// Run the threads of processes with this name (comm of the process, at most 15 bytes) as a
    /// cooperative group, for parallel runtimes that share the CPUs with others (OpenMP, BLAS
    /// thread pools): a group's threads never preempt each other, a thread keeps its CPU until
    /// it blocks or yields or its group's 20 ms turn ends, a yield goes to a waiting thread of
    /// the same process first, and groups take the CPUs in turn, whole. Other programs' wakeups
    /// preempt them as they preempt a CPU-bound task, and other CPU-bound work takes turns with
    /// the groups by weight: a name buys no more CPU. Off unless given. Repeatable.
    #[arg(long = "coop", value_name = "COMM", value_parser = coop::parse_name)]
    coop: Vec<String>,

    /// Recognise cooperative groups by behaviour and learn their names in the process database:
    /// a process whose CPU-bound threads wake each other or sched_yield(), or two or more of
    /// whose CPU-bound threads run at once and rarely sleep (a spinning wait, OpenMP's active
    /// one), while they find no idle CPU. After 2 such seconds its name is learned (and kept
    /// across restarts); a process of a learned name then runs as with --coop once its own
    /// threads show that behaviour, and loses it 2 s after they stop. A name alone buys
    /// nothing. Needs the adaptive loop (the database). Off by default: short passive OpenMP
    /// waits show no such behaviour, threaded programs that do not wait on each other are
    /// treated as teams too, and what that costs them is not measured enough yet (README,
    /// "Recognised by behaviour").
    #[arg(long = "coop-learn", conflicts_with = "no_adaptive")]
    coop_learn: bool,

    /// Print one line of telemetry per second, and debug messages.
    #[arg(short, long)]
    verbose: bool,

    /// Run the scheduler and print its statistics every SECS seconds (scx_stats; see
    /// --help-stats for the fields).
    #[arg(long, value_name = "SECS", value_parser = stats::parse_interval)]
    stats: Option<f64>,

    /// Do not load a scheduler: print the statistics of the scx_pandemonium already running,
    /// every SECS seconds, until Ctrl-C.
    #[arg(long, value_name = "SECS", value_parser = stats::parse_interval,
          conflicts_with_all = ["stats", "no_adaptive", "mode", "autopower", "compositors", "coop", "coop_learn",
                                "verbose", "debug", "exit_dump_len", "relaxed_maps",
                                "pin_root_path", "kconfig", "btf_custom_path", "bpf_token_path"])]
    monitor: Option<f64>,

    /// Describe every statistics field (--stats, --monitor) and exit.
    #[arg(long)]
    help_stats: bool,

    /// Copy the kernel's trace pipe (bpf_printk output, enabled trace events) to stderr while
    /// the scheduler runs, each line prefixed "trace: ". Reads /sys/kernel/tracing/trace_pipe,
    /// else /sys/kernel/debug/tracing/trace_pipe; reading it consumes it. The scheduler then
    /// prints there every task that waited longer than the overflow rescue age to run ("slow
    /// wait"), with the queue it waited in and the dispatch step that ran it.
    #[arg(short, long)]
    debug: bool,

    /// Size in bytes of the kernel's debug dump (CPU and task state) printed when the
    /// scheduler exits on an error; 0 keeps the kernel's default. At most 4194304 (4 MiB).
    #[arg(long, value_name = "LEN", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(..=i64::from(MAX_EXIT_DUMP_LEN)))]
    exit_dump_len: u32,

    #[command(flatten, next_help_heading = "Libbpf Options")]
    libbpf: LibbpfOpts,

    #[command(flatten)]
    refused: Refused,
}

/// `--autopower` picks between auto and powersave itself; another mode's compositors, game boost
/// and rails would come and go with the profile.
fn autopower_with_mode(mode: Mode) -> String {
    format!(
        "--autopower switches between auto and powersave by the power profile and cannot be \
         combined with --mode {mode}; drop one of them"
    )
}

/// A usage error: systemd's unit does not retry it (RestartPreventExitStatus=2).
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    if let Some(msg) = cli.refused.message() {
        error!("{msg}");
        return ExitCode::from(USAGE_ERROR);
    }
    if cli.autopower && cli.mode != Mode::Auto {
        error!("{}", autopower_with_mode(cli.mode));
        return ExitCode::from(USAGE_ERROR);
    }
    // --autopower switches to powersave and back; each mode's own names join the user's.
    let modes: &[Mode] = if cli.autopower {
        &[Mode::Auto, Mode::PowerSave]
    } else {
        &[cli.mode]
    };
    for m in modes {
        if let Err(msg) = compositor::check_fits(m.preset().compositors, &cli.compositors) {
            error!("{msg}");
            return ExitCode::from(USAGE_ERROR);
        }
    }
    if let Err(msg) = coop::check_fits(&cli.coop) {
        error!("{msg}");
        return ExitCode::from(USAGE_ERROR);
    }
    // Options the user gave that cannot be used are a usage error: a restart cannot fix them.
    let open_opts = match libbpf_opts::open_opts(&cli.libbpf) {
        Ok(o) => o,
        Err(e) => {
            error!("{e:#}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    match run(&cli, open_opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Our messages, scx_utils' and libbpf's all go through `log`, so they share one format and,
/// under systemd, carry their priority into the journal.
fn init_logging(verbose: bool) {
    let libbpf = logger::libbpf_level(std::env::var("LIBBPF_LOG_LEVEL").ok().as_deref());
    // LIBBPF_LOG_LEVEL=debug asks for libbpf's debug lines; a logger stopping at info would
    // drop them again.
    let debug = verbose || libbpf == PrintLevel::Debug;
    logger::init(if debug {
        LevelFilter::Debug
    } else {
        LevelFilter::Info
    });
    scx_utils::init_libbpf_logging(Some(libbpf));
}

fn run(cli: &Cli, open_opts: Option<bpf_object_open_opts>) -> Result<()> {
    if cli.help_stats {
        return stats::help();
    }
    if let Some(secs) = cli.monitor {
        return stats::monitor(secs);
    }
    preflight::check(&preflight::System::live())?;
    if cli.debug {
        let path = trace_pipe::spawn(Path::new("/sys"))?;
        info!("copying {} to stderr (-d)", path.display());
    }

    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    // The control loop sleeps a whole tick at a time; the handler wakes it to stop at once.
    let main_thread = std::thread::current();
    ctrlc::set_handler(move || {
        flag.store(true, Ordering::Relaxed);
        main_thread.unpark();
    })?;

    let mut opts = Options {
        mode: cli.mode,
        compositors: cli.compositors.clone(),
        coop: coop::unique(&cli.coop),
        coop_learn: cli.coop_learn,
        exit_dump_len: cli.exit_dump_len,
        open_opts,
        trace_slow: cli.debug,
    };
    info!(
        "starting ({}, mode {})",
        if cli.no_adaptive {
            "BPF-only"
        } else {
            "adaptive"
        },
        cli.mode
    );
    for line in mode_log::startup_lines(cli.mode, !cli.no_adaptive) {
        info!("{line}");
    }
    if let Some(line) = coop::startup_line(&cli.coop) {
        info!("{line}");
    }
    let mut ctl = Controller::new(!cli.no_adaptive, cli.verbose, cli.mode);
    if cli.coop_learn {
        info!("{}", coop::LEARN_LINE);
        ctl.learn_coop(&coop::unique(&cli.coop));
    }
    if cli.autopower {
        ctl.follow_power(autopower::Watcher::spawn()?);
        info!(
            "autopower: following the power profile (power-profiles-daemon, else cpufreq): \
             power-saver runs powersave, balanced and performance auto"
        );
    }
    let publisher = stats::Publisher::default();
    ctl.publish_to(publisher.clone());
    // Kept until we return: dropping it closes the socket.
    let mut server = None;
    // The socket is bound only once we are attached: scx_stats removes whatever is at its path,
    // so an instance that cannot attach (another scheduler runs) must never get that far, or
    // the running one's statistics become unreachable.
    let mut serve_stats = || -> Result<()> {
        server = stats::serve(publisher.clone(), cli.stats.is_some())?;
        if let Some(secs) = cli.stats {
            stats::spawn_printer(secs, shutdown.clone())?;
        }
        Ok(())
    };
    let result = run_loop(
        &mut opts,
        &shutdown,
        &mut ctl,
        !cli.no_adaptive,
        &mut serve_stats,
    );
    ctl.finish();
    result
}

/// Load, attach and run; reload when the kernel asks for a restart (CPU hotplug).
/// `first_attached` runs once, after the first attach.
fn run_loop(
    opts: &mut Options,
    shutdown: &Arc<AtomicBool>,
    ctl: &mut Controller,
    adaptive: bool,
    first_attached: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    let mut first = true;
    loop {
        // After a hotplug restart, the knobs of the mode --autopower switched to.
        opts.mode = ctl.mode();
        let mut open_object = MaybeUninit::uninit();
        let mut sched = Scheduler::init(&mut open_object, opts)?;
        if std::mem::take(&mut first) {
            first_attached()?;
        }
        // Started after attach: loading a large BPF program may take longer than the timeout.
        let (heartbeat, guard) = if adaptive {
            let wd = Watchdog::new(watchdog::STALL_TIMEOUT);
            let hb = wd.heartbeat();
            (
                Some(hb),
                Some(wd.spawn(watchdog::CHECK_PERIOD, watchdog::exit_on_stall)?),
            )
        } else {
            (None, None)
        };
        ctl.attached(heartbeat);
        let uei = sched.run(shutdown, |s| ctl.tick(s))?;
        drop(guard);
        if uei.should_restart() && !shutdown.load(Ordering::Relaxed) {
            info!("the kernel asked for a restart (CPU hotplug); reloading");
            continue;
        }
        info!("detached; the kernel's default scheduler is back in charge");
        return Ok(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Clap checks its definition (duplicate short flags across the flattened groups, conflicts
    /// naming unknown ids) only in debug_assert, which a release test build skips.
    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn scx_flags_we_share_with_bpfland_parse() {
        let cli = Cli::try_parse_from([
            "scx_pandemonium",
            "-d",
            "--exit-dump-len",
            "65536",
            "--relaxed-maps",
            "true",
            "--pin-root-path",
            "/sys/fs/bpf/x",
        ])
        .unwrap();
        assert!(cli.debug);
        assert_eq!(cli.exit_dump_len, 65536);
        assert_eq!(cli.libbpf.relaxed_maps, Some(true));
        assert_eq!(cli.libbpf.pin_root_path.as_deref(), Some("/sys/fs/bpf/x"));
        assert!(cli.refused.found.is_empty());
    }

    #[test]
    fn monitor_refuses_options_that_only_a_loaded_scheduler_uses() {
        for extra in [&["-d"][..], &["--exit-dump-len", "1"], &["--kconfig", "/k"]] {
            let mut args = vec!["scx_pandemonium", "--monitor", "1"];
            args.extend_from_slice(extra);
            let err = Cli::try_parse_from(&args).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{extra:?}"
            );
        }
    }

    #[test]
    fn mode_parses_long_short_and_defaults_to_auto() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("scx_pandemonium").chain(args.iter().copied()))
        };
        assert_eq!(parse(&[]).unwrap().mode, Mode::Auto);
        assert_eq!(parse(&["-m", "gaming"]).unwrap().mode, Mode::Gaming);
        assert_eq!(parse(&["--mode=server"]).unwrap().mode, Mode::Server);
        assert_eq!(parse(&["-m", "LowLatency"]).unwrap().mode, Mode::LowLatency);
        let cli = parse(&["--mode", "powersave", "--no-adaptive"]).unwrap();
        assert_eq!((cli.mode, cli.no_adaptive), (Mode::PowerSave, true));
        assert!(cli.refused.found.is_empty());

        let err = parse(&["-m", "fast"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
        let msg = err.to_string();
        assert!(msg.contains("unknown mode \"fast\""), "{msg}");
        assert!(
            msg.contains("auto, gaming, lowlatency, powersave, server"),
            "{msg}"
        );
        let msg = parse(&["-m", "performance"]).unwrap_err().to_string();
        assert!(msg.contains("scx_bpfland's -m/--primary-domain"), "{msg}");
        let err = parse(&["--monitor", "1", "-m", "gaming"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn coop_is_off_unless_given_repeatable_and_checked() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("scx_pandemonium").chain(args.iter().copied()))
        };
        assert!(parse(&[]).unwrap().coop.is_empty());
        let cli = parse(&["--coop", "coopbench", "--coop=python3"]).unwrap();
        assert_eq!(cli.coop, ["coopbench", "python3"]);
        let err = parse(&["--coop", "a-sixteen-bytes!"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
        let err = parse(&["--monitor", "1", "--coop", "x"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn coop_learn_is_off_unless_given_and_needs_the_adaptive_loop() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("scx_pandemonium").chain(args.iter().copied()))
        };
        assert!(!parse(&[]).unwrap().coop_learn);
        let cli = parse(&["--coop-learn", "--coop", "omp"]).unwrap();
        assert!(cli.coop_learn && cli.coop == ["omp"]);
        for other in [&["--no-adaptive"][..], &["--monitor", "1"]] {
            let args: Vec<&str> = std::iter::once("--coop-learn")
                .chain(other.iter().copied())
                .collect();
            let err = parse(&args).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{args:?}"
            );
        }
    }

    #[test]
    fn help_lists_the_modes() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("-m, --mode <MODE>"), "{help}");
        for m in Mode::ALL {
            assert!(help.contains(m.name()), "{help}");
        }
    }

    #[test]
    fn foreign_flags_are_collected_not_rejected_by_clap() {
        let cli = Cli::try_parse_from(["scx_pandemonium", "-k", "-s", "5000", "-v"]).unwrap();
        assert!(cli.verbose);
        let msg = cli.refused.message().unwrap();
        assert!(msg.contains("-s/--slice-us"), "{msg}");
        assert!(msg.contains("-k/--local-kthreads"), "{msg}");
    }
}
