// SPDX-License-Identifier: GPL-2.0-only
//! Measurement tools shipped in the binary: `probe` (how late an interactive task wakes) and
//! `stress` (the load it competes with). Each exposes its clap arguments, a `run` for the command
//! line, and pure `measure*` functions the integration gate calls in-process.
//!
//! Only the `run` functions touch process-wide state (SIGINT/SIGTERM handlers, stdout); the
//! measurement functions take an explicit stop flag instead, so the gate can use them from a test
//! harness that owns its own signals.

mod clock;
mod json;
mod prng;
pub mod probe;
mod signal;
pub mod stats;
pub mod stress;
mod thread;
