// SPDX-License-Identifier: GPL-2.0-only
//! Reads the running scheduler's BPF maps from outside its process, by map name, the way bpftool
//! would: what the gate asserts comes from the kernel's view, not from the scheduler's log.

use bytemuck::{Pod, bytes_of, try_pod_read_unaligned};
use libbpf_rs::query::MapInfoIter;
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use scx_pandemonium::bpf_intf::{
    AffinityRow, CommKey, CoopProc, LongestWait, Stats, TaskClassEntry, TopoParams, TuningKnobs,
};
use std::collections::HashMap;

/// The newest map of that name (a previous instance's maps are gone once it detached).
pub fn find_map(name: &str) -> MapHandle {
    let info = MapInfoIter::default()
        .filter(|m| m.name.to_str() == Some(name))
        .max_by_key(|m| m.id)
        .unwrap_or_else(|| panic!("no BPF map named {name}: is scx_pandemonium attached?"));
    MapHandle::from_map_id(info.id).unwrap_or_else(|e| panic!("opening map {name}: {e}"))
}

/// What BPF published of each comm's class (`task_profiles`).
pub fn read_profiles() -> HashMap<String, TaskClassEntry> {
    read_comm_map("task_profiles")
}

/// What the daemon handed BPF from the procdb for new tasks to start from (`procdb_warm`).
pub fn read_warm() -> HashMap<String, TaskClassEntry> {
    read_comm_map("procdb_warm")
}

/// `coop_comms`: each name's COOP_FORCED (--coop) or COOP_LEARNED (the procdb) value.
pub fn read_coop_comms() -> HashMap<String, u8> {
    read_comm_map("coop_comms")
}

/// `coop_procs[tgid]`: a process's evidence of cooperation (--coop-learn), if it has any.
pub fn read_coop_proc(tgid: u32) -> Option<CoopProc> {
    let v = find_map("coop_procs")
        .lookup(bytes_of(&tgid), MapFlags::ANY)
        .expect("lookup coop_procs")?;
    Some(try_pod_read_unaligned(&v).expect("coop_procs: value of unexpected size"))
}

fn read_comm_map<V: Pod>(name: &str) -> HashMap<String, V> {
    let map = find_map(name);
    let mut out = HashMap::new();
    for key in map.keys() {
        let Some(value) = map.lookup(&key, MapFlags::ANY).expect("lookup") else {
            continue;
        };
        let (Ok(k), Ok(v)) = (
            try_pod_read_unaligned::<CommKey>(&key),
            try_pod_read_unaligned::<V>(&value),
        ) else {
            panic!("{name} entry of unexpected size");
        };
        let end = k.comm.iter().position(|&b| b == 0).unwrap_or(k.comm.len());
        out.insert(String::from_utf8_lossy(&k.comm[..end]).into_owned(), v);
    }
    out
}

/// Counters summed over CPUs.
pub fn read_stats() -> Stats {
    let map = find_map("stats_map");
    let per_cpu = map
        .lookup_percpu(bytes_of(&0u32), MapFlags::ANY)
        .expect("lookup stats")
        .expect("stats_map is empty");
    let mut total = Stats::default();
    for v in per_cpu {
        total.accumulate(&try_pod_read_unaligned(&v).expect("stats size"));
    }
    total
}

/// The value at `key` of the array map `name`, as `V`.
fn lookup_one<V: Pod>(name: &str, key: u32) -> V {
    let v = find_map(name)
        .lookup(bytes_of(&key), MapFlags::ANY)
        .unwrap_or_else(|e| panic!("lookup {name}[{key}]: {e}"))
        .unwrap_or_else(|| panic!("{name}[{key}] is missing"));
    try_pod_read_unaligned(&v).unwrap_or_else(|_| panic!("{name}: value of unexpected size"))
}

pub fn read_rank_row(cpu: u32) -> AffinityRow {
    lookup_one("affinity_rank", cpu)
}

/// The longest queue wait since this instance loaded, and whose it was.
pub fn read_longest_wait() -> LongestWait {
    lookup_one("longest_wait", 0)
}

/// The topology-derived constants (the tau table) BPF is using.
pub fn read_topo() -> TopoParams {
    lookup_one("topo_map", 0)
}

/// The knobs BPF is using now (what the adaptive loop last wrote, or the defaults).
pub fn read_knobs() -> TuningKnobs {
    lookup_one("knobs_map", 0)
}

/// Writes the knobs straight into BPF's map, past the daemon's range checks: what a bad write
/// (a bug in the loop, or anything else with the map's fd) would leave there.
pub fn write_knobs(k: &TuningKnobs) {
    find_map("knobs_map")
        .update(bytes_of(&0u32), bytes_of(k), MapFlags::ANY)
        .expect("writing knobs_map");
}
