// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's cpulist syntax (`0-3,5,7-9`), parsed strictly and formatted
//! back.
//!
//! Not scx_utils' `read_cpulist`: it refuses the empty list a memory-only NUMA
//! node prints, reads a reversed range as empty, and bounds no range, so a
//! corrupt `0-4294967295` would allocate gigabytes; its `Cpumask` is only as
//! wide as this host's CPU ids, too narrow for the synthetic machines. The live
//! reader takes the online CPUs from scx_utils as a `Cpumask`; this parser
//! serves the sysfs reader and the few files scx_utils does not read.

use anyhow::{Context, Result, ensure};

/// No Linux build supports this many CPU ids (NR_CPUS tops out at 8192); the
/// cap keeps a corrupt range such as `0-4294967295` from allocating gigabytes.
pub const CPU_LIST_ID_LIMIT: u32 = 1 << 16;

/// Parses the kernel's cpulist syntax (`0-3,5,7-9`, optional trailing
/// newline, empty allowed) into sorted, deduplicated CPU ids.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>> {
    let body = text.trim();
    let mut cpus = Vec::new();
    if body.is_empty() {
        return Ok(cpus);
    }
    for item in body.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (parse_cpu_id(a, item)?, parse_cpu_id(b, item)?),
            None => {
                let cpu = parse_cpu_id(item, item)?;
                (cpu, cpu)
            }
        };
        ensure!(lo <= hi, "reversed range {item:?} in cpu list");
        // Distinct ids never exceed the limit, so more means overlapping items, which the kernel
        // never prints; refusing them bounds the memory a hostile list can make us allocate.
        ensure!(
            cpus.len() + (hi - lo) as usize <= CPU_LIST_ID_LIMIT as usize,
            "cpu list names more than {CPU_LIST_ID_LIMIT} ids"
        );
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn parse_cpu_id(token: &str, item: &str) -> Result<u32> {
    let token = token.trim();
    // `u32::from_str` accepts a leading '+', which the kernel never prints.
    ensure!(
        !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()),
        "bad cpu list item {item:?}"
    );
    let id: u32 = token
        .parse()
        .with_context(|| format!("cpu id out of range in {item:?}"))?;
    ensure!(
        id < CPU_LIST_ID_LIMIT,
        "cpu id {id} in {item:?} is beyond any kernel's NR_CPUS"
    );
    Ok(id)
}

/// Formats CPU ids back into cpulist syntax (inverse of [`parse_cpu_list`]
/// for sorted, deduplicated input).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            end += 1;
            i += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
#[path = "tests/cpulist.rs"]
mod tests;
