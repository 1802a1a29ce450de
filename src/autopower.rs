// SPDX-License-Identifier: GPL-2.0-only
//! `--autopower`: `auto` follows the system's power profile, as scx_lavd's `--autopower` does.
//! The profile comes from scx_utils' `autopower` (power-profiles-daemon's `ActiveProfile` over
//! the system bus, else cpufreq policy0's `energy_performance_preference` or `scaling_governor`):
//! power-saver runs the powersave preset, balanced and performance run auto, and an unknown
//! profile keeps the mode in force. The switch changes the loop's centre and rails and BPF's
//! `pack` knob; compositors and game boosting are the same in both modes, so nothing else moves.

use crate::tuning::Mode;
use anyhow::{Context, Result};
use scx_utils::autopower::{PowerProfile, fetch_power_profile};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

/// How often the profile is read: the control loop's tick.
pub const PERIOD: Duration = Duration::from_secs(1);

/// What `auto` runs as under `p`; `None` for a profile nobody could read.
pub fn mode_for(p: PowerProfile) -> Option<Mode> {
    match p {
        PowerProfile::Powersave => Some(Mode::PowerSave),
        PowerProfile::Balanced { .. } | PowerProfile::Performance => Some(Mode::Auto),
        PowerProfile::Unknown => None,
    }
}

/// Reads the profile on its own thread and passes on each change. A D-Bus call to a hung
/// power-profiles-daemon blocks until its timeout; on the control loop's thread the stall
/// watchdog would take that for a stalled scheduler.
pub struct Watcher {
    rx: Receiver<PowerProfile>,
}

impl Watcher {
    pub fn spawn() -> Result<Watcher> {
        Watcher::spawn_with(|| fetch_power_profile(false), PERIOD)
    }

    fn spawn_with(
        mut fetch: impl FnMut() -> PowerProfile + Send + 'static,
        period: Duration,
    ) -> Result<Watcher> {
        let (tx, rx) = mpsc::channel();
        thread::Builder::new()
            .name("autopower".into())
            .spawn(move || {
                let mut last = None;
                loop {
                    let p = fetch();
                    if last != Some(p) {
                        if tx.send(p).is_err() {
                            return;
                        }
                        last = Some(p);
                    }
                    thread::sleep(period);
                }
            })
            .context("cannot start the autopower thread")?;
        Ok(Watcher { rx })
    }

    /// The newest profile read since the last call, if it changed since then.
    pub fn changed(&self) -> Option<PowerProfile> {
        self.rx.try_iter().last()
    }
}

/// One profile change: the mode to run, and the line that says why.
#[derive(Debug, PartialEq, Eq)]
pub struct Switch {
    pub mode: Mode,
    pub line: String,
}

/// The mode a new profile asks for, with the log line; `current` is the mode in force.
pub fn on_profile(p: PowerProfile, current: Mode) -> Switch {
    match mode_for(p) {
        Some(mode) if mode == current => Switch {
            mode,
            line: format!("autopower: power profile {p}: mode {mode} (unchanged)"),
        },
        Some(mode) => Switch {
            mode,
            line: format!("autopower: power profile {p}: mode {current} -> {mode}"),
        },
        None => Switch {
            mode: current,
            line: format!(
                "autopower: power profile unknown (no power-profiles-daemon on the system bus, \
                 no cpufreq energy_performance_preference or scaling_governor): mode {current} \
                 until one is known"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn power_saver_runs_powersave_and_the_rest_auto() {
        assert_eq!(mode_for(PowerProfile::Powersave), Some(Mode::PowerSave));
        for p in [
            PowerProfile::Balanced { power: true },
            PowerProfile::Balanced { power: false },
            PowerProfile::Performance,
        ] {
            assert_eq!(mode_for(p), Some(Mode::Auto), "{p}");
        }
        assert_eq!(mode_for(PowerProfile::Unknown), None);
    }

    #[test]
    fn a_switch_names_both_modes_and_unknown_keeps_the_mode() {
        let s = on_profile(PowerProfile::Powersave, Mode::Auto);
        assert_eq!(s.mode, Mode::PowerSave);
        assert_eq!(
            s.line,
            "autopower: power profile powersave: mode auto -> powersave"
        );
        let s = on_profile(PowerProfile::Performance, Mode::Auto);
        assert_eq!(s.mode, Mode::Auto);
        assert!(s.line.ends_with("mode auto (unchanged)"), "{}", s.line);
        let s = on_profile(PowerProfile::Unknown, Mode::PowerSave);
        assert_eq!(s.mode, Mode::PowerSave);
        assert!(
            s.line.contains("mode powersave until one is known"),
            "{}",
            s.line
        );
    }

    /// The thread passes on changes only, and `changed` hands over the newest of them.
    #[test]
    fn the_watcher_reports_each_change_once() {
        let balanced = PowerProfile::Balanced { power: false };
        let mut script = vec![balanced, balanced, PowerProfile::Powersave];
        let w = Watcher::spawn_with(
            move || {
                if script.len() > 1 {
                    script.remove(0)
                } else {
                    script[0]
                }
            },
            Duration::from_millis(5),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while seen.last() != Some(&PowerProfile::Powersave) && Instant::now() < deadline {
            seen.extend(w.changed());
            thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(seen.last(), Some(&PowerProfile::Powersave), "{seen:?}");
        thread::sleep(Duration::from_millis(50));
        assert_eq!(w.changed(), None, "the same profile again is no change");
        assert!(!seen.windows(2).any(|w| w[0] == w[1]), "{seen:?}");
    }
}
