// SPDX-License-Identifier: GPL-2.0-only
//! Fast spectral route for a connected graph: L+ by recursive Schur-complement
//! inversion, the Fiedler vector by Lanczos on L+, lambda_2 certified by a
//! Cholesky inertia test. ~0.1 s at 1024 CPUs.

use nalgebra::{DMatrix, DVector};

use super::eigen::symmetric_eigen;
use super::spectrum::symmetrize;
use crate::prng::XorShift64;

/// Below this size a block is inverted by plain Cholesky; above it, by Schur
/// complements so the work lands in matrix-matrix products.
const SPD_LEAF: usize = 64;
/// Relative residual at which the top Ritz value of L+ is accepted.
const LANCZOS_REL_TOL: f64 = 1e-13;
/// Krylov dimension limit; topology graphs converge in a handful of steps
/// (few distinct eigenvalues), and a miss falls back to the eigen route.
const LANCZOS_MAX_STEPS: usize = 256;
/// Width of the certified bracket around lambda_2 (relative).
const LAMBDA2_CERT_REL: f64 = 1e-9;

/// Fast route for a connected graph; `None` asks for the eigen fallback.
pub(super) fn fast_route(l: &DMatrix<f64>) -> Option<(DMatrix<f64>, f64)> {
    let n = l.nrows();
    if n < 2 {
        return Some((DMatrix::zeros(n, n), 0.0));
    }
    let nf = n as f64;
    // Lifting the all-ones direction to eigenvalue `alpha` (the mean degree)
    // makes L invertible without changing any other eigenpair, and keeps the
    // lifted eigenvalue on the same scale as the rest for conditioning.
    let alpha = l.trace() / nf;
    let mut m = l.clone();
    m.add_scalar_mut(alpha / nf);
    let mut lplus = spd_inverse(m)?;
    lplus.add_scalar_mut(-1.0 / (alpha * nf));
    symmetrize(&mut lplus);

    // The top eigenvector of L+ is the Fiedler vector. Its Rayleigh quotient
    // on L is an upper bound on lambda_2 (any vector orthogonal to the ones
    // vector gives one) with error quadratic in the vector's error; the
    // Cholesky inertia test proves the matching lower bound.
    let fiedler = lanczos_top_vector(&lplus)?;
    let lambda2 = fiedler.dot(&(l * &fiedler)) / fiedler.norm_squared();
    (lambda2 > 0.0 && certify_lambda2_floor(l, lambda2 * (1.0 - LAMBDA2_CERT_REL)))
        .then_some((lplus, lambda2))
}

/// Inverse of a symmetric positive definite matrix by recursive 2x2 block
/// Schur complements, so almost all work is in gemm; `None` if not SPD.
fn spd_inverse(m: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let n = m.nrows();
    if n <= SPD_LEAF {
        return m.cholesky().map(|c| c.inverse());
    }
    let h = n / 2;
    let k = n - h;
    let a = m.view((0, 0), (h, h)).clone_owned();
    let b = m.view((h, 0), (k, h)).clone_owned();
    let mut s = m.view((h, h), (k, k)).clone_owned();
    drop(m);

    let a_inv = spd_inverse(a)?;
    let x = &b * &a_inv; // B A^-1
    s.gemm(-1.0, &x, &b.transpose(), 1.0); // S = C - B A^-1 B^T
    symmetrize(&mut s);
    let s_inv = spd_inverse(s)?;
    let y = &s_inv * &x; // S^-1 B A^-1
    let mut top_left = a_inv;
    top_left.gemm(1.0, &x.transpose(), &y, 1.0); // A^-1 + A^-1 B^T S^-1 B A^-1

    let mut out = DMatrix::zeros(n, n);
    out.view_mut((0, 0), (h, h)).copy_from(&top_left);
    out.view_mut((h, h), (k, k)).copy_from(&s_inv);
    let bottom_left = -y;
    out.view_mut((0, h), (h, k))
        .copy_from(&bottom_left.transpose());
    out.view_mut((h, 0), (k, h)).copy_from(&bottom_left);
    Some(out)
}

/// Top eigenvector of a PSD matrix with the all-ones vector in its null
/// space, by Lanczos with full reorthogonalisation on the ones-complement.
fn lanczos_top_vector(a: &DMatrix<f64>) -> Option<DVector<f64>> {
    let n = a.nrows();
    let dim = n - 1;
    let cap = dim.min(LANCZOS_MAX_STEPS);

    let mut rng = XorShift64(0x9E37_79B9_7F4A_7C15 ^ n as u64);
    let mut v = DVector::from_fn(n, |_, _| {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    });
    v.add_scalar_mut(-v.mean());
    let norm = v.norm();
    if norm == 0.0 {
        return None;
    }
    v /= norm;

    let mut basis = DMatrix::<f64>::zeros(n, cap);
    let mut alphas = Vec::with_capacity(cap);
    let mut betas: Vec<f64> = Vec::with_capacity(cap);
    let mut w = DVector::<f64>::zeros(n);
    for j in 0..cap {
        basis.set_column(j, &v);
        w.gemv(1.0, a, &v, 0.0);
        alphas.push(v.dot(&w));
        // Classical Gram-Schmidt twice against every Lanczos vector and the
        // ones vector: subsumes the three-term recurrence and stops the
        // ghost copies of converged eigenvalues plain Lanczos produces.
        for _ in 0..2 {
            let q = basis.columns(0, j + 1);
            let h = q.tr_mul(&w);
            w.gemv(-1.0, &q, &h, 1.0);
            w.add_scalar_mut(-w.mean());
        }
        let beta = w.norm();
        let (theta, s) = top_ritz(&alphas, &betas);
        if theta <= 0.0 || !theta.is_finite() {
            return None;
        }
        if beta * s[j].abs() <= LANCZOS_REL_TOL * theta || j + 1 == dim {
            let mut y = basis.columns(0, j + 1) * s;
            y.add_scalar_mut(-y.mean());
            return Some(y);
        }
        betas.push(beta);
        v = &w / beta;
    }
    None
}

/// Largest eigenvalue of the Lanczos tridiagonal and its eigenvector (whose
/// last component scales the residual).
fn top_ritz(alphas: &[f64], betas: &[f64]) -> (f64, DVector<f64>) {
    let k = alphas.len();
    let mut t = DMatrix::<f64>::zeros(k, k);
    for (i, &a) in alphas.iter().enumerate() {
        t[(i, i)] = a;
    }
    for (i, &b) in betas.iter().enumerate().take(k.saturating_sub(1)) {
        t[(i, i + 1)] = b;
        t[(i + 1, i)] = b;
    }
    let (values, vectors) = symmetric_eigen(&t);
    let top = values.imax();
    (values[top], vectors.column(top).clone_owned())
}

/// True if every eigenvalue of `l` except the one on the all-ones vector
/// exceeds `floor` (Sylvester's law of inertia: a shifted matrix is positive
/// definite exactly when Cholesky succeeds).
fn certify_lambda2_floor(l: &DMatrix<f64>, floor: f64) -> bool {
    let n = l.nrows();
    let nf = n as f64;
    // Park the all-ones eigenvalue at floor + mean degree, safely positive
    // after the shift, so only lambda_2..lambda_n are tested.
    let lift = (floor + l.trace() / nf) / nf;
    let mut m = l.clone();
    m.add_scalar_mut(lift);
    for i in 0..n {
        m[(i, i)] -= floor;
    }
    m.cholesky().is_some()
}

#[cfg(test)]
#[path = "tests/fast.rs"]
mod tests;
