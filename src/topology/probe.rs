// SPDX-License-Identifier: GPL-2.0-only
//! Raw per-CPU facts read from sysfs, before any fallback. A missing file is
//! `None`; a file that exists but holds garbage is an error naming the path and
//! the content.

use std::fs;
use std::io;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

use super::cpulist::parse_cpu_list;

/// `Ok(None)` only for a missing file: any other I/O failure is real.
fn read_opt(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

pub(super) fn read_cpu_list_opt(path: &Path) -> Result<Option<Vec<u32>>> {
    let Some(text) = read_opt(path)? else {
        return Ok(None);
    };
    parse_cpu_list(&text)
        .with_context(|| format!("{}: invalid cpu list {:?}", path.display(), text))
        .map(Some)
}

/// Reads a numeric id; negative ids mean "unknown" to the kernel.
fn read_id_opt(path: &Path) -> Result<Option<u32>> {
    let Some(text) = read_opt(path)? else {
        return Ok(None);
    };
    let value: i64 = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("{}: expected an integer id, got {:?}", path.display(), text))?;
    if value < 0 {
        return Ok(None);
    }
    u32::try_from(value)
        .map(Some)
        .map_err(|_| anyhow!("{}: id {value} out of range", path.display()))
}

/// `Ok(None)` for a missing directory; entries sorted by name for
/// deterministic output.
pub(super) fn read_dir_names(path: &Path) -> Result<Option<Vec<String>>> {
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("listing {}", path.display())),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", path.display()))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(Some(names))
}

/// `prefix<digits>` -> digits.
pub(super) fn numbered_entry(name: &str, prefix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Per-CPU raw sysfs facts before fallbacks are applied.
#[derive(Default)]
pub(super) struct CpuProbe {
    pub(super) has_topology_dir: bool,
    pub(super) package: Option<u32>,
    pub(super) core: Option<u32>,
    pub(super) cluster: Option<u32>,
    pub(super) siblings: Option<Vec<u32>>,
    pub(super) has_cache_dir: bool,
    pub(super) l2: Option<Vec<u32>>,
    pub(super) l3: Option<Vec<u32>>,
    /// `cpu_capacity`: only where the kernel reports it (arm64, riscv; not x86).
    pub(super) capacity: Option<u32>,
}

pub(super) fn probe_cpu(cpu_dir: &Path, cpu: u32) -> Result<CpuProbe> {
    let base = cpu_dir.join(format!("cpu{cpu}"));
    let mut probe = CpuProbe {
        capacity: read_id_opt(&base.join("cpu_capacity"))?,
        ..CpuProbe::default()
    };

    let topo = base.join("topology");
    probe.has_topology_dir = topo.is_dir();
    if probe.has_topology_dir {
        probe.package = read_id_opt(&topo.join("physical_package_id"))?;
        probe.core = read_id_opt(&topo.join("core_id"))?;
        probe.cluster = read_id_opt(&topo.join("cluster_id"))?;
        probe.siblings = read_cpu_list_opt(&topo.join("thread_siblings_list"))?;
    }

    let cache = base.join("cache");
    if let Some(names) = read_dir_names(&cache)? {
        probe.has_cache_dir = true;
        for name in names {
            if numbered_entry(&name, "index").is_none() {
                continue;
            }
            let index = cache.join(&name);
            let Some(level) = read_id_opt(&index.join("level"))? else {
                continue;
            };
            let type_path = index.join("type");
            let Some(kind) = read_opt(&type_path)? else {
                continue;
            };
            match kind.trim() {
                "Data" | "Unified" => {}
                "Instruction" => continue,
                other => bail!("{}: unknown cache type {:?}", type_path.display(), other),
            }
            let Some(shared) = read_cpu_list_opt(&index.join("shared_cpu_list"))? else {
                continue;
            };
            let slot = match level {
                2 => &mut probe.l2,
                3 => &mut probe.l3,
                _ => continue,
            };
            slot.get_or_insert_with(Vec::new).extend(shared);
        }
    }
    Ok(probe)
}

#[cfg(test)]
#[path = "tests/probe.rs"]
mod tests;
