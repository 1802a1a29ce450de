// SPDX-License-Identifier: GPL-2.0-only
//! The weighted graph over the online CPUs: edge weights (conductances) and
//! the Laplacian the spectrum is computed from.

use nalgebra::DMatrix;

use super::{Topology, group_ids};

// Graph weights (conductances). Only their ratios matter for the ranking; the
// absolute scale feeds lambda_2 and so tau ("Tau calibration" in the
// `topology` module docs). Each level is a step down from the one below it,
// so a more distant pair never conducts better than a nearer one.

/// CPUs sharing an L2 (SMT threads, or cores of a shared-L2 cluster): a move
/// keeps the whole private cache hierarchy warm.
pub const W_SHARED_L2: f64 = 10.0;
/// Same last-level cache, different L2: the shared L3 refills the L2.
pub const W_SAME_LLC: f64 = 1.0;
/// Same package, different last-level cache (Zen CCX/CCD, split-L3 parts):
/// every refill crosses the package fabric. Chosen by measuring the reference
/// machines' tau ("Tau calibration" in the `topology` docs).
pub const W_CROSS_LLC: f64 = 0.1;
/// Different packages, as a fraction of the weakest link inside a package
/// (same LLC on single-LLC packages, [`W_CROSS_LLC`] on split ones): a move
/// crosses the socket link and usually NUMA, so it never conducts better than
/// any move that stays in the package.
pub const W_CROSS_PACKAGE: f64 = 0.3;

impl Topology {
    /// Weighted Laplacian over the online CPUs, in [`Self::online`] order.
    pub fn laplacian(&self) -> DMatrix<f64> {
        let n = self.online.len();
        let l2 = group_ids(&self.online, &self.l2_groups);
        let llc = group_ids(&self.online, &self.l3_groups);
        let package: Vec<u32> = self
            .online
            .iter()
            .map(|c| self.package_of.get(c).copied().unwrap_or(0))
            .collect();
        let split_llc =
            (0..n).any(|i| (0..i).any(|j| package[i] == package[j] && llc[i] != llc[j]));
        let cross_package = W_CROSS_PACKAGE * if split_llc { W_CROSS_LLC } else { W_SAME_LLC };
        laplacian_from_fn(n, |i, j| {
            if l2[i] == l2[j] {
                W_SHARED_L2
            } else if package[i] != package[j] {
                cross_package
            } else if llc[i] == llc[j] {
                W_SAME_LLC
            } else {
                W_CROSS_LLC
            }
        })
    }
}

/// Builds a Laplacian from a symmetric weight function over `0..n`.
pub fn laplacian_from_fn(n: usize, mut weight: impl FnMut(usize, usize) -> f64) -> DMatrix<f64> {
    let mut l = DMatrix::<f64>::zeros(n, n);
    for i in 0..n {
        for j in 0..i {
            let w = weight(i, j);
            l[(i, j)] = -w;
            l[(j, i)] = -w;
            l[(i, i)] += w;
            l[(j, j)] += w;
        }
    }
    l
}
