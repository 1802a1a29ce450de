// SPDX-License-Identifier: GPL-2.0-only
//! Which cgroup controls the running kernel lets sched_ext honour, and dropping the callbacks it
//! lacks: libbpf refuses to load a struct_ops map that sets a member the kernel's
//! `struct sched_ext_ops` does not have. The cgroup callbacks exist only with
//! CONFIG_EXT_GROUP_SCHED, `cgroup_set_bandwidth` only from 6.17, `cgroup_set_idle` from 6.19.

use crate::bpf_skel::types::sched_ext_ops;
use anyhow::Result;
use scx_utils::compat::struct_has_field;

/// What the kernel offers, as read from its BTF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupSupport {
    /// ops.cgroup_init and friends: cpu.weight (CONFIG_EXT_GROUP_SCHED).
    pub weight: bool,
    /// ops.cgroup_set_bandwidth: cpu.max (6.17+).
    pub max: bool,
    /// ops.cgroup_set_idle: cpu.idle (6.19+).
    pub idle: bool,
}

impl CgroupSupport {
    pub fn detect() -> Result<Self> {
        Ok(CgroupSupport {
            weight: struct_has_field("sched_ext_ops", "cgroup_init")?,
            max: struct_has_field("sched_ext_ops", "cgroup_set_bandwidth")?,
            idle: struct_has_field("sched_ext_ops", "cgroup_set_idle")?,
        })
    }

    /// Clears the callbacks this kernel lacks in the opened skeleton's ops.
    pub fn drop_missing(self, ops: &mut sched_ext_ops) {
        if !self.weight {
            ops.cgroup_init = std::ptr::null_mut();
            ops.cgroup_exit = std::ptr::null_mut();
            ops.cgroup_move = std::ptr::null_mut();
            ops.cgroup_set_weight = std::ptr::null_mut();
        }
        if !self.weight || !self.max {
            ops.cgroup_set_bandwidth = std::ptr::null_mut();
        }
        if !self.weight || !self.idle {
            ops.cgroup_set_idle = std::ptr::null_mut();
        }
    }

    /// The startup log's account of what the administrator's cgroup settings do under us.
    pub fn describe(self) -> String {
        let weight = if self.weight {
            "cpu.weight honoured"
        } else {
            "cpu.weight ignored (kernel built without CONFIG_EXT_GROUP_SCHED)"
        };
        let idle = if self.weight && self.idle {
            "cpu.idle honoured"
        } else {
            "cpu.idle ignored (needs Linux 6.19+ with CONFIG_EXT_GROUP_SCHED)"
        };
        let max = if self.weight && self.max {
            "cpu.max enforced"
        } else {
            "cpu.max ignored (needs Linux 6.17+ with CONFIG_EXT_GROUP_SCHED)"
        };
        format!("cgroups: {weight}; {max}; {idle}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_names_each_control_and_its_state() {
        let all = CgroupSupport {
            weight: true,
            max: true,
            idle: true,
        };
        assert_eq!(
            all.describe(),
            "cgroups: cpu.weight honoured; cpu.max enforced; cpu.idle honoured"
        );
        let old = CgroupSupport {
            weight: true,
            max: true,
            idle: false,
        };
        assert!(
            old.describe()
                .contains("cpu.idle ignored (needs Linux 6.19+")
        );
        let none = CgroupSupport {
            weight: false,
            max: true,
            idle: true,
        };
        for control in ["cpu.weight ignored", "cpu.max ignored", "cpu.idle ignored"] {
            assert!(none.describe().contains(control), "{control}");
        }
    }
}
