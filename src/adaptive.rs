// SPDX-License-Identifier: GPL-2.0-only
//! The 1 Hz control loop: read BPF's counters and histograms, run the regime detector and the MWU
//! tuner, write the knobs back, feed the process database, print the telemetry line. One thread,
//! no locks: BPF only ever sees whole knob structs written by this loop.

use crate::autogroup::{self, Reading, Reaper};
use crate::autopower::{self, Watcher};
use crate::bpf_intf::{CgCtx, CommKey};
use crate::cgroup_stats::{CgroupShares, PathCache};
use crate::compositor;
use crate::coop;
use crate::coop_learn::{self, Evidence, NameMirror, Tracker, Verdict};
use crate::cpustat::{self, CpuTimes};
use crate::games::{self, Boost};
use crate::procdb::{self, Migration, Observation, ProcDb, SaveReport, WarmMirror};
use crate::scheduler::Scheduler;
use crate::stats::{self, PandemoniumMetrics, Publisher, Sample};
use crate::telemetry::{self, Extra, Snapshot};
use crate::tuning::{Mode, TickContext, TickInput, Tuner};
use crate::watchdog::Heartbeat;
use anyhow::Result;
use log::{debug, info, log, warn};
use std::path::Path;
use std::path::PathBuf;
use std::time::Instant;

pub struct Controller {
    adaptive: bool,
    verbose: bool,
    tuner: Tuner,
    db: Option<(ProcDb, PathBuf)>,
    save_report: SaveReport,
    warm: WarmMirror,
    prev: Snapshot,
    prev_at: Instant,
    cpu_stat: cpustat::Reader,
    cpu_prev: Option<CpuTimes>,
    heartbeat: Option<Heartbeat>,
    publisher: Option<Publisher>,
    /// The statistics' per-cgroup CPU shares (read only while there is a publisher).
    cgroups: CgroupShares,
    /// Autogroups' pseudo-groups that have stayed idle (src/autogroup.rs).
    autogroups: Reaper,
    /// Gaming mode only: the game scan's thread, and what BPF's map holds of its findings.
    games: Option<(games::Watcher, Boost)>,
    /// `--autopower` only: the system's power profile, read on its own thread.
    power: Option<Watcher>,
    /// `--coop-learn` only.
    coop: Option<CoopLearning>,
}

/// `--coop-learn`'s state in the loop (src/coop_learn.rs).
struct CoopLearning {
    tracker: Tracker,
    names: NameMirror,
    forced: Vec<CommKey>,
}

impl Controller {
    /// In adaptive mode also loads the process database; a bad file is reported and set aside.
    /// The loop tunes around `mode`'s preset.
    pub fn new(adaptive: bool, verbose: bool, mode: Mode) -> Controller {
        let db = adaptive.then(procdb::default_path).flatten().map(|path| {
            migrate_legacy(&path);
            let (db, outcome) = ProcDb::load(&path, procdb::DEFAULT_CAPACITY);
            if outcome.is_warning() {
                warn!("procdb {}: {outcome}", path.display());
            } else {
                info!("procdb {}: {outcome}", path.display());
            }
            (db, path)
        });
        let mut cpu_stat = cpustat::Reader::new();
        Controller {
            adaptive,
            verbose,
            tuner: Tuner::with_mode(mode),
            db,
            save_report: SaveReport::default(),
            warm: WarmMirror::default(),
            prev: Snapshot::default(),
            prev_at: Instant::now(),
            cpu_prev: cpu_stat.read(),
            cpu_stat,
            heartbeat: None,
            publisher: None,
            cgroups: CgroupShares::new(PathCache::live()),
            autogroups: Reaper::default(),
            games: mode.preset().boost_games.then(spawn_game_scan).flatten(),
            power: None,
            coop: None,
        }
    }

    /// `--coop-learn`: from the next tick on, cooperation is recognised and learned; `forced`
    /// are the `--coop` names, which keep their own entries in BPF's map.
    pub fn learn_coop(&mut self, forced: &[String]) {
        self.coop = Some(CoopLearning {
            tracker: Tracker::default(),
            names: NameMirror::default(),
            forced: forced.iter().map(|n| compositor::comm_key(n)).collect(),
        });
    }

    /// `--autopower`: from the next tick on, the mode follows the power profile `w` reads.
    pub fn follow_power(&mut self, w: Watcher) {
        self.power = Some(w);
    }

    /// The mode in force: the one asked for, or what `--autopower` switched to.
    pub fn mode(&self) -> Mode {
        self.tuner.mode()
    }

    /// Every tick also hands a statistics sample to `p` (the stats server).
    pub fn publish_to(&mut self, p: Publisher) {
        self.publisher = Some(p);
    }

    /// A fresh BPF instance starts its counters at zero.
    pub fn attached(&mut self, heartbeat: Option<Heartbeat>) {
        self.prev = Snapshot::default();
        self.prev_at = Instant::now();
        self.heartbeat = heartbeat;
        self.warm.reset();
        if let Some(c) = &mut self.coop {
            c.names.reset();
            c.tracker = Tracker::default();
        }
        self.cgroups.reset();
        self.autogroups.reset();
        if let Some((_, boost)) = &mut self.games {
            boost.reset();
        }
    }

    pub fn tick(&mut self, sched: &mut Scheduler) -> Result<()> {
        if let Some(hb) = &self.heartbeat {
            hb.beat();
        }
        self.follow_power_profile(sched)?;

        let (codel, nr_codel_stalls) = sched.codel();
        let cur = Snapshot {
            stats: sched.read_stats()?,
            hist: sched.read_hist()?,
            codel,
            nr_codel_stalls,
        };
        let secs = self.prev_at.elapsed().as_secs_f64();
        let longrun = sched.longrun();
        let mut extra = Extra::default();

        if self.adaptive {
            let ctx = TickContext {
                longrun,
                nr_cpus: sched.layout.online.len() as u32,
                tau_ns: sched.layout.tau_ns,
            };
            let mut input = TickInput::from_counters(
                (&self.prev.stats, &self.prev.hist),
                (&cur.stats, &cur.hist),
                secs,
                ctx,
            );
            let cpu_now = self.cpu_stat.read();
            if let (Some(a), Some(b)) = (self.cpu_prev, cpu_now)
                && let Some(idle) = cpustat::idle_pct(a, b)
            {
                input.idle_pct = idle;
            }
            self.cpu_prev = cpu_now;
            let out = self.tuner.tick(&input);
            sched.write_knobs(&out.knobs)?;
            let label = out.regime.label();
            extra.regime = Some(if longrun {
                format!("{label}+LONGRUN")
            } else {
                label.to_string()
            });
            extra.sleep_io_pct = out.io_pct.map(|v| v.round() as u64);
            self.learn(sched)?;
            if let Some((db, _)) = &self.db {
                extra.procdb = Some((db.len(), db.confident_count()));
            }
        } else if longrun {
            extra.regime = Some("LONGRUN".into());
        }
        self.boost_games(sched);
        let groups = sched.read_cgroups();
        self.follow_autogroups(sched, groups.as_deref().unwrap_or_default());
        let knobs = sched.read_knobs()?;
        let topo = sched.layout.params;
        extra.sojourn_ns = Some((sched.batch_age_ns(), topo.overflow_rescue_ns));
        extra.codel_target_ns = Some(crate::codel::target(codel.x, &topo));
        if let Some(p) = &self.publisher {
            // A failed read costs only this field, and keeps the baseline: the next interval
            // then runs from the last good reading.
            let online = sched.layout.online.len();
            let cgroup_cpu_pct = match &groups {
                Ok(g) => {
                    let r: Vec<(u64, u64)> = g.iter().map(|(id, c)| (*id, c.runtime_ns)).collect();
                    self.cgroups.sample(&r, Instant::now(), online)
                }
                Err(e) => {
                    debug!("statistics: per-cgroup CPU time: {e:#}");
                    Default::default()
                }
            };
            p.publish(PandemoniumMetrics::of(&Sample {
                at_ms: stats::monotonic_ms(),
                prev: &self.prev,
                cur: &cur,
                knobs,
                topo,
                tau_ns: sched.layout.tau_ns,
                longrun,
                mode: self.tuner.mode(),
                adaptive: self.adaptive.then(|| {
                    let regime = extra.regime.clone().unwrap_or_default();
                    (regime, *self.tuner.weights())
                }),
                cgroup_cpu_pct,
            }));
        }

        if self.verbose {
            println!("{}", telemetry::line(&self.prev, &cur, secs, &extra));
        }
        self.prev = cur;
        self.prev_at = Instant::now();
        Ok(())
    }

    /// Switches the mode when the power profile asks for another. The adaptive loop writes the
    /// new mode's knobs in this same tick; BPF-only mode has no loop, so they are written here.
    fn follow_power_profile(&mut self, sched: &Scheduler) -> Result<()> {
        let Some(p) = self.power.as_ref().and_then(Watcher::changed) else {
            return Ok(());
        };
        let s = autopower::on_profile(p, self.tuner.mode());
        info!("{}", s.line);
        if s.mode != self.tuner.mode() {
            self.tuner.set_mode(s.mode);
            if !self.adaptive {
                sched.write_knobs(&s.mode.knobs())?;
            }
        }
        Ok(())
    }

    /// Passes the autogroup sysctl on to BPF and drops the pseudo-groups left idle.
    fn follow_autogroups(&mut self, sched: &mut Scheduler, groups: &[(u64, CgCtx)]) {
        sched.set_autogroups(autogroup::sysctl_on());
        let readings: Vec<Reading> = groups
            .iter()
            .filter(|(id, _)| autogroup::is_key(*id))
            .map(|(id, c)| Reading {
                id: *id,
                runtime_ns: c.runtime_ns,
                runnable: c.runnable_weight != 0,
            })
            .collect();
        sched.forget_cgroups(&self.autogroups.idle(&readings));
    }

    fn learn(&mut self, sched: &Scheduler) -> Result<()> {
        let Some((db, path)) = &mut self.db else {
            return Ok(());
        };
        for (k, e) in sched.read_profiles()? {
            if let Some(o) = Observation::from_map(&k, &e) {
                db.observe(&o);
            }
        }
        if let Some(c) = &mut self.coop {
            learn_coop(c, db, sched)?;
        }
        let delta = self.warm.delta(&db.confident());
        if !delta.is_empty() {
            if let Err(e) = sched.write_warm(&delta) {
                self.warm.failed(&delta);
                return Err(e);
            }
            self.warm.applied(&delta);
        }
        if let Some(r) = db.save_if_due(path, Instant::now())
            && let Some((level, text)) = self.save_report.line(path, db.len(), &r, false)
        {
            log!(level, "{text}");
        }
        Ok(())
    }

    /// Gaming mode: what the scan's thread found since the last tick goes into BPF's map. A
    /// failed map write is a warning: the game then runs as its behavior classifies it.
    fn boost_games(&mut self, sched: &Scheduler) {
        let Some((watcher, boost)) = &mut self.games else {
            return;
        };
        for c in watcher.changes() {
            boost.apply(c);
        }
        let alive = |pid: u32| Path::new("/proc").join(pid.to_string()).exists();
        for (level, line) in boost.sync(sched, alive) {
            log!(level, "{line}");
        }
    }

    /// Saves the process database on the way out.
    pub fn finish(&mut self) {
        if let Some((db, path)) = &mut self.db
            && db.is_dirty()
        {
            let r = db.save(path);
            if let Some((level, text)) = self.save_report.line(path, db.len(), &r, true) {
                log!(level, "{text}");
            }
        }
    }
}

/// One second of `--coop-learn`: verdicts into the procdb, withdrawals into BPF, and the learned
/// names into BPF's `coop_comms`.
fn learn_coop(c: &mut CoopLearning, db: &mut ProcDb, sched: &Scheduler) -> Result<()> {
    // A name counts once a second, however many of its processes showed the behaviour: the
    // streak is of seconds, and one second can be start-up alone.
    let mut showed: Vec<(CommKey, u32, Evidence)> = Vec::new();
    for v in c.tracker.window(&sched.read_coop_procs()?) {
        match v {
            Verdict::Showed(tgid, how) => {
                if let Some(k) = coop_learn::comm_of(tgid)
                    && !showed.iter().any(|(s, _, _)| *s == k)
                {
                    showed.push((k, tgid, how));
                }
            }
            Verdict::Withdraw(tgid) => {
                sched.forget_coop_proc(tgid);
                // Gone from /proc: it exited, which says nothing against its name.
                if let Some(k) = coop_learn::comm_of(tgid) {
                    db.observe_coop(&k.comm, false);
                    info!(
                        "coop-learn: pid {tgid} ({:?}) stopped waiting on its threads; \
                         treatment withdrawn, name unlearned",
                        name_of(&k)
                    );
                }
            }
        }
    }
    for (k, tgid, how) in showed {
        let was = db.get(&k.comm).is_some_and(|p| p.coop);
        db.observe_coop(&k.comm, true);
        if !was && db.get(&k.comm).is_some_and(|p| p.coop) {
            info!(
                "coop-learn: learned {:?} (pid {tgid}) as a cooperative group ({})",
                name_of(&k),
                match how {
                    Evidence::Mates => "its threads wake each other or yield",
                    Evidence::Corun => "its threads run at once and do not sleep",
                }
            );
        }
    }
    let room = coop::MAP_ENTRIES.saturating_sub(c.forced.len());
    let d = c.names.delta(&db.coop_names(), &c.forced, room);
    if !d.is_empty() {
        sched.write_coop_learned(&d)?;
        c.names.applied(&d);
        for k in &d.put {
            info!("coop-learn: recognising {:?} by behaviour", name_of(k));
        }
        for k in &d.remove {
            info!("coop-learn: no longer recognising {:?}", name_of(k));
        }
    }
    Ok(())
}

fn name_of(k: &CommKey) -> String {
    let end = k.comm.iter().position(|&b| b == 0).unwrap_or(k.comm.len());
    String::from_utf8_lossy(&k.comm[..end]).into_owned()
}

/// The game scan's thread; without it gaming mode runs on, without boosting games.
fn spawn_game_scan() -> Option<(games::Watcher, Boost)> {
    match games::Watcher::spawn() {
        Ok(w) => Some((w, Boost::default())),
        Err(e) => {
            warn!("gaming: {e:#}: games are not boosted");
            None
        }
    }
}

/// Root's database used to live in root's cache, which the unit's ProtectHome= makes read-only.
fn migrate_legacy(path: &Path) {
    let Some(old) = procdb::legacy_path() else {
        return;
    };
    match procdb::migrate(path, &old) {
        Migration::Nothing => {}
        m if m.is_warning() => warn!("procdb {}: {m}", path.display()),
        m => info!("procdb {}: {m}", path.display()),
    }
}
