// SPDX-License-Identifier: GPL-2.0-only
//! The `audio` subcommand's arguments and their translation to an `AudioConfig`.

use anyhow::{Result, bail};

use super::config::{AudioConfig, DEFAULT_NAME};
use crate::cli::clock::seconds_to_ns;
use crate::cli::thread;

/// An audio server's data thread, as PipeWire runs one without realtime priority: a period of
/// --quantum frames at --rate Hz (256 at 48 kHz: 5.33 ms) on absolute deadlines, and --work-us
/// of CPU time per period. Reports the periods missed (xruns: the work ended after the period's
/// end, or the period passed while the thread slept) and how late it woke.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct AudioArgs {
    /// Frames per period (PipeWire's quantum).
    #[arg(long, value_name = "FRAMES", default_value_t = 256)]
    pub quantum: u32,

    /// Sample rate, in Hz.
    #[arg(long, value_name = "HZ", default_value_t = 48_000)]
    pub rate: u32,

    /// CPU time of one period's work, in microseconds: US, or MIN-MAX drawn per period.
    #[arg(long, value_name = "US[-US]", default_value = "500", value_parser = parse_work)]
    pub work_us: (u64, u64),

    /// How long to run, in seconds.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 10.0,
        allow_negative_numbers = true
    )]
    pub duration_s: f64,

    /// Seed of the work draw (MIN-MAX).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,

    /// Timer slack of the thread, in ns; 0 leaves the kernel's default (50 us).
    #[arg(long, value_name = "NS", default_value_t = 1)]
    pub timer_slack_ns: u64,

    /// Thread name (comm, at most 15 bytes) the scheduler sees.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_NAME, value_parser = parse_name)]
    pub name: String,

    /// Print one JSON object (the default).
    #[arg(long, conflicts_with = "human")]
    pub json: bool,

    /// Print one human-readable line instead of JSON.
    #[arg(long)]
    pub human: bool,
}

fn parse_work(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("expected US or MIN-MAX in microseconds (e.g. 500-1000), got {s:?}");
    let num = |t: &str| t.trim().parse::<u64>().map_err(|_| bad());
    match s.split_once('-') {
        Some((lo, hi)) => Ok((num(lo)?, num(hi)?)),
        None => num(s).map(|v| (v, v)),
    }
}

fn parse_name(s: &str) -> Result<String, String> {
    thread::validate_name(s).map(|()| s.to_string())
}

impl AudioArgs {
    /// The validated configuration these arguments describe.
    pub fn to_config(&self) -> Result<AudioConfig> {
        let us = |v: u64| match v.checked_mul(1_000) {
            Some(ns) => Ok(ns),
            None => bail!("work of {v} us is out of range"),
        };
        let cfg = AudioConfig {
            quantum: self.quantum,
            rate: self.rate,
            work_min_ns: us(self.work_us.0)?,
            work_max_ns: us(self.work_us.1)?,
            duration_ns: seconds_to_ns("the duration", self.duration_s)?,
            seed: self.seed,
            timer_slack_ns: (self.timer_slack_ns > 0).then_some(self.timer_slack_ns),
            name: Some(self.name.clone()),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Result<AudioConfig> {
        crate::cli::parse_args::<AudioArgs>("audio", args)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .to_config()
    }

    fn config_err(args: &[&str]) -> String {
        format!("{:#}", config(args).unwrap_err())
    }

    #[test]
    fn defaults_are_pipewires_period() {
        assert_eq!(config(&[]).unwrap(), AudioConfig::default());
    }

    #[test]
    fn every_flag_lands_in_the_config() {
        let cfg = config(&[
            "--quantum",
            "1024",
            "--rate",
            "44100",
            "--work-us",
            "500-1000",
            "--duration-s",
            "2",
            "--seed",
            "7",
            "--timer-slack-ns",
            "0",
            "--name",
            "pw-data",
        ])
        .unwrap();
        assert_eq!(
            cfg,
            AudioConfig {
                quantum: 1024,
                rate: 44_100,
                work_min_ns: 500_000,
                work_max_ns: 1_000_000,
                duration_ns: 2_000_000_000,
                seed: 7,
                timer_slack_ns: None,
                name: Some("pw-data".into()),
            }
        );
        assert_eq!(config(&["--work-us", "800"]).unwrap().work_max_ns, 800_000);
    }

    #[test]
    fn bad_values_are_clear_errors() {
        assert!(config_err(&["--work-us", "fast"]).contains("MIN-MAX"));
        assert!(config_err(&["--work-us", "1000-500"]).contains("MIN exceeds MAX"));
        assert!(config_err(&["--work-us", "6000"]).contains("does not fit"));
        assert!(config_err(&["--rate", "0"]).contains("positive"));
        assert!(config_err(&["--duration-s", "-1"]).contains("duration"));
        assert!(config_err(&["--name", "sixteen-bytes-xx"]).contains("15 bytes"));
        assert!(config_err(&["--work-us", "18446744073709551615"]).contains("out of range"));
    }
}
