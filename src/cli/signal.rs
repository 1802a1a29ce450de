// SPDX-License-Identifier: GPL-2.0-only
//! SIGINT/SIGTERM for the command-line tools: the first signal asks the tool to stop and print
//! its summary; `SA_RESETHAND` restores the default action, so a second Ctrl-C kills a tool
//! that is stuck. Installed by the `run` functions only, never by the measurement functions a
//! test harness calls.

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // An atomic store is async-signal-safe; anything more (printing, locking) would not be.
    STOP.store(true, Ordering::Relaxed);
}

/// Installs the handlers and returns the flag they raise.
pub(crate) fn install() -> io::Result<&'static AtomicBool> {
    // No SA_RESTART: the probe relies on clock_nanosleep returning EINTR to stop at once (it
    // never restarts anyway), and every other blocking call here is a retry loop.
    let sa = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESETHAND,
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only performs an atomic store.
        unsafe { sigaction(sig, &sa) }?;
    }
    Ok(&STOP)
}
