// SPDX-License-Identifier: GPL-2.0-only
//! The weighted graph over the online CPUs: edge weights (conductances) and
//! the Laplacian the spectrum is computed from.

use nalgebra::DMatrix;

use super::{Topology, group_ids};

// Graph weights (conductances). Only their ratios matter for the ranking; the
// absolute scale feeds lambda_2 and so tau ("Tau calibration" in the
// `topology` module docs).

/// CPUs sharing an L2 (SMT threads, or cores of a shared-L2 cluster): a move
/// keeps the whole private cache hierarchy warm.
pub const W_SHARED_L2: f64 = 10.0;
/// Same package, different L2: the L3 or interconnect refills the L2.
pub const W_SAME_PACKAGE: f64 = 1.0;
/// Different packages: a move crosses the socket link and usually NUMA.
pub const W_CROSS_PACKAGE: f64 = 0.3;

impl Topology {
    /// Conductance between two online CPUs (0 for the same CPU or an
    /// offline one).
    pub fn edge_weight(&self, a: u32, b: u32) -> f64 {
        if a == b {
            return 0.0;
        }
        match (self.l2_group_of(a), self.l2_group_of(b)) {
            (Some(x), Some(y)) if x == y => W_SHARED_L2,
            (Some(_), Some(_)) if self.package_of.get(&a) == self.package_of.get(&b) => {
                W_SAME_PACKAGE
            }
            (Some(_), Some(_)) => W_CROSS_PACKAGE,
            _ => 0.0,
        }
    }

    /// Weighted Laplacian over the online CPUs, in [`Self::online`] order.
    pub fn laplacian(&self) -> DMatrix<f64> {
        let n = self.online.len();
        let l2 = group_ids(&self.online, &self.l2_groups);
        let package: Vec<u32> = self
            .online
            .iter()
            .map(|c| self.package_of.get(c).copied().unwrap_or(0))
            .collect();
        laplacian_from_fn(n, |i, j| {
            if l2[i] == l2[j] {
                W_SHARED_L2
            } else if package[i] == package[j] {
                W_SAME_PACKAGE
            } else {
                W_CROSS_PACKAGE
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
