// SPDX-License-Identifier: GPL-2.0-only
//! Reference spectral route: the symmetric eigendecomposition, finished with
//! Jacobi sweeps because nalgebra's `SymmetricEigen` alone is not accurate on
//! the massively degenerate spectra of topology graphs.

use nalgebra::{DMatrix, DVector, SymmetricEigen};

use super::spectrum::symmetrize;

/// Eigenvalues at or below this fraction of the largest are treated as zero by
/// the eigen route. A connected topology graph has lambda_2 / lambda_max of
/// order 0.1; anything near 1e-10 is numerically disconnected.
pub const PINV_REL_TOL: f64 = 1e-10;
/// Jacobi polish stops once off-diagonals are this small relative to the
/// matrix (a few hundred ulps: tighter only chases rounding noise).
const JACOBI_REL_TOL: f64 = 1e-14;
/// Polishing a near-diagonal matrix takes 2-3 sweeps; from scratch, cyclic
/// Jacobi needs ~10, so this is a generous cap.
const JACOBI_MAX_SWEEPS: usize = 30;

/// Symmetric eigendecomposition accurate to rounding. nalgebra's
/// `SymmetricEigen` alone can return eigenvectors that mix eigenspaces on
/// clustered spectra (V^T A V off-diagonal up to 1e-2 measured on a 128-CPU
/// two-socket layout; nalgebra issue #1109), which topology graphs, with their
/// huge multiplicities, hit. Its output is still a near-diagonalising
/// orthonormal basis, so a few Jacobi sweeps on V^T A V finish the job.
pub(super) fn symmetric_eigen(a: &DMatrix<f64>) -> (DVector<f64>, DMatrix<f64>) {
    let mut v = SymmetricEigen::new(a.clone()).eigenvectors;
    let mut d = v.transpose() * a * &v;
    jacobi_polish(&mut d, &mut v);
    (d.diagonal(), v)
}

/// Cyclic Jacobi on a symmetric `a`, accumulating rotations into `v`, until
/// no off-diagonal entry exceeds JACOBI_REL_TOL of the largest entry.
fn jacobi_polish(a: &mut DMatrix<f64>, v: &mut DMatrix<f64>) {
    let n = a.nrows();
    symmetrize(a);
    let tol = JACOBI_REL_TOL * a.amax();
    let rotate = |m: &mut DMatrix<f64>, p: usize, q: usize, c: f64, s: f64| {
        for k in 0..m.nrows() {
            let (mp, mq) = (m[(k, p)], m[(k, q)]);
            m[(k, p)] = c * mp - s * mq;
            m[(k, q)] = s * mp + c * mq;
        }
    };
    for _ in 0..JACOBI_MAX_SWEEPS {
        let mut rotated = false;
        for q in 1..n {
            for p in 0..q {
                let apq = a[(p, q)];
                if apq.abs() <= tol {
                    continue;
                }
                rotated = true;
                // Golub & Van Loan sym.schur2: the smaller rotation angle.
                let tau = (a[(q, q)] - a[(p, p)]) / (2.0 * apq);
                let t = tau.signum() / (tau.abs() + (1.0 + tau * tau).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = t * c;
                rotate(a, p, q, c, s);
                // Row update of J^T (A J) via the symmetric column update.
                for k in 0..n {
                    let (ap, aq) = (a[(p, k)], a[(q, k)]);
                    a[(p, k)] = c * ap - s * aq;
                    a[(q, k)] = s * ap + c * aq;
                }
                rotate(v, p, q, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
}

/// Reference route: L+ = V diag(1/lambda, 0 for lambda <= tol) V^T.
pub(super) fn eigen_route(l: &DMatrix<f64>) -> (DMatrix<f64>, f64) {
    let n = l.nrows();
    if n == 0 {
        return (DMatrix::zeros(0, 0), 0.0);
    }
    let (values, vectors) = symmetric_eigen(l);
    let lmax = values.max().max(0.0);
    let tol = PINV_REL_TOL * lmax;
    let mut scaled = vectors.clone();
    for (k, mut col) in scaled.column_iter_mut().enumerate() {
        let ev = values[k];
        col *= if ev > tol { 1.0 / ev } else { 0.0 };
    }
    let mut lplus = &scaled * vectors.transpose();
    symmetrize(&mut lplus);
    let mut sorted: Vec<f64> = values.iter().copied().collect();
    sorted.sort_by(f64::total_cmp);
    let lambda2 = match sorted.get(1) {
        Some(&v) if v > tol => v,
        _ => 0.0,
    };
    (lplus, lambda2)
}

#[cfg(test)]
#[path = "tests/eigen.rs"]
mod tests;
