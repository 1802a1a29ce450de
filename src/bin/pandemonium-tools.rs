// SPDX-License-Identifier: GPL-2.0-only
//! pandemonium-tools: the measurement tools of the benchmarks and the gate, `probe` (how late an
//! interactive task wakes), `stress` (the CPU load it competes with), `frames` (a game's frame
//! times) and `audio` (an audio period's xruns). They need neither root
//! nor sched_ext, and live apart from scx_pandemonium so the scheduler binary stays the
//! scheduler. Their code is the library's `cli` module, which the gate also calls in-process.

use clap::{Parser, Subcommand};
use scx_pandemonium::cli::{audio, frames, probe, stress};
use std::process::ExitCode;

/// Measurement tools for scx_pandemonium's benchmarks: each prints one JSON object on stdout.
#[derive(Parser, Debug)]
#[command(name = "pandemonium-tools", version)]
struct Cli {
    #[command(subcommand)]
    tool: Tool,
}

#[derive(Subcommand, Debug)]
enum Tool {
    /// Interactive wakeup probe: lateness of absolute-deadline sleeps, as JSON.
    Probe(probe::ProbeArgs),
    /// CPU load generator: busy, pinned, long-running or duty-cycled workers.
    Stress(stress::StressArgs),
    /// A game's frame loop (main, workers, render): frame-time P50/P99, 1 % low FPS, frames
    /// over budget.
    Frames(frames::FramesArgs),
    /// An audio server's period (256 frames at 48 kHz): xruns and wakeup latency.
    Audio(audio::AudioArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.tool {
        Tool::Probe(a) => probe::run(a),
        Tool::Stress(a) => stress::run(a),
        Tool::Frames(a) => frames::run(a),
        Tool::Audio(a) => audio::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Clap's usage errors exit 2 above; a value out of range is a plain failure.
            eprintln!("pandemonium-tools: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_tool_parses_from_a_consistent_definition() {
        // Clap checks its definition in debug_assert only, which a release test build skips.
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["pandemonium-tools", "probe", "--duration-s", "1"]);
        assert!(matches!(cli.unwrap().tool, Tool::Probe(_)));
        let cli = Cli::try_parse_from(["pandemonium-tools", "stress", "--workers", "2"]);
        assert!(matches!(cli.unwrap().tool, Tool::Stress(_)));
        let cli = Cli::try_parse_from(["pandemonium-tools", "frames", "--fps", "60"]);
        assert!(matches!(cli.unwrap().tool, Tool::Frames(_)));
        let cli = Cli::try_parse_from(["pandemonium-tools", "audio", "--work-us", "500-1000"]);
        assert!(matches!(cli.unwrap().tool, Tool::Audio(_)));
    }
}
