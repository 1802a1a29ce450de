// SPDX-License-Identifier: GPL-2.0-only
//! scx_pandemonium: a behavioral, adaptive sched_ext scheduler. The library holds everything the
//! binary, the integration gate and the tools share.

pub mod adaptive;
pub mod autogroup;
pub mod autopower;
pub mod bpf_intf;
pub mod bpf_skel;
pub mod cgroup_stats;
pub mod cgroup_support;
pub mod checkout;
pub mod cli;
pub mod codel;
pub mod compositor;
pub mod coop;
pub mod coop_learn;
pub mod cpustat;
#[cfg(test)]
mod fuzz;
pub mod games;
pub mod hist;
pub mod layout;
pub mod libbpf_opts;
pub mod logger;
pub mod longest_wait;
pub mod preflight;
pub mod prng;
pub mod procdb;
pub mod refused;
pub mod scheduler;
pub mod stats;
pub mod telemetry;
pub mod topology;
pub mod trace_pipe;
pub mod tuning;
pub mod version;
pub mod watchdog;
