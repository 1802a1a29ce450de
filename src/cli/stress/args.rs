// SPDX-License-Identifier: GPL-2.0-only
//! The `stress` subcommand's arguments and their translation to a `StressConfig`.

use anyhow::{Context, Result};

use super::config::{DEFAULT_YIELD_EVERY_NS, Load, StressConfig};
use crate::cli::clock::seconds_to_ns;
use crate::cli::thread;

/// Load the CPUs with busy workers that record their own progress and the longest time each went
/// without the CPU. By default workers spin and call sched_yield every 10 ms; --long-runner never
/// yields; --run-us/--sleep-us make a duty cycle. Prints one JSON summary at the end.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct StressArgs {
    /// Number of workers (default: one per CPU this process may run on).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Pin each worker to one CPU, round robin over the allowed CPUs.
    #[arg(long)]
    pub pin: bool,

    /// How long to run, in seconds; 0 runs until SIGINT/SIGTERM.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub duration_s: f64,

    /// Pure spin: never yield, never sleep.
    #[arg(long, conflicts_with_all = ["run_us", "sleep_us"])]
    pub long_runner: bool,

    /// Duty cycle: spin this many microseconds, then sleep --sleep-us.
    #[arg(long, value_name = "US", requires = "sleep_us")]
    pub run_us: Option<u64>,

    /// Duty cycle: sleep this many microseconds after each --run-us.
    #[arg(long, value_name = "US", requires = "run_us")]
    pub sleep_us: Option<u64>,

    /// Nice value of the workers (-20..19; below the current value needs CAP_SYS_NICE).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub nice: Option<i32>,

    /// Thread name (comm, at most 15 bytes) of every worker; default stress<i>.
    #[arg(long, value_name = "NAME", value_parser = parse_name)]
    pub name: Option<String>,

    /// Print one JSON object (the default).
    #[arg(long, conflicts_with = "human")]
    pub json: bool,

    /// Print one human-readable line instead of JSON.
    #[arg(long)]
    pub human: bool,
}

fn parse_name(s: &str) -> Result<String, String> {
    thread::validate_name(s).map(|()| s.to_string())
}

fn us(what: &str, v: u64) -> Result<u64> {
    v.checked_mul(1_000)
        .with_context(|| format!("{what} of {v} us is out of range"))
}

impl StressArgs {
    /// The validated configuration these arguments describe.
    pub fn to_config(&self) -> Result<StressConfig> {
        let workers = match self.workers {
            Some(n) => n,
            None => thread::allowed_cpus()
                .context("counting the CPUs this process may use")?
                .len(),
        };
        let load = match (self.long_runner, self.run_us, self.sleep_us) {
            (true, _, _) => Load::LongRunner,
            (false, Some(r), Some(s)) => Load::DutyCycle {
                run_ns: us("the run time", r)?,
                sleep_ns: us("the sleep time", s)?,
            },
            _ => Load::Yielding {
                yield_every_ns: DEFAULT_YIELD_EVERY_NS,
            },
        };
        let duration_ns = seconds_to_ns("the duration", self.duration_s)?;
        let cfg = StressConfig {
            workers,
            pin: self.pin,
            duration_ns: (duration_ns > 0).then_some(duration_ns),
            load,
            nice: self.nice,
            name: self.name.clone(),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<StressArgs, clap::Error> {
        crate::cli::parse_args("stress", args)
    }

    fn config(args: &[&str]) -> Result<StressConfig> {
        parse(args).map_err(|e| anyhow::anyhow!("{e}"))?.to_config()
    }

    #[test]
    fn defaults_use_every_allowed_cpu_until_stopped() {
        let cfg = config(&[]).unwrap();
        assert_eq!(cfg.workers, thread::allowed_cpus().unwrap().len());
        assert_eq!(cfg.duration_ns, None);
        assert_eq!(cfg.load.name(), "yield");
        assert!(!cfg.pin);
    }

    #[test]
    fn modes_and_options() {
        let cfg = config(&[
            "--workers",
            "3",
            "--pin",
            "--duration-s",
            "1.5",
            "--long-runner",
            "--nice",
            "-3",
            "--name",
            "hog",
        ])
        .unwrap();
        assert_eq!(cfg.workers, 3);
        assert!(cfg.pin);
        assert_eq!(cfg.duration_ns, Some(1_500_000_000));
        assert_eq!(cfg.load, Load::LongRunner);
        assert_eq!(cfg.nice, Some(-3));
        assert_eq!(cfg.name.as_deref(), Some("hog"));
        let cfg = config(&["--run-us", "500", "--sleep-us", "1500"]).unwrap();
        assert_eq!(
            cfg.load,
            Load::DutyCycle {
                run_ns: 500_000,
                sleep_ns: 1_500_000
            }
        );
    }

    #[test]
    fn invalid_arguments_are_errors_not_panics() {
        let e = |a: &[&str]| format!("{:#}", config(a).unwrap_err());
        assert!(e(&["--workers", "0"]).contains("1 to 4096"));
        assert!(e(&["--duration-s", "-2"]).contains("duration"));
        assert!(e(&["--nice", "25"]).contains("between -20 and 19"));
        assert!(e(&["--run-us", "0", "--sleep-us", "10"]).contains("duty cycle"));
        assert!(e(&["--run-us", "18446744073709551615", "--sleep-us", "1"]).contains("range"));
        for args in [
            &["--run-us", "10"][..],
            &["--sleep-us", "10"],
            &["--long-runner", "--run-us", "1", "--sleep-us", "1"],
            &["--name", "a-name-longer-than-15"],
            &["--workers", "-1"],
            &["--json", "--human"],
        ] {
            assert!(parse(args).is_err(), "{args:?} should not parse");
        }
    }
}
