// SPDX-License-Identifier: GPL-2.0-only
//! Where a [`Topology`] comes from: the running machine ([`super::Live`], through scx_utils) or
//! a sysfs tree ([`SysfsTree`]): the test fixtures, the fuzzed trees, and the checks that read
//! `/sys` a second way to hold the live reader to it (`topology/tests/live.rs`, the gate's
//! topology layer). The scheduler itself never uses it. Both apply the same documented
//! fallbacks, so the model built from either is the same for the same machine.

use std::path::Path;

use anyhow::Result;

use super::Topology;

pub trait TopologySource {
    /// The topology, with any fallback taken in [`Topology::warnings`].
    fn topology(&self) -> Result<Topology>;
}

/// A sysfs tree rooted at the given directory (`/sys` on a real machine).
pub struct SysfsTree<'a>(pub &'a Path);

impl TopologySource for SysfsTree<'_> {
    fn topology(&self) -> Result<Topology> {
        Topology::detect_from(self.0)
    }
}
