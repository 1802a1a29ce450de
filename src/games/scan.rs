// SPDX-License-Identifier: GPL-2.0-only
//! One pass over `/proc`: which processes belong to a game. A process is judged once per exec
//! (its environment and command line only change there), and a pass reads no more than
//! [`Limits`] allow; what is left waits for the next pass, oldest first.

use super::ids::{self, REAPER_COMM};
use super::proc_stat::{self, STAT_BYTES, Stat};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// How much one pass may read besides the stat lines.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Of one environment. Linux lets a process have megabytes; a desktop's has a few KiB, a
    /// Proton game's tens. A game id past the cap is not seen (Steam's reaper still is).
    pub environ_bytes: u64,
    /// Of one reaper's command line: the app id comes before the game's own arguments.
    pub cmdline_bytes: u64,
    /// environ and cmdline reads in one pass.
    pub reads_per_pass: usize,
    /// Bytes those reads return in one pass (the last read may pass it by one cap).
    pub bytes_per_pass: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            environ_bytes: 128 << 10,
            cmdline_bytes: 4 << 10,
            reads_per_pass: 128,
            bytes_per_pass: 4 << 20,
        }
    }
}

/// How far up a parent chain a reaper is looked for. A snapshot of `/proc` is not atomic, and a
/// reused pid could close a loop.
const MAX_DEPTH: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Not judged yet (a pass ran out of budget).
    Pending,
    Plain,
    /// Its environment names this game.
    Game(u64),
    /// Steam's reaper for this app: everything below it is the game's.
    Reaper(u64),
}

/// One exec of one process: a new exec is judged again, a rename (prctl PR_SET_NAME) is not.
/// Where the kernel hides the exec's addresses (another user's process, without
/// CAP_SYS_PTRACE) the comm stands in: the environment is unreadable there anyway, and a
/// process that execs Steam's reaper takes the name `reaper`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ExecKey {
    start: u64,
    exec: [u64; 4],
    comm: Option<Vec<u8>>,
}

impl ExecKey {
    fn of(st: &Stat) -> ExecKey {
        ExecKey {
            start: st.start,
            exec: st.exec,
            comm: (!st.exec_known()).then(|| st.comm.clone()),
        }
    }
}

struct Known {
    key: ExecKey,
    verdict: Verdict,
    /// The pass that first saw this exec: the queue's order.
    since: u64,
}

/// Which signal found a game process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Environment,
    /// Below Steam's reaper with this pid.
    Reaper(u32),
}

/// A game process found by [`Scanner::scan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameProc {
    pub pid: u32,
    pub start: u64,
    /// Escaped ([`ids::escape`]): safe to log.
    pub comm: String,
    pub game: u64,
    pub via: Via,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<GameProc>,
    /// Game pids that exited, or whose pid now belongs to another process or exec.
    pub removed: Vec<u32>,
    /// For the log, once each: a denied read.
    pub warnings: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.warnings.is_empty()
    }
}

/// Reads at most `cap` bytes of a file (tests count or refuse reads).
pub type Reader = fn(&Path, u64) -> io::Result<Vec<u8>>;

struct Budget {
    reads: usize,
    bytes: u64,
}

pub struct Scanner {
    limits: Limits,
    read_file: Reader,
    known: HashMap<u32, Known>,
    games: BTreeMap<u32, GameProc>,
    pass: u64,
    denied_said: bool,
    reads: u64,
}

impl Scanner {
    pub fn new(limits: Limits) -> Scanner {
        Scanner::with_reader(limits, proc_stat::read_capped)
    }

    pub fn with_reader(limits: Limits, read_file: Reader) -> Scanner {
        Scanner {
            limits,
            read_file,
            known: HashMap::new(),
            games: BTreeMap::new(),
            pass: 0,
            denied_said: false,
            reads: 0,
        }
    }

    /// The game processes found by the last pass.
    pub fn boosted(&self) -> usize {
        self.games.len()
    }

    /// environ and cmdline reads since the start.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Processes still waiting to be judged.
    pub fn pending(&self) -> usize {
        self.known
            .values()
            .filter(|k| k.verdict == Verdict::Pending)
            .count()
    }

    /// Lists `proc_root` (normally `/proc`): game processes new since the last pass, and those
    /// gone. A process that exits between the listing and the reads is skipped; an unreadable
    /// `proc_root` changes nothing.
    pub fn scan(&mut self, proc_root: &Path) -> Changes {
        let mut changes = Changes::default();
        let Some(procs) = list(proc_root) else {
            return changes;
        };
        self.pass += 1;
        self.known.retain(|pid, _| procs.contains_key(pid));
        for (&pid, st) in &procs {
            let key = ExecKey::of(st);
            if self.known.get(&pid).is_none_or(|k| k.key != key) {
                let since = self.pass;
                let verdict = Verdict::Pending;
                self.known.insert(
                    pid,
                    Known {
                        key,
                        verdict,
                        since,
                    },
                );
            }
        }
        self.judge_pending(proc_root, &procs, &mut changes.warnings);
        let now = self.games_now(&procs);
        let same = |a: &GameProc, b: &GameProc| (a.start, a.game) == (b.start, b.game);
        for (pid, old) in &self.games {
            if now.get(pid).is_none_or(|g| !same(g, old)) {
                changes.removed.push(*pid);
            }
        }
        for (pid, g) in &now {
            if self.games.get(pid).is_none_or(|old| !same(g, old)) {
                changes.added.push(g.clone());
            }
        }
        self.games = now;
        changes
    }

    /// Reapers first (one finds a whole game without reading anything else), then the
    /// longest waiting.
    fn judge_pending(&mut self, root: &Path, procs: &HashMap<u32, Stat>, said: &mut Vec<String>) {
        let mut queue: Vec<(bool, u64, u32)> = self
            .known
            .iter()
            .filter(|(_, k)| k.verdict == Verdict::Pending)
            .map(|(&pid, k)| (procs[&pid].comm != REAPER_COMM, k.since, pid))
            .collect();
        queue.sort_unstable();
        let mut budget = Budget {
            reads: self.limits.reads_per_pass,
            bytes: self.limits.bytes_per_pass,
        };
        for (_, _, pid) in queue {
            if budget.reads == 0 || budget.bytes == 0 {
                break;
            }
            let verdict = self.judge(&root.join(pid.to_string()), &procs[&pid], &mut budget, said);
            if let Some(k) = self.known.get_mut(&pid) {
                k.verdict = verdict;
            }
        }
    }

    fn judge(
        &mut self,
        dir: &Path,
        st: &Stat,
        budget: &mut Budget,
        said: &mut Vec<String>,
    ) -> Verdict {
        if st.comm == REAPER_COMM {
            let cap = self.limits.cmdline_bytes;
            if let Ok(cmdline) = self.read(&dir.join("cmdline"), cap, budget)
                && let Some(id) = ids::reaper_id(ids::whole_entries(&cmdline, cap))
            {
                return Verdict::Reaper(id);
            }
        }
        let cap = self.limits.environ_bytes;
        match self.read(&dir.join("environ"), cap, budget) {
            Ok(env) => {
                ids::environ_id(ids::whole_entries(&env, cap)).map_or(Verdict::Plain, Verdict::Game)
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                if !self.denied_said {
                    self.denied_said = true;
                    said.push(denied(dir, &e));
                }
                Verdict::Plain
            }
            // Gone, or a zombie.
            Err(_) => Verdict::Plain,
        }
    }

    fn read(&mut self, path: &Path, cap: u64, budget: &mut Budget) -> io::Result<Vec<u8>> {
        self.reads += 1;
        budget.reads = budget.reads.saturating_sub(1);
        let got = (self.read_file)(path, cap)?;
        budget.bytes = budget.bytes.saturating_sub(got.len() as u64);
        Ok(got)
    }

    fn games_now(&self, procs: &HashMap<u32, Stat>) -> BTreeMap<u32, GameProc> {
        let mut memo = HashMap::new();
        let mut out = BTreeMap::new();
        for (&pid, st) in procs {
            let Some(k) = self.known.get(&pid) else {
                continue;
            };
            let found = match k.verdict {
                Verdict::Game(id) => Some((id, Via::Environment)),
                _ => self
                    .reaper_above(st.ppid, procs, &mut memo)
                    .map(|(id, reaper)| (id, Via::Reaper(reaper))),
            };
            if let Some((game, via)) = found {
                let comm = ids::escape(&st.comm);
                let start = st.start;
                out.insert(
                    pid,
                    GameProc {
                        pid,
                        start,
                        comm,
                        game,
                        via,
                    },
                );
            }
        }
        out
    }

    /// The nearest Steam reaper at or above `pid`: (app id, reaper pid).
    fn reaper_above(
        &self,
        pid: u32,
        procs: &HashMap<u32, Stat>,
        memo: &mut HashMap<u32, Option<(u64, u32)>>,
    ) -> Option<(u64, u32)> {
        let mut path = Vec::new();
        let mut cur = pid;
        let found = loop {
            if let Some(&m) = memo.get(&cur) {
                break m;
            }
            let Some(st) = procs.get(&cur).filter(|_| path.len() < MAX_DEPTH) else {
                break None;
            };
            if let Some(Known {
                verdict: Verdict::Reaper(id),
                ..
            }) = self.known.get(&cur)
            {
                break Some((*id, cur));
            }
            path.push(cur);
            cur = st.ppid;
        };
        for p in path {
            memo.insert(p, found);
        }
        found
    }
}

/// The user processes under `root` (kernel threads have no environment); `None` when `root`
/// cannot be listed.
fn list(root: &Path) -> Option<HashMap<u32, Stat>> {
    let entries = fs::read_dir(root).ok()?;
    Some(
        entries
            .flatten()
            .filter_map(|e| {
                let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
                let raw = proc_stat::read_capped(&e.path().join("stat"), STAT_BYTES).ok()?;
                let st = proc_stat::parse(&raw)?;
                (!st.kthread).then_some((pid, st))
            })
            .collect(),
    )
}

fn denied(dir: &Path, e: &io::Error) -> String {
    let uid = fs::metadata(dir).map_or_else(|_| "?".into(), |m| m.uid().to_string());
    format!(
        "gaming: cannot read {}/environ (uid {uid}): {e}. Another user's environment needs \
         CAP_SYS_PTRACE, which pandemonium.service and scx_loader's unit drop: games Steam starts \
         are still found through its reaper (`reaper SteamLaunch AppId=N`), a game id that only \
         an environment carries is not. Said once.",
        dir.display()
    )
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
