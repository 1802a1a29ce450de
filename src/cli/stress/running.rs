// SPDX-License-Identifier: GPL-2.0-only
//! Starting, timing and stopping a set of stress workers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow, bail};

use super::config::StressConfig;
use super::report::{StressReport, WorkerReport};
use super::worker::{Progress, work};
use crate::cli::clock::{now_ns, sleep_until};
use crate::cli::thread;

/// How often `measure_until` looks at the stop flag and the clock.
const POLL_NS: u64 = 20_000_000;

/// Holds every worker until all are set up, so they start together and their iteration counts
/// compare. A condvar rather than a `Barrier`: a failed spawn must still be able to release the
/// workers already waiting.
#[derive(Default)]
struct StartGate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl StartGate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Workers that are running. Dropping it stops and joins them, so a failing test cannot leave
/// spinning threads behind.
pub struct Running {
    cfg: StressConfig,
    stop: Arc<AtomicBool>,
    handles: Vec<(Option<usize>, JoinHandle<Progress>)>,
    started_ns: u64,
}

/// Starts the workers and returns once every one is set up (pinned, niced) and spinning. Any
/// setup failure stops the ones already started and is returned.
pub fn start(cfg: &StressConfig) -> Result<Running> {
    cfg.validate()?;
    let cpus = if cfg.pin {
        thread::allowed_cpus().context("reading the CPU affinity")?
    } else {
        Vec::new()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let gate = Arc::new(StartGate::default());
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let mut running = Running {
        cfg: cfg.clone(),
        stop: stop.clone(),
        handles: Vec::with_capacity(cfg.workers),
        started_ns: 0,
    };
    let mut failure = None;
    for i in 0..cfg.workers {
        let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
        let (stop, gate, ready) = (stop.clone(), gate.clone(), ready_tx.clone());
        let (nice, load) = (cfg.nice, cfg.load);
        let name = cfg.name.clone().unwrap_or_else(|| format!("stress{i}"));
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let setup = setup(cpu, nice);
            let ok = setup.is_ok();
            let _ = ready.send(setup);
            gate.wait();
            if ok {
                work(load, &stop, i as u64)
            } else {
                Progress::default()
            }
        });
        match spawned {
            Ok(h) => running.handles.push((cpu, h)),
            Err(e) => {
                failure = Some(anyhow!(e).context(format!("spawning stress worker {i}")));
                break;
            }
        }
    }
    drop(ready_tx);
    if failure.is_none() {
        for _ in 0..running.handles.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    failure = Some(anyhow!(e));
                    break;
                }
                Err(_) => {
                    failure = Some(anyhow!("a stress worker exited during setup"));
                    break;
                }
            }
        }
    }
    if let Some(e) = failure {
        stop.store(true, Ordering::Relaxed);
        gate.open();
        drop(running);
        return Err(e);
    }
    running.started_ns = now_ns();
    gate.open();
    Ok(running)
}

fn setup(cpu: Option<usize>, nice: Option<i32>) -> Result<(), String> {
    if let Some(c) = cpu {
        thread::pin_to(c).map_err(|e| format!("pinning a stress worker to CPU {c}: {e}"))?;
    }
    if let Some(n) = nice {
        thread::set_nice(n).map_err(|e| {
            format!("setting nice {n} on a stress worker: {e} (a lower nice needs CAP_SYS_NICE)")
        })?;
    }
    Ok(())
}

impl Running {
    /// Nanoseconds since the workers were released.
    pub fn elapsed_ns(&self) -> u64 {
        now_ns() - self.started_ns
    }

    /// Stops and joins the workers and reports what each did.
    pub fn finish(self) -> Result<StressReport> {
        self.finish_as(false)
    }

    fn finish_as(mut self, interrupted: bool) -> Result<StressReport> {
        self.stop.store(true, Ordering::Relaxed);
        let elapsed_ns = self.elapsed_ns();
        let mut workers = Vec::with_capacity(self.handles.len());
        let mut panicked = 0;
        for (index, (cpu, h)) in std::mem::take(&mut self.handles).into_iter().enumerate() {
            match h.join() {
                Ok(p) => workers.push(WorkerReport {
                    index,
                    cpu,
                    iterations: p.iterations,
                    worst_gap_ns: p.worst_gap_ns,
                }),
                Err(_) => panicked += 1,
            }
        }
        if panicked > 0 {
            bail!("{panicked} stress worker(s) panicked");
        }
        Ok(StressReport::new(
            &self.cfg,
            elapsed_ns,
            interrupted,
            workers,
        ))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for (_, h) in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Runs the load for its duration on fresh threads and reports. Needs a duration; use `start`
/// and `Running::finish` to bracket something else, or `measure_until` to stop on a flag.
pub fn measure(cfg: &StressConfig) -> Result<StressReport> {
    if cfg.duration_ns.is_none() {
        bail!("stress::measure needs a duration; use start()/finish() or measure_until()");
    }
    measure_until(cfg, &AtomicBool::new(false))
}

/// Runs the load until its duration (if any) has passed or `stop` becomes true; the report says
/// which (`interrupted`). Installs no signal handler.
pub fn measure_until(cfg: &StressConfig, stop: &AtomicBool) -> Result<StressReport> {
    let running = start(cfg)?;
    let end = cfg.duration_ns.map(|d| running.started_ns + d);
    let interrupted = loop {
        if stop.load(Ordering::Relaxed) {
            break true;
        }
        let now = now_ns();
        if end.is_some_and(|e| now >= e) {
            break false;
        }
        let wake = end.map_or(now + POLL_NS, |e| e.min(now + POLL_NS));
        sleep_until(wake).context("clock_nanosleep")?;
    };
    running.finish_as(interrupted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::stress::Load;

    #[test]
    fn two_workers_for_200ms_both_progress() {
        let mut cfg = StressConfig::new(2);
        cfg.duration_ns = Some(200_000_000);
        let r = measure(&cfg).unwrap();
        assert_eq!(r.workers.len(), 2);
        for w in &r.workers {
            assert!(w.iterations > 0, "worker {} made no progress", w.index);
            assert!(w.worst_gap_ns > 0);
        }
        assert!(!r.interrupted);
        assert!(r.elapsed_ns >= 200_000_000);
    }

    #[test]
    fn pinned_long_runners_and_duty_cycle_progress() {
        let mut cfg = StressConfig::new(2);
        cfg.pin = true;
        cfg.load = Load::LongRunner;
        cfg.name = Some("cli-stress-test".into());
        let running = start(&cfg).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let r = running.finish().unwrap();
        let cpus = thread::allowed_cpus().unwrap();
        for w in &r.workers {
            assert!(w.iterations > 0);
            assert_eq!(w.cpu, Some(cpus[w.index % cpus.len()]));
        }

        let mut cfg = StressConfig::new(1);
        cfg.duration_ns = Some(160_000_000);
        cfg.load = Load::DutyCycle {
            run_ns: 1_000_000,
            sleep_ns: 50_000_000,
        };
        let r = measure(&cfg).unwrap();
        assert!(r.workers[0].iterations > 0);
        // At least two 50 ms sleeps happened; an intended sleep is not a gap.
        assert!(r.workers[0].worst_gap_ns < 50_000_000, "{r:?}");
    }

    #[test]
    fn a_raised_stop_flag_interrupts_and_measure_needs_a_duration() {
        let r = measure_until(&StressConfig::new(1), &AtomicBool::new(true)).unwrap();
        assert!(r.interrupted);
        assert_eq!(r.workers.len(), 1);
        assert!(measure(&StressConfig::new(1)).is_err());
    }
}
