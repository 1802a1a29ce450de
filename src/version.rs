// SPDX-License-Identifier: GPL-2.0-only
//! `--version`: crate version, git hash, target, and how the BPF object was built.

pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("PANDEMONIUM_GIT_HASH"),
    ")\ntarget: ",
    env!("PANDEMONIUM_TARGET"),
    "\nBPF: ",
    env!("PANDEMONIUM_BPF_CLANG"),
    ", -std=gnu23; vmlinux.h: ",
    env!("PANDEMONIUM_VMLINUX_ORIGIN"),
);
