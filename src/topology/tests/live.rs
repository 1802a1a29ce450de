// SPDX-License-Identifier: GPL-2.0-only
//! The two readers agree on this machine: scx_utils' view of `/sys` and the sysfs reader's give
//! the same topology, so the same model, ranks and tau-derived parameters.

use std::path::Path;

use crate::topology::live::from_scx;
use crate::topology::{Live, SysfsTree, TopologyModel, TopologySource};

#[test]
fn live_and_sysfs_readers_agree_on_this_machine() {
    let root = Path::new("/sys");
    if !root.join("devices/system/cpu/online").exists() {
        eprintln!("no /sys here: nothing to compare");
        return;
    }
    let sysfs = SysfsTree(root).topology().unwrap();
    // scx_utils may refuse a tree the sysfs reader tolerates (a container's partial /sys); the
    // live path then stops with scx_utils' reason rather than guessing.
    let live = match scx_utils::Topology::new() {
        Ok(scx) => from_scx(&scx, root).unwrap(),
        Err(e) => {
            eprintln!("scx_utils cannot read this machine ({e:#}); checking the error");
            let err = format!("{:#}", Live.topology().unwrap_err());
            assert!(
                err.contains("scx_utils could not read the CPU topology"),
                "{err}"
            );
            assert!(err.contains(&format!("{e:#}")), "{err}");
            return;
        }
    };
    assert_eq!(live, sysfs);
    let (live, sysfs) = (TopologyModel::new(live), TopologyModel::new(sysfs));
    assert_eq!(live.ranks(), sysfs.ranks());
    assert_eq!(live.tau_ns, sysfs.tau_ns);
    assert_eq!(live.to_string(), sysfs.to_string());
    println!("{live}");
}
