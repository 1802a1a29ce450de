// SPDX-License-Identifier: GPL-2.0-only
//! The foreground game, for `--mode gaming`: the processes of a game Steam launched, every thread
//! of which BPF makes LAT_CRITICAL (the `game_tgids` map, read in `refresh_identity()`).
//!
//! Steam puts `SteamGameId` (and `SteamAppId`) into the environment of every game it starts,
//! native or through Proton, and the game's children inherit it: the Wine processes, wineserver,
//! the game's own executable, its crash handler. Steam's own processes do not carry it, so the
//! client and its web helpers stay where their behavior puts them. A game's threads have generic
//! names (RenderThread, vkd3d_queue, a pool of "Worker"s) that other programs use too, which is
//! why the boost is by process and not by name as the compositor list is.
//!
//! Once a second the daemon lists `/proc` and reads the environment of each process it has not
//! seen before. A process is known by its pid and start time, so a pid the kernel hands to a new
//! process after the game's exits is judged again; one not a game's is judged again when its
//! name changes, since a launcher that puts `SteamGameId` only into the new program's
//! environment (execve's) shows its own environment between fork and exec.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;

/// Variables whose non-zero value names a game Steam launched.
pub const GAME_ENV: &[&str] = &["SteamGameId", "SteamAppId"];

/// The game id in a process's `environ` (NUL-separated `KEY=value`), if it carries one.
pub fn game_id(environ: &[u8]) -> Option<String> {
    environ.split(|&b| b == 0).find_map(|entry| {
        let text = std::str::from_utf8(entry).ok()?;
        let (key, value) = text.split_once('=')?;
        (GAME_ENV.contains(&key) && !value.is_empty() && value != "0").then(|| value.to_string())
    })
}

/// The start time (clock ticks after boot, field 22) and comm of `/proc/<pid>/stat`.
fn start_and_comm(stat: &str) -> Option<(u64, String)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let start = stat
        .get(close + 1..)?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    Some((start, comm))
}

/// A game process found by [`GameTracker::scan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameProc {
    pub pid: u32,
    pub comm: String,
    pub game: String,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<GameProc>,
    /// Boosted pids that exited (or whose pid now belongs to another process).
    pub removed: Vec<u32>,
}

/// What a scan remembers of a process.
#[derive(Debug)]
struct Known {
    start: u64,
    comm: String,
    game: bool,
}

#[derive(Debug, Default)]
pub struct GameTracker {
    known: HashMap<u32, Known>,
}

impl GameTracker {
    /// Forgets everything: a freshly loaded BPF program has an empty map to fill again.
    pub fn reset(&mut self) {
        self.known.clear();
    }

    pub fn boosted(&self) -> usize {
        self.known.values().filter(|k| k.game).count()
    }

    /// Lists `proc_root` (normally `/proc`): game processes new since the last scan, and boosted
    /// ones that are gone. A process that exits between the listing and the reads is skipped.
    pub fn scan(&mut self, proc_root: &Path) -> Changes {
        let mut changes = Changes::default();
        let mut alive = HashSet::new();
        let Ok(entries) = fs::read_dir(proc_root) else {
            return changes;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let dir = entry.path();
            let Some((start, comm)) = fs::read_to_string(dir.join("stat"))
                .ok()
                .as_deref()
                .and_then(start_and_comm)
            else {
                continue;
            };
            alive.insert(pid);
            if let Some(k) = self.known.get(&pid) {
                if k.start == start && (k.game || k.comm == comm) {
                    continue;
                }
                if k.game {
                    changes.removed.push(pid);
                }
            }
            // Kernel threads have an empty environ; a process we may not read is no game of ours.
            let game = fs::read(dir.join("environ")).ok().and_then(|e| game_id(&e));
            let known = Known {
                start,
                comm: comm.clone(),
                game: game.is_some(),
            };
            self.known.insert(pid, known);
            if let Some(game) = game {
                changes.added.push(GameProc { pid, comm, game });
            }
        }
        self.known.retain(|pid, k| {
            let keep = alive.contains(pid);
            if !keep && k.game {
                changes.removed.push(*pid);
            }
            keep
        });
        changes.added.sort_by_key(|g| g.pid);
        changes.removed.sort_unstable();
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, pid: u32, comm: &str, start: u64, environ: &[&str]) {
        let dir = root.join(pid.to_string());
        fs::create_dir_all(&dir).unwrap();
        let rest: Vec<String> = (0..18).map(|i| i.to_string()).collect();
        fs::write(
            dir.join("stat"),
            format!("{pid} ({comm}) S {} {start} 0 0\n", rest.join(" ")),
        )
        .unwrap();
        let env: Vec<u8> = environ
            .iter()
            .flat_map(|e| [e.as_bytes(), b"\0"].concat())
            .collect();
        fs::write(dir.join("environ"), env).unwrap();
    }

    #[test]
    fn steam_game_ids_mark_a_game_and_zero_or_empty_do_not() {
        assert_eq!(
            game_id(b"HOME=/root\0SteamGameId=730\0"),
            Some("730".into())
        );
        assert_eq!(game_id(b"SteamAppId=1245620\0"), Some("1245620".into()));
        assert_eq!(game_id(b"SteamAppId=0\0SteamGameId=\0"), None);
        assert_eq!(game_id(b"XSteamGameId=730\0STEAM_RUNTIME=1\0"), None);
        assert_eq!(game_id(b""), None);
    }

    #[test]
    fn stat_fields_survive_a_comm_with_spaces_and_parentheses() {
        let stat = "42 (Game (Main) x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 0";
        assert_eq!(start_and_comm(stat), Some((987654, "Game (Main) x".into())));
        assert_eq!(start_and_comm("42 (x"), None);
    }

    #[test]
    fn a_scan_reports_new_games_once_and_their_exit() {
        let root = tempfile::tempdir().unwrap();
        put(root.path(), 100, "steam", 5, &["HOME=/home/u"]);
        put(root.path(), 200, "game.exe", 9, &["SteamGameId=730"]);
        put(
            root.path(),
            201,
            "wineserver",
            9,
            &["SteamGameId=730", "WINEPREFIX=/p"],
        );
        fs::create_dir_all(root.path().join("self")).unwrap();
        let mut t = GameTracker::default();
        let first = t.scan(root.path());
        assert_eq!(
            first
                .added
                .iter()
                .map(|g| (g.pid, g.comm.as_str()))
                .collect::<Vec<_>>(),
            [(200, "game.exe"), (201, "wineserver")]
        );
        assert_eq!(first.added[0].game, "730");
        assert!(first.removed.is_empty());
        assert_eq!(t.boosted(), 2);
        assert_eq!(t.scan(root.path()), Changes::default());

        fs::remove_dir_all(root.path().join("201")).unwrap();
        let gone = t.scan(root.path());
        assert_eq!(
            gone,
            Changes {
                added: vec![],
                removed: vec![201]
            }
        );
        assert_eq!(t.boosted(), 1);
    }

    #[test]
    fn a_reused_pid_is_judged_again() {
        let root = tempfile::tempdir().unwrap();
        put(root.path(), 300, "game", 10, &["SteamGameId=42"]);
        let mut t = GameTracker::default();
        assert_eq!(t.scan(root.path()).added.len(), 1);
        // The game exited and pid 300 went to an ordinary process started later.
        put(root.path(), 300, "bash", 77, &["HOME=/root"]);
        assert_eq!(
            t.scan(root.path()),
            Changes {
                added: vec![],
                removed: vec![300]
            }
        );
        // And back to a game process: added again.
        put(root.path(), 300, "game", 90, &["SteamGameId=42"]);
        assert_eq!(t.scan(root.path()).added.len(), 1);
    }

    /// Seen between fork and exec, the child shows its launcher's environment; after the exec
    /// (a new name, the same start time) it is read again.
    #[test]
    fn a_process_seen_before_its_exec_is_judged_again_after_it() {
        let root = tempfile::tempdir().unwrap();
        put(root.path(), 500, "steam", 20, &["HOME=/home/u"]);
        let mut t = GameTracker::default();
        assert_eq!(t.scan(root.path()), Changes::default());
        put(root.path(), 500, "game.exe", 20, &["SteamGameId=730"]);
        let added = t.scan(root.path()).added;
        assert_eq!((added.len(), added[0].pid), (1, 500));
        // A game that renames itself stays boosted, reported once.
        put(root.path(), 500, "GameThread", 20, &["SteamGameId=730"]);
        assert_eq!(t.scan(root.path()), Changes::default());
        assert_eq!(t.boosted(), 1);
    }

    #[test]
    fn reset_makes_the_next_scan_report_every_game_again() {
        let root = tempfile::tempdir().unwrap();
        put(root.path(), 400, "game", 1, &["SteamAppId=99"]);
        let mut t = GameTracker::default();
        assert_eq!(t.scan(root.path()).added.len(), 1);
        t.reset();
        assert_eq!(t.scan(root.path()).added.len(), 1);
    }

    #[test]
    fn a_missing_proc_root_yields_nothing() {
        let mut t = GameTracker::default();
        assert_eq!(t.scan(Path::new("/nonexistent/proc")), Changes::default());
    }
}
