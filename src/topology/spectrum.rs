// SPDX-License-Identifier: GPL-2.0-only
//! Laplacian pseudoinverse L+, Fiedler value lambda_2 and the scalars derived
//! from them. The two routes live in `eigen` (reference) and `fast`
//! (Cholesky/Lanczos).

use nalgebra::DMatrix;

use super::eigen::eigen_route;
use super::fast::fast_route;

/// Up to this many CPUs the reference eigendecomposition is cheap (< 10 ms);
/// above it the Cholesky/Lanczos route keeps 1024 CPUs well under a second.
pub const AUTO_EIGEN_MAX_N: usize = 256;

/// How [`Spectrum::compute`] obtains L+ and lambda_2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpectralRoute {
    /// Eigen up to [`AUTO_EIGEN_MAX_N`] vertices, Fast above.
    Auto,
    /// Reference: full symmetric eigendecomposition (nalgebra, then Jacobi
    /// polish), O(n^3) with a large constant (~0.7 s at n = 1024).
    Eigen,
    /// L+ = (L + a J/n)^-1 - J/(a n) by recursive Schur-complement inversion
    /// (matrix-matrix products); lambda_2 = Rayleigh quotient of the Fiedler
    /// vector found by Lanczos on L+ (an upper bound), certified within 1e-9
    /// by a Cholesky inertia test (the lower bound). ~0.1 s at n = 1024.
    /// Falls back to Eigen if the certificate fails.
    Fast,
}

/// Laplacian pseudoinverse and the scalars derived from it.
#[derive(Clone, Debug)]
pub struct Spectrum {
    /// Moore-Penrose pseudoinverse of L.
    pub lplus: DMatrix<f64>,
    /// Second-smallest eigenvalue of L; 0 for a disconnected graph or n < 2.
    pub lambda2: f64,
    /// Tr(L+) = sum of 1/lambda over the non-zero eigenvalues.
    pub trace_lplus: f64,
    /// Tr(L) = 2m, the sum of weighted degrees.
    pub trace_l: f64,
    /// Connected-component id per vertex.
    pub component: Vec<usize>,
    pub nr_components: usize,
    /// The route that actually produced the result (Eigen after a fallback).
    pub route: SpectralRoute,
}

impl Spectrum {
    /// Computes the spectrum of the Laplacian `l` (symmetric, zero row sums,
    /// non-negative weights).
    pub fn compute(l: &DMatrix<f64>, route: SpectralRoute) -> Self {
        let n = l.nrows();
        assert_eq!(n, l.ncols(), "Laplacian must be square");
        let (component, nr_components) = components(l);
        let route = match route {
            SpectralRoute::Auto if n <= AUTO_EIGEN_MAX_N => SpectralRoute::Eigen,
            SpectralRoute::Auto => SpectralRoute::Fast,
            other => other,
        };
        let (lplus, lambda2, used) = match route {
            SpectralRoute::Eigen => {
                let (lplus, lambda2) = eigen_route(l);
                (lplus, lambda2, SpectralRoute::Eigen)
            }
            _ if nr_components <= 1 => match fast_route(l) {
                Some((lplus, lambda2)) => (lplus, lambda2, SpectralRoute::Fast),
                None => {
                    let (lplus, lambda2) = eigen_route(l);
                    (lplus, lambda2, SpectralRoute::Eigen)
                }
            },
            _ => {
                // The pseudoinverse of a block-diagonal Laplacian is the block
                // diagonal of the blocks' pseudoinverses.
                let mut lplus = DMatrix::zeros(n, n);
                let mut used = SpectralRoute::Fast;
                for c in 0..nr_components {
                    let members: Vec<usize> = (0..n).filter(|&v| component[v] == c).collect();
                    let sub = l.select_rows(&members).select_columns(&members);
                    let part = Spectrum::compute(&sub, SpectralRoute::Fast);
                    if part.route == SpectralRoute::Eigen {
                        used = SpectralRoute::Eigen;
                    }
                    for (a, &i) in members.iter().enumerate() {
                        for (b, &j) in members.iter().enumerate() {
                            lplus[(i, j)] = part.lplus[(a, b)];
                        }
                    }
                }
                (lplus, 0.0, used)
            }
        };
        let lambda2 = if nr_components > 1 || n < 2 {
            0.0
        } else {
            lambda2
        };
        Self {
            trace_lplus: lplus.trace(),
            trace_l: l.trace(),
            lplus,
            lambda2,
            component,
            nr_components,
            route: used,
        }
    }

    pub fn n(&self) -> usize {
        self.lplus.nrows()
    }

    /// Effective resistance between vertices `i` and `j`; infinite across
    /// components (no current can flow).
    pub fn reff(&self, i: usize, j: usize) -> f64 {
        if i == j {
            return 0.0;
        }
        if self.component[i] != self.component[j] {
            return f64::INFINITY;
        }
        let p = &self.lplus;
        (p[(i, i)] + p[(j, j)] - 2.0 * p[(i, j)]).max(0.0)
    }

    /// Tr(L+)/N. Since sum over unordered pairs of R_eff = N Tr(L+), this is
    /// the pair-sum divided by N^2 (half the mean over all ordered pairs
    /// including i = j); it is the scale the CoDel equilibrium is defined on.
    pub fn mean_reff(&self) -> f64 {
        if self.n() == 0 {
            0.0
        } else {
            self.trace_lplus / self.n() as f64
        }
    }

    /// 2m: twice the total edge weight.
    pub fn two_m(&self) -> f64 {
        self.trace_l
    }
}

/// Connected components by BFS over non-zero off-diagonal entries.
fn components(l: &DMatrix<f64>) -> (Vec<usize>, usize) {
    let n = l.nrows();
    let mut comp = vec![usize::MAX; n];
    let mut count = 0;
    let mut stack = Vec::new();
    for start in 0..n {
        if comp[start] != usize::MAX {
            continue;
        }
        comp[start] = count;
        stack.push(start);
        while let Some(v) = stack.pop() {
            for u in 0..n {
                if u != v && comp[u] == usize::MAX && l[(v, u)] != 0.0 {
                    comp[u] = count;
                    stack.push(u);
                }
            }
        }
        count += 1;
    }
    (comp, count)
}

pub(super) fn symmetrize(m: &mut DMatrix<f64>) {
    let n = m.nrows();
    for i in 0..n {
        for j in 0..i {
            let avg = 0.5 * (m[(i, j)] + m[(j, i)]);
            m[(i, j)] = avg;
            m[(j, i)] = avg;
        }
    }
}

#[cfg(test)]
#[path = "tests/spectrum.rs"]
mod tests;
