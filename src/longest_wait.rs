// SPDX-License-Identifier: GPL-2.0-only
//! The longest queue wait since load and whose it was (BPF's `longest_wait` map), in words: the
//! daemon prints it when it detaches, and the gate's wait bound names the task that broke it.

use crate::autogroup;
use crate::bpf_intf::{LongestWait, Tier};
use std::time::Duration;

/// The kernel's policy numbers (include/uapi/linux/sched.h) that reach a sched_ext scheduler.
fn policy_name(policy: u8) -> String {
    match policy {
        0 => "SCHED_NORMAL".into(),
        3 => "SCHED_BATCH".into(),
        5 => "SCHED_IDLE".into(),
        7 => "SCHED_EXT".into(),
        n => format!("policy {n}"),
    }
}

/// "3.016s: pid 412 (gate-idle0), SCHED_IDLE, weight 3, BATCH, in autogroup-7, run by the wait
/// bound"; None before any task has waited.
pub fn describe(w: &LongestWait) -> Option<String> {
    if w.ns == 0 {
        return None;
    }
    let end = w.comm.iter().position(|&b| b == 0).unwrap_or(w.comm.len());
    let comm = String::from_utf8_lossy(&w.comm[..end]);
    let tier =
        Tier::from_u8(w.tier).map_or_else(|| format!("tier {}", w.tier), |t| t.name().into());
    let group = match w.cgid {
        0 => "in no group".to_string(),
        id if autogroup::is_key(id) => format!("in {}", autogroup::name(id)),
        id => format!("in cgroup {id}"),
    };
    let rescued = if w.rescued != 0 {
        ", run by the wait bound"
    } else {
        ""
    };
    Some(format!(
        "{:?}: pid {} ({comm}), {}, weight {}, {tier}, {group}{rescued}",
        Duration::from_nanos(w.ns),
        w.pid,
        policy_name(w.policy),
        w.weight
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(comm: &[u8]) -> LongestWait {
        let mut w = LongestWait {
            ns: 3_016_091_608,
            cgid: 1 << 63 | 7,
            weight: 3,
            pid: 412,
            tier: Tier::Batch as u8,
            policy: 5,
            rescued: 1,
            ..Default::default()
        };
        w.comm[..comm.len()].copy_from_slice(comm);
        w
    }

    #[test]
    fn names_the_task_its_policy_and_its_group() {
        assert_eq!(
            describe(&wait(b"gate-idle0")).unwrap(),
            "3.016091608s: pid 412 (gate-idle0), SCHED_IDLE, weight 3, BATCH, in autogroup-7, \
             run by the wait bound"
        );
    }

    #[test]
    fn a_full_comm_a_cgroup_and_an_unknown_tier_still_read() {
        let mut w = wait(b"sixteen-bytes-xx");
        (w.cgid, w.tier, w.policy, w.rescued) = (42, 9, 1, 0);
        assert_eq!(
            describe(&w).unwrap(),
            "3.016091608s: pid 412 (sixteen-bytes-xx), policy 1, weight 3, tier 9, in cgroup 42"
        );
    }

    #[test]
    fn nothing_before_the_first_wait() {
        assert_eq!(describe(&LongestWait::default()), None);
    }
}
