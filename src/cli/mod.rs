// SPDX-License-Identifier: GPL-2.0-only
//! The measurement tools of the `pandemonium-tools` binary (src/bin/): `probe` (how late an
//! interactive task wakes), `stress` (the load it competes with), `frames` (a game's frame
//! loop) and `audio` (an audio server's period). Each exposes its clap
//! arguments, a `run` for the command line, and pure `measure*` functions the integration gate
//! calls in-process.
//!
//! Only the `run` functions touch process-wide state (SIGINT/SIGTERM handlers, stdout); the
//! measurement functions take an explicit stop flag instead, so the gate can use them from a test
//! harness that owns its own signals.

pub mod audio;
pub(crate) mod clock;
pub mod frames;
pub mod probe;
pub mod run_meta;
mod signal;
pub mod stats;
pub mod stress;
mod thread;
pub mod work;

/// Prints a tool's report as one line on stdout: the human spelling or the JSON object.
pub(crate) fn print_report(
    human: bool,
    to_human: impl FnOnce() -> String,
    to_json: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let text = if human { to_human() } else { to_json() };
    writeln!(std::io::stdout().lock(), "{text}").context("writing the report to stdout")
}

/// One JSON object on one line. The reports are plain structs of numbers, strings and options:
/// serde_json fails only on maps with non-string keys, which they do not have.
pub(crate) fn json_line(report: &impl serde::Serialize) -> String {
    serde_json::to_string(report).expect("a tool report always encodes as JSON")
}

/// Parses `args` as the command-line flags of one tool, the way its subcommand would.
#[cfg(test)]
pub(crate) fn parse_args<A: clap::Args + clap::FromArgMatches>(
    tool: &'static str,
    args: &[&str],
) -> Result<A, clap::Error> {
    let cmd = A::augment_args(clap::Command::new(tool));
    let matches = cmd.try_get_matches_from(std::iter::once(tool).chain(args.iter().copied()))?;
    A::from_arg_matches(&matches)
}
