// SPDX-License-Identifier: GPL-2.0-only
//! The foreground game, for `--mode gaming`: the processes of a game Steam launched, every thread
//! of which BPF makes LAT_CRITICAL (the `game_tgids` map, read in `refresh_identity()`). A game's
//! threads have generic names (RenderThread, vkd3d_queue, a pool of "Worker"s) that other
//! programs use too, which is why the boost is by process and not by name as the compositor
//! list is.
//!
//! Two signals name a game's processes:
//! - **Steam's `reaper`.** Steam starts every game, native or through Proton, as
//!   `reaper SteamLaunch AppId=N -- ...`; reaper is a child subreaper, so the game's processes
//!   stay its descendants. Every process under such a reaper is the game's. This is how
//!   gamescope finds a window's app id, and it needs no privilege: `/proc/PID/stat` (the parent)
//!   and `/proc/PID/cmdline` are world-readable.
//! - **The environment.** Steam also puts `SteamGameId` and `SteamAppId` into the game's
//!   environment (umu-launcher sets them for games started outside Steam). Reading another
//!   user's `/proc/PID/environ` needs CAP_SYS_PTRACE, which `pandemonium.service` and
//!   scx_loader's unit drop: there the first denied read is logged once and the reaper alone
//!   finds games.
//!
//! The scan ([`scan::Scanner`]) runs on its own thread ([`watcher::Watcher`]), with a cap on
//! each read and on each pass's reads, so a user forking many processes with large environments
//! cannot hold up the control loop; the loop only applies what the thread found to the BPF map
//! ([`boost::Boost`]), evicting exited processes when the map is full.
//!
//! Both signals are what a process says about itself, which any user can imitate; they buy no
//! more than what a game's threads get in gaming mode (`refresh_identity()` and the class rules
//! in classify.bpf.h), and only when the administrator chose that mode.

pub mod boost;
pub mod ids;
pub mod proc_stat;
pub mod scan;
pub mod watcher;

pub use boost::{Boost, GameMap, InsertError};
pub use scan::{Changes, GameProc, Limits, Scanner, Via};
pub use watcher::Watcher;
