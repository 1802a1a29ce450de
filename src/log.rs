// SPDX-License-Identifier: GPL-2.0-only
//! Logging macros: one line each on stderr, prefixed so the scheduler's lines stand out in a VM
//! console or the journal among the kernel's.

#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => { eprintln!("pandemonium: {}", format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => { eprintln!("pandemonium: warning: {}", format_args!($($arg)*)) };
}
