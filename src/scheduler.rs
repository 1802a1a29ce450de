// SPDX-License-Identifier: GPL-2.0-only
//! The BPF skeleton's lifecycle: open, fill rodata and maps, load, attach, run until told to stop
//! or until the kernel ends the scheduler, detach. Also the map I/O the daemon needs.

use crate::autogroup;
use crate::bpf_intf::{
    AffinityRow, COOP_FORCED, COOP_LEARNED, CgCtx, CommKey, CoopProc, Hist, LongestWait, Stats,
    TaskClassEntry, TopoParams, TuningKnobs,
};
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::cgroup_support::CgroupSupport;
use crate::codel::Oscillator;
use crate::compositor;
use crate::coop_learn::NameDelta;
use crate::games::{GameMap, InsertError};
use crate::layout::Layout;
use crate::longest_wait;
use crate::preflight;
use crate::procdb::WarmDelta;
use crate::topology::Live;
use crate::tuning::Mode;
use anyhow::{Context, Result, bail};
use bytemuck::{Pod, bytes_of};
use libbpf_rs::libbpf_sys::bpf_object_open_opts;
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, OpenMapMut, OpenObject};
use log::{info, warn};
use scx_utils::{
    ScxExitKind, UserExitInfo, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_read,
    uei_report,
};
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The largest `--exit-dump-len`. The dump buffer is a BPF array map's one value, and the
/// kernel refuses a value larger than KMALLOC_MAX_SIZE (4 MiB on x86-64 with 4 KiB pages) with
/// E2BIG: a larger request would fail only after the whole program was loaded and verified.
pub const MAX_EXIT_DUMP_LEN: u32 = 4 << 20;

pub struct Options {
    /// The mode in force at (re)attach: its knobs are written before attach, its names join the
    /// compositor list.
    pub mode: Mode,
    pub compositors: Vec<String>,
    /// `--coop` names, each once; empty: the feature is left out of the verified programs.
    pub coop: Vec<String>,
    /// `--coop-learn`: BPF counts each process's cooperation and the procdb learns the names
    /// (src/coop_learn.rs); with `coop` empty too, the feature is left out.
    pub coop_learn: bool,
    /// Bytes of the kernel's debug dump kept when the scheduler exits on an error; 0 is the
    /// kernel's default.
    pub exit_dump_len: u32,
    /// From [`crate::libbpf_opts::open_opts`].
    pub open_opts: Option<bpf_object_open_opts>,
    /// `-d/--debug`: the BPF program prints each wait longer than the overflow rescue age to the
    /// trace pipe, with its path.
    pub trace_slow: bool,
}

pub struct Scheduler<'obj> {
    skel: BpfSkel<'obj>,
    link: Option<Link>,
    pub layout: Layout,
}

const ZERO: u32 = 0;

impl<'obj> Scheduler<'obj> {
    /// Opens, configures, loads and attaches the BPF scheduler. Loading a large program under
    /// software emulation can take a minute or more; nothing here times out.
    pub fn init(open_object: &'obj mut MaybeUninit<OpenObject>, opts: &Options) -> Result<Self> {
        let layout = Layout::detect(&Live).context("detecting the CPU topology")?;
        for w in &layout.warnings {
            warn!("topology: {w}");
        }
        for line in layout.summary.lines() {
            info!("{line}");
        }

        let builder = BpfSkelBuilder::default();
        let mut skel = scx_ops_open!(builder, open_object, pandemonium_ops, opts.open_opts)?;
        let cgroups =
            CgroupSupport::detect().context("reading sched_ext_ops from the kernel's BTF")?;
        cgroups.drop_missing(skel.struct_ops.pandemonium_ops_mut());
        info!("{}", cgroups.describe());
        leave_attach_to_scx_ops_attach(&skel.maps.pandemonium_ops)?;
        // scx_ops_load! sizes the dump buffer from this.
        skel.struct_ops.pandemonium_ops_mut().exit_dump_len = opts.exit_dump_len;
        let rodata = skel
            .maps
            .rodata_data
            .as_mut()
            .context("BPF object has no rodata")?;
        rodata.nr_cpu_ids_ro = layout.nr_cpu_ids;
        rodata.nr_nodes_ro = layout.nr_nodes;
        for (slot, node) in rodata.cpu_node_ro.iter_mut().zip(&layout.cpu_node) {
            *slot = *node;
        }
        for (slot, l2) in rodata.cpu_l2_ro.iter_mut().zip(&layout.cpu_l2) {
            *slot = *l2;
        }
        rodata.hybrid_ro = u8::from(layout.hybrid);
        rodata.trace_slow_ro = u8::from(opts.trace_slow);
        rodata.coop_on_ro = u8::from(!opts.coop.is_empty() || opts.coop_learn);
        rodata.coop_learn_ro = u8::from(opts.coop_learn);
        for (slot, size) in rodata.cpu_size_ro.iter_mut().zip(&layout.cpu_size) {
            *slot = *size;
        }

        let started = Instant::now();
        info!(
            "loading BPF program ({} possible CPUs, {} online, {} node(s))",
            layout.nr_cpu_ids,
            layout.online.len(),
            layout.nr_nodes
        );
        let skel = scx_ops_load!(skel, pandemonium_ops, uei)?;
        info!(
            "BPF program loaded in {:.1} s",
            started.elapsed().as_secs_f64()
        );

        let mut sched = Scheduler {
            skel,
            link: None,
            layout,
        };
        sched.write_topology()?;
        sched.set_autogroups(autogroup::sysctl_on());
        sched.write_knobs(&opts.mode.knobs())?;
        sched.write_compositors(&compositor::names_for(
            opts.mode.preset().compositors,
            &opts.compositors,
        ))?;
        sched.write_coop(&opts.coop)?;

        let link = scx_ops_attach!(sched.skel, pandemonium_ops).map_err(|e| {
            // Preflight saw no scheduler, but another one can attach while ours loads (two
            // starts at once); the kernel then only says EBUSY. Name it as preflight would.
            match preflight::check(&preflight::System::live()) {
                Err(refusal @ preflight::Refusal::AlreadyAttached { .. }) => {
                    e.context(refusal.to_string())
                }
                _ => e,
            }
        })?;
        sched.link = Some(link);
        info!("scheduler attached");
        Ok(sched)
    }

    fn write_topology(&mut self) -> Result<()> {
        let maps = &self.skel.maps;
        update(&maps.topo_map, &ZERO, &self.layout.params)?;
        for (cpu, row) in self.layout.ranks.iter().enumerate() {
            update(&maps.affinity_rank, &(cpu as u32), row)?;
        }
        Ok(())
    }

    /// Writes the knobs whole: every field is the daemon's (topology's live in `topo_map`).
    pub fn write_knobs(&self, k: &TuningKnobs) -> Result<()> {
        update(&self.skel.maps.knobs_map, &ZERO, k)
    }

    pub fn read_knobs(&self) -> Result<TuningKnobs> {
        lookup(&self.skel.maps.knobs_map, &ZERO)
    }

    pub fn topo_params(&self) -> Result<TopoParams> {
        lookup(&self.skel.maps.topo_map, &ZERO)
    }

    pub fn affinity_row(&self, cpu: u32) -> Result<AffinityRow> {
        lookup(&self.skel.maps.affinity_rank, &cpu)
    }

    fn write_compositors(&self, names: &[String]) -> Result<()> {
        for name in names {
            let key: CommKey = compositor::comm_key(name);
            update(&self.skel.maps.compositor_map, &key, &1u8)
                .with_context(|| format!("adding compositor {name:?}"))?;
        }
        Ok(())
    }

    fn write_coop(&self, names: &[String]) -> Result<()> {
        for name in names {
            update(
                &self.skel.maps.coop_comms,
                &compositor::comm_key(name),
                &COOP_FORCED,
            )
            .with_context(|| format!("adding --coop {name:?}"))?;
        }
        Ok(())
    }

    /// Sum of the per-CPU counters since load.
    pub fn read_stats(&self) -> Result<Stats> {
        let mut total = Stats::default();
        for v in lookup_percpu::<Stats>(&self.skel.maps.stats_map)? {
            total.accumulate(&v);
        }
        Ok(total)
    }

    /// Sum of the per-CPU histograms since load (callers diff successive reads).
    pub fn read_hist(&self) -> Result<Hist> {
        let mut total = Hist::default();
        for h in lookup_percpu::<Hist>(&self.skel.maps.hist_map)? {
            for (t, row) in total.wake_lat.iter_mut().zip(h.wake_lat.iter()) {
                for (a, b) in t.iter_mut().zip(row) {
                    *a += b;
                }
            }
            for (a, b) in total.sleep.iter_mut().zip(h.sleep.iter()) {
                *a += b;
            }
        }
        Ok(total)
    }

    /// BPF's longrun flag: the batch DSQ has stayed busy past the longrun threshold.
    pub fn longrun(&self) -> bool {
        self.skel
            .maps
            .bss_data
            .as_ref()
            // SAFETY: a plain aligned u32 in the BPF-mapped bss.
            .is_some_and(|b| unsafe { std::ptr::read_volatile(&b.longrun_mode) } != 0)
    }

    /// How long node 0's batch DSQ has held work (0 when empty), from BPF's CAS-kept first-insert
    /// stamp; bpf_ktime_get_ns() is CLOCK_MONOTONIC.
    pub fn batch_age_ns(&self) -> u64 {
        let Some(b) = self.skel.maps.bss_data.as_ref() else {
            return 0;
        };
        // SAFETY: a plain aligned u64 in the BPF-mapped bss; BPF may change it at any time.
        let since = unsafe { std::ptr::read_volatile(&b.batch_dsq_since[0]) };
        if since == 0 {
            return 0;
        }
        crate::cli::clock::now_ns().saturating_sub(since)
    }

    /// The CoDel oscillator (x, v) and the stalled-interval count, from BPF's bss. CPU 0's tick
    /// writes x and v one after the other, so a read may pair a new x with an old v: fine for
    /// reporting, which is all this is for.
    pub fn codel(&self) -> (Oscillator, u64) {
        let Some(b) = self.skel.maps.bss_data.as_ref() else {
            return Default::default();
        };
        // SAFETY: plain aligned 64-bit words in the BPF-mapped bss; BPF may change them any time.
        unsafe {
            (
                Oscillator {
                    x: std::ptr::read_volatile(&b.codel_x),
                    v: std::ptr::read_volatile(&b.codel_v),
                },
                std::ptr::read_volatile(&b.nr_codel_stalls),
            )
        }
    }

    /// Mature profiles BPF has published, keyed by comm.
    pub fn read_profiles(&self) -> Result<Vec<(CommKey, TaskClassEntry)>> {
        read_all(&self.skel.maps.task_profiles)
    }

    /// Each group BPF tracks (cgroups and autogroups), by id.
    pub fn read_cgroups(&self) -> Result<Vec<(u64, CgCtx)>> {
        read_all(&self.skel.maps.cg_ctxs)
    }

    /// Drops BPF's entries for these groups; one already gone is what was wanted.
    pub fn forget_cgroups(&self, ids: &[u64]) {
        for id in ids {
            let _ = self.skel.maps.cg_ctxs.delete(bytes_of(id));
        }
    }

    /// Whether BPF charges root tasks by their autogroups (src/bpf/autogroup.bpf.h).
    pub fn set_autogroups(&mut self, on: bool) {
        if let Some(b) = self.skel.maps.bss_data.as_mut() {
            // SAFETY: a plain aligned u32 in the BPF-mapped bss, which only the daemon writes.
            unsafe { std::ptr::write_volatile(&mut b.autogroup_on, u32::from(on)) };
        }
    }

    /// `--coop-learn`: each process's evidence of cooperation, by tgid.
    pub fn read_coop_procs(&self) -> Result<Vec<(u32, CoopProc)>> {
        read_all(&self.skel.maps.coop_procs)
    }

    /// Withdraws the treatment from a process: its threads drop it at their next identity
    /// check, and it has to show its behaviour again to get it back.
    pub fn forget_coop_proc(&self, tgid: u32) {
        // Already gone (the LRU dropped it) is the wanted state.
        let _ = self.skel.maps.coop_procs.delete(bytes_of(&tgid));
    }

    /// Brings the learned names in `coop_comms` to `d` (src/coop_learn.rs's mirror).
    pub fn write_coop_learned(&self, d: &NameDelta) -> Result<()> {
        let map = &self.skel.maps.coop_comms;
        for k in &d.remove {
            let _ = map.delete(bytes_of(k));
        }
        for k in &d.put {
            update(map, k, &COOP_LEARNED)?;
        }
        Ok(())
    }

    /// Applies `d` to the warm-start map (see [`crate::procdb::WarmMirror`]).
    pub fn write_warm(&self, d: &WarmDelta) -> Result<()> {
        let map = &self.skel.maps.procdb_warm;
        for k in &d.remove {
            // Already gone is the wanted state.
            let _ = map.delete(bytes_of(k));
        }
        for (k, e) in &d.put {
            update(map, k, e)?;
        }
        Ok(())
    }

    pub fn exited(&self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// The kernel's scx_exit_kind for this scheduler (0 while it runs).
    fn exit_kind(&self) -> i32 {
        self.skel.maps.data_data.as_ref().map_or(0, |d| {
            // SAFETY: a plain aligned i32 in the BPF-mapped data section, written by the kernel.
            unsafe { std::ptr::read_volatile(&d.uei.kind) }
        })
    }

    /// Runs until `shutdown` is set or the kernel ends the scheduler; `tick` is called about once
    /// a second. Detaches and returns the kernel's exit record.
    ///
    /// The thread sleeps a whole period between ticks (one wakeup a second is most of the
    /// daemon's idle cost): whoever sets `shutdown` unparks it, and a kernel-side exit is seen on
    /// the next tick, as in the kernel's own example schedulers.
    pub fn run(
        &mut self,
        shutdown: &Arc<AtomicBool>,
        mut tick: impl FnMut(&mut Self) -> Result<()>,
    ) -> Result<UserExitInfo> {
        let period = Duration::from_secs(1);
        let mut next = Instant::now() + period;
        while !shutdown.load(Ordering::Relaxed) && !self.exited() {
            std::thread::park_timeout(next.saturating_duration_since(Instant::now()));
            let now = Instant::now();
            if now >= next {
                // After a stall (a frozen guest, SIGSTOP) resume the cadence instead of catching up.
                next = (next + period).max(now + period / 2);
                if let Err(e) = tick(self) {
                    warn!("telemetry: {e:#}");
                }
            }
        }
        // Dropping the struct_ops link detaches the scheduler; the kernel then records the exit.
        self.link.take();
        if let Some(w) = lookup::<u32, LongestWait>(&self.skel.maps.longest_wait, &ZERO)
            .ok()
            .as_ref()
            .and_then(longest_wait::describe)
        {
            info!("longest queue wait since load: {w}");
        }
        if self.exit_kind() == ScxExitKind::SysRq as i32 {
            // SysRq-S is the user asking for the default scheduler back: a deliberate detach,
            // not a failure. uei_report! would turn it into an error, and an error status makes
            // systemd's Restart=on-failure put us straight back against that wish.
            info!("the kernel disabled the scheduler on SysRq-S (a user request); exiting");
            return Ok(uei_read!(&self.skel, uei));
        }
        uei_report!(&self.skel, uei)
    }
}

/// Takes the struct_ops map out of the skeleton's automatic attach: scx_ops_attach! runs that
/// first (`skel.attach()`, for non-struct_ops programs) and then attaches the map itself
/// (`attach_struct_ops`, whose link it returns).
///
/// libbpf marks every struct_ops map for auto-attach, and `bpf_object__attach_skeleton` attaches
/// such a map into the link slot of its skeleton entry. The skeletons of libbpf-rs 0.27 give maps
/// no slot (`bpf_map_skeleton.link` stays NULL), so libbpf passed over the map with the warning
/// "map 'pandemonium_ops': BPF map skeleton link is uninitialized" on every start. Unmarked, the
/// map is passed over without a word; and should a later libbpf-rs give maps a slot, the
/// skeleton still will not attach the scheduler before scx_ops_attach! does (the kernel takes
/// one sched_ext scheduler: the second attach would fail with EBUSY).
/// The foreground game's processes (gaming mode): BPF boosts a pid's threads from their next
/// identity check.
impl GameMap for Scheduler<'_> {
    fn insert(&self, pid: u32) -> Result<(), InsertError> {
        let map = &self.skel.maps.game_tgids;
        map.update(bytes_of(&pid), bytes_of(&1u8), MapFlags::ANY)
            .map_err(|e| match e.kind() {
                libbpf_rs::ErrorKind::TooBig => InsertError::Full,
                _ => {
                    InsertError::Other(anyhow::Error::new(e).context("updating BPF map game_tgids"))
                }
            })
    }

    fn remove(&self, pid: u32) -> Result<()> {
        match self.skel.maps.game_tgids.delete(bytes_of(&pid)) {
            Err(e) if e.kind() != libbpf_rs::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing pid {pid} from BPF map game_tgids"))
            }
            _ => Ok(()),
        }
    }

    fn pids(&self) -> Result<Vec<u32>> {
        Ok(self
            .skel
            .maps
            .game_tgids
            .keys()
            .filter_map(|k| from_bytes::<u32>(&k))
            .collect())
    }
}

fn leave_attach_to_scx_ops_attach(map: &OpenMapMut<'_>) -> Result<()> {
    // SAFETY: the pointer is the open object's live map; libbpf only sets a flag in it.
    let rc = unsafe {
        libbpf_rs::libbpf_sys::bpf_map__set_autoattach(map.as_libbpf_object().as_ptr(), false)
    };
    if rc != 0 {
        bail!(
            "BPF map {:?}: cannot turn off its auto-attach (not a struct_ops map?): {}",
            map.name(),
            std::io::Error::from_raw_os_error(-rc)
        );
    }
    Ok(())
}

fn update<K: Pod, V: Pod>(map: &impl MapCore, key: &K, value: &V) -> Result<()> {
    map.update(bytes_of(key), bytes_of(value), MapFlags::ANY)
        .with_context(|| format!("updating BPF map {:?}", map.name()))
}

fn lookup<K: Pod, V: Pod>(map: &impl MapCore, key: &K) -> Result<V> {
    let bytes = map
        .lookup(bytes_of(key), MapFlags::ANY)?
        .with_context(|| format!("BPF map {:?} has no such key", map.name()))?;
    from_bytes(&bytes).with_context(|| format!("BPF map {:?}: value size mismatch", map.name()))
}

fn lookup_percpu<V: Pod>(map: &impl MapCore) -> Result<Vec<V>> {
    let per_cpu = map
        .lookup_percpu(bytes_of(&ZERO), MapFlags::ANY)?
        .with_context(|| format!("BPF map {:?} is empty", map.name()))?;
    per_cpu
        .iter()
        .map(|b| {
            from_bytes(b).with_context(|| format!("BPF map {:?}: value size mismatch", map.name()))
        })
        .collect()
}

/// A map value or key read back; `None` when the size does not match.
/// Every entry of a hash map. One removed between the key walk and its lookup is skipped: it
/// has nothing left to report.
fn read_all<K: Pod, V: Pod>(map: &impl MapCore) -> Result<Vec<(K, V)>> {
    let mut out = Vec::new();
    for key in map.keys() {
        if let Some(v) = map.lookup(&key, MapFlags::ANY)?
            && let (Some(k), Some(e)) = (from_bytes::<K>(&key), from_bytes::<V>(&v))
        {
            out.push((k, e));
        }
    }
    Ok(out)
}

fn from_bytes<V: Pod>(bytes: &[u8]) -> Option<V> {
    bytemuck::try_pod_read_unaligned(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use libbpf_rs::skel::SkelBuilder;

    fn autoattach(map: &OpenMapMut<'_>) -> bool {
        // SAFETY: a live map of the open object; libbpf only reads a flag.
        unsafe { libbpf_rs::libbpf_sys::bpf_map__autoattach(map.as_libbpf_object().as_ptr()) }
    }

    /// Opening the object needs no root and no sched_ext kernel: nothing is loaded.
    #[test]
    fn the_skeleton_leaves_the_struct_ops_map_to_scx_ops_attach() {
        let mut object = MaybeUninit::uninit();
        let skel = BpfSkelBuilder::default()
            .open(&mut object)
            .expect("opening the BPF object");
        let ops = &skel.maps.pandemonium_ops;
        // libbpf's default, which made bpf_object__attach_skeleton warn about the map.
        assert!(autoattach(ops));
        leave_attach_to_scx_ops_attach(ops).unwrap();
        assert!(!autoattach(ops));
        // Only a struct_ops map can be attached at all; libbpf refuses the flag on others.
        let err = leave_attach_to_scx_ops_attach(&skel.maps.knobs_map).unwrap_err();
        assert!(err.to_string().contains("\"knobs_map\""), "{err:#}");
    }
}
