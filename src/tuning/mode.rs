// SPDX-License-Identifier: GPL-2.0-only
//! Modes: the names scx_loader and desktop tools use for what a user wants from a scheduler
//! (Auto, Gaming, LowLatency, PowerSave, Server), each a fixed preset over the knobs BPF reads.
//!
//! A mode does three things, and only these:
//! - scales the knobs: BPF-only mode runs with the built-in defaults times the mode's factors,
//!   and the adaptive loop scales each regime's baseline by the same factors before its experts
//!   blend, so the loop keeps tuning to the load, around the mode's centre;
//! - narrows the rails: the loop can move a knob only within what the mode promises (a server's
//!   batch slice stays within 20-80 ms, lowlatency's preemption delay at 1 ms or less), and the
//!   sleep adjustment and the longrun override cannot take it out either, since the rails are
//!   the loop's last step;
//! - adds names to the LAT_CRITICAL compositor list, and makes every thread of a game Steam
//!   launched LAT_CRITICAL (gaming).
//!
//! `auto` scales by 1 with the standard rails and no names: exactly the scheduler without a
//! mode. Topology parameters (`topo_params`) are not touched: they follow the machine, not the
//! user's intent.

use super::experts::{Knob, NR_KNOBS};
use super::rails::{RAILS, Rails};
use super::regime::Regime;
use super::scaled_regime_knobs;
use crate::bpf_intf::{AffinityMode, TuningKnobs};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    #[default]
    Auto,
    Gaming,
    LowLatency,
    PowerSave,
    Server,
}

/// A factor `num / den`: exact integer arithmetic, so a factor of 1 leaves a knob bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    pub num: u64,
    pub den: u64,
}

impl Ratio {
    const fn new(num: u64, den: u64) -> Ratio {
        Ratio { num, den }
    }

    fn of(self, v: u64) -> u64 {
        let r = u128::from(v) * u128::from(self.num) / u128::from(self.den);
        u64::try_from(r).unwrap_or(u64::MAX)
    }

    pub fn is_one(self) -> bool {
        self.num == self.den
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.den == 1 {
            write!(f, "x{}", self.num)
        } else {
            write!(f, "x{}/{}", self.num, self.den)
        }
    }
}

const ONE: Ratio = Ratio::new(1, 1);
const TWICE: Ratio = Ratio::new(2, 1);
const HALF: Ratio = Ratio::new(1, 2);
const THREE_HALVES: Ratio = Ratio::new(3, 2);
const THREE_QUARTERS: Ratio = Ratio::new(3, 4);

/// What one mode sets.
#[derive(Debug)]
pub struct Preset {
    /// Factor per knob, in [`Knob::ALL`] order.
    pub scale: [Ratio; NR_KNOBS],
    pub rails: Rails,
    /// Process names (comm) made LAT_CRITICAL on top of the built-in compositor list.
    pub compositors: &'static [&'static str],
    /// Every thread of a game Steam launched made LAT_CRITICAL (src/games/).
    pub boost_games: bool,
    /// A waking task queues behind its busy CPU's non-BATCH runner rather than wake an idle
    /// core (BPF `pack_on_busy()`, knob `pack`).
    pub pack: bool,
}

/// The scheduler without a mode. Every `scale` here lists factors in [`Knob::ALL`] order:
/// slice, preempt, lag scale, batch slice, burst slice, LAT_CRITICAL and INTERACTIVE scores.
const AUTO: Preset = Preset {
    scale: [ONE; NR_KNOBS],
    rails: RAILS,
    compositors: &[],
    boost_games: false,
    pack: false,
};

/// A frame's work is one burst: the longer interactive (and longrun) slice lets a render thread
/// finish it, and moves the 4-slice cut that demotes an INTERACTIVE task to BATCH from 4 ms to
/// 8 ms of burst, past a 120 Hz frame. Background BATCH (shader compiles, downloads) yields twice as fast, frame loops reach
/// LAT_CRITICAL at half the score, and sleepers (a thread waiting for vblank) bank 1.5x the
/// credit. The rails keep the loop from undoing it: preemption never waits past 2 ms (1/8 of a
/// 60 Hz frame) and the thresholds never rise above auto's defaults.
const GAMING: Preset = Preset {
    scale: [TWICE, HALF, THREE_HALVES, ONE, TWICE, HALF, HALF],
    rails: RAILS
        .narrow(Knob::Slice, MS, 4 * MS)
        .narrow(Knob::Preempt, 100 * US, 2 * MS)
        .narrow(Knob::LatCriHigh, 8, 32)
        .narrow(Knob::LatCriLow, 1, 8),
    compositors: GAME_THREADS,
    boost_games: true,
    pack: false,
};

/// Gamescope names its threads, and comm is per thread: the render and present thread
/// (steamcompmgr), the page-flip, vblank and image-wait threads are not "gamescope". Wine and
/// Proton send their server calls (and, without esync, fsync or ntsync, every wait on a lock or
/// event) through wineserver, so a game's threads queue behind it.
pub const GAME_THREADS: &[&str] = &[
    "gamescope-xwm",
    "gamescope-kms",
    "gamescope-vblk",
    "gamescope-img",
    "wineserver",
];

/// Halved slices and preemption delay, so a waking task waits less behind anything; more sleep
/// credit and lower thresholds put more wakers in the fast tiers. The cost is more context
/// switches. Rails: the slice at most 2 ms, preemption at most 1 ms, the batch slice at most
/// auto's 20 ms, whatever the loop measures.
const LOW_LATENCY: Preset = Preset {
    scale: [
        HALF,
        HALF,
        THREE_HALVES,
        HALF,
        HALF,
        THREE_QUARTERS,
        THREE_QUARTERS,
    ],
    rails: RAILS
        .narrow(Knob::Slice, 250 * US, 2 * MS)
        .narrow(Knob::Preempt, 100 * US, MS)
        .narrow(Knob::BatchSlice, 2 * MS, 20 * MS)
        .narrow(Knob::LatCriHigh, 8, 32)
        .narrow(Knob::LatCriLow, 1, 8),
    compositors: &[],
    boost_games: false,
    pack: false,
};

/// Fewer wakeups of idle cores and fewer switches: doubled slices and preemption delay, and L2
/// affinity fixed STRONG, so a waking task takes its own CPU or an idle L2 sibling (an SMT
/// sibling of a core already awake) before any idle CPU elsewhere; with neither idle, a task
/// (compositors and games aside) queues behind its own CPU's non-BATCH runner (packing) instead
/// of waking an idle core. The loop may lengthen slices but not shorten them below auto's defaults.
const POWER_SAVE: Preset = Preset {
    scale: [TWICE, TWICE, ONE, TWICE, TWICE, ONE, ONE],
    rails: RAILS
        .narrow(Knob::Slice, MS, 8 * MS)
        .narrow(Knob::Preempt, MS, 8 * MS)
        .narrow(Knob::BatchSlice, 20 * MS, 80 * MS)
        .narrow(Knob::BurstSlice, MS, 4 * MS)
        .fix_affinity(AffinityMode::Strong),
    compositors: &[],
    boost_games: false,
    pack: true,
};

/// Throughput: doubled batch slices and preemption delay (BATCH keeps its CPU and cache longer),
/// half the sleep credit and 1.5x the thresholds (fewer tasks jump the queue or preempt). The
/// interactive slice stays: a request handler's latency still counts. Rails: the batch slice
/// never below 20 ms nor preemption below 1 ms, thresholds never below auto's defaults.
const SERVER: Preset = Preset {
    scale: [ONE, TWICE, HALF, TWICE, ONE, THREE_HALVES, THREE_HALVES],
    rails: RAILS
        .narrow(Knob::Preempt, MS, 8 * MS)
        .narrow(Knob::LagScale, 1, 4)
        .narrow(Knob::BatchSlice, 20 * MS, 80 * MS)
        .narrow(Knob::LatCriHigh, 32, 256)
        .narrow(Knob::LatCriLow, 8, 64),
    compositors: &[],
    boost_games: false,
    pack: false,
};

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Auto,
        Mode::Gaming,
        Mode::LowLatency,
        Mode::PowerSave,
        Mode::Server,
    ];

    /// The command line's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Gaming => "gaming",
            Mode::LowLatency => "lowlatency",
            Mode::PowerSave => "powersave",
            Mode::Server => "server",
        }
    }

    pub fn preset(self) -> &'static Preset {
        match self {
            Mode::Auto => &AUTO,
            Mode::Gaming => &GAMING,
            Mode::LowLatency => &LOW_LATENCY,
            Mode::PowerSave => &POWER_SAVE,
            Mode::Server => &SERVER,
        }
    }

    pub fn rails(self) -> &'static Rails {
        &self.preset().rails
    }

    /// `base` times the mode's factors, the fixed affinity applied; not yet clamped.
    pub fn shape(self, base: TuningKnobs) -> TuningKnobs {
        let p = self.preset();
        let mut k = base;
        for knob in Knob::ALL {
            knob.set(&mut k, p.scale[knob as usize].of(knob.get(&base)));
        }
        if let Some(a) = p.rails.affinity {
            k.affinity_mode = a as u64;
        }
        k.pack = u64::from(p.pack);
        k
    }

    /// The knobs written at attach: all BPF-only mode ever runs with, and what the adaptive
    /// loop starts from until its first tick.
    pub fn knobs(self) -> TuningKnobs {
        self.rails().enforce(self.shape(TuningKnobs::defaults()))
    }

    /// The baseline the experts scale this tick.
    pub fn baseline(self, r: Regime, tau_ns: u64) -> TuningKnobs {
        self.shape(scaled_regime_knobs(r, tau_ns))
    }

    /// Parses `--mode`. scx_loader's spellings (LowLatency, PowerSave) and dashes are accepted;
    /// anything else gets the list, and a value scx_bpfland's `-m` took gets told what `-m` is
    /// here, since an SCX_FLAGS written for scx_bpfland is the likely source.
    pub fn parse(s: &str) -> Result<Mode, String> {
        let norm: String = s
            .chars()
            .filter(|c| !matches!(c, '-' | '_'))
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(m) = Mode::ALL.into_iter().find(|m| m.name() == norm) {
            return Ok(m);
        }
        let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
        let list = names.join(", ");
        let cpu_domain = ["performance", "turbo", "all", "none"].contains(&norm.as_str())
            || norm.starts_with("0x")
            || (!norm.is_empty() && norm.chars().all(|c| c.is_ascii_digit() || c == ','));
        if cpu_domain {
            return Err(format!(
                "{s:?} is a CPU domain of scx_bpfland's -m/--primary-domain; here -m is --mode, \
                 one of {list} (every CPU is used; for what \"performance\" was for, try -m gaming \
                 or -m lowlatency)"
            ));
        }
        Err(format!("unknown mode {s:?}; the modes are {list}"))
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
#[path = "mode_tests.rs"]
mod tests;
