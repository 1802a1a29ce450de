// SPDX-License-Identifier: GPL-2.0-only
//! SIGINT/SIGTERM for the command-line tools: the first signal asks the tool to stop and print
//! its summary; `SA_RESETHAND` restores the default action, so a second Ctrl-C kills a tool
//! that is stuck. Installed by the `run` functions only, never by the measurement functions a
//! test harness calls.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // An atomic store is async-signal-safe; anything more (printing, locking) would not be.
    STOP.store(true, Ordering::Relaxed);
}

/// Installs the handlers and returns the flag they raise.
pub(crate) fn install() -> io::Result<&'static AtomicBool> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sa` is fully initialised (zeroed, then the mask emptied) before use, and the
        // handler only performs an atomic store.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // No SA_RESTART: the probe relies on clock_nanosleep returning EINTR to stop at once
            // (it never restarts anyway), and every other blocking call here is a retry loop.
            sa.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(&STOP)
}
