// SPDX-License-Identifier: GPL-2.0-only
//! How a measuring run was set up and how it ended: fields the `audio`, `frames` and `probe`
//! reports share, defined once. A report embeds them with `#[serde(flatten)]`; serde_json writes
//! a flattened struct's fields in its place and in their order, so the JSON is as if they were
//! the report's own.

use serde::Serialize;

/// How a measuring loop ended; each loop records one and its report carries it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunEnd {
    pub elapsed_ns: u64,
    /// Stopped by the stop flag (a signal) before its duration or count.
    pub interrupted: bool,
}

/// An `audio` or `probe` run: its thread's timer slack and comm, the seed of its draw, and how
/// it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunMeta {
    /// `None`: the kernel's slack was left alone.
    pub timer_slack_ns: Option<u64>,
    /// `None`: the thread kept its name.
    pub name: Option<String>,
    pub seed: u64,
    #[serde(flatten)]
    pub end: RunEnd,
}
