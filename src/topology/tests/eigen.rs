// SPDX-License-Identifier: GPL-2.0-only
//! The eigen route is accurate on the clustered spectra of topology graphs,
//! where nalgebra's `SymmetricEigen` alone is not.

use super::*;
use crate::topology::fixtures::*;
use crate::topology::{
    SpectralRoute, Spectrum, SyntheticLayout, Topology, W_CROSS_PACKAGE, W_SAME_LLC, group_ids,
    laplacian_from_fn,
};

/// Topology-shaped Laplacian with a custom L2 weight: clustered spectra with
/// huge multiplicities, the case where nalgebra's SymmetricEigen alone fails.
fn weighted_topology(t: &Topology, w_l2: f64) -> DMatrix<f64> {
    let l2 = group_ids(&t.online, &t.l2_groups);
    laplacian_from_fn(t.online.len(), |i, j| {
        if l2[i] == l2[j] {
            w_l2
        } else if t.package_of[&t.online[i]] == t.package_of[&t.online[j]] {
            W_SAME_LLC
        } else {
            W_CROSS_PACKAGE
        }
    })
}

#[test]
fn eigen_route_is_accurate_on_clustered_spectra() {
    let shapes = [
        layout(2, 4, 8, 2, 1, 1),
        SyntheticLayout::simple(4, 4, 2),
        layout(2, 1, 8, 2, 1, 1),
    ];
    for shape in shapes {
        let t = synth(shape);
        let n = t.online.len();
        let projector =
            DMatrix::<f64>::identity(n, n) - DMatrix::from_element(n, n, 1.0 / n as f64);
        for w_l2 in [0.5, 3.0, 10.0] {
            let l = weighted_topology(&t, w_l2);
            let (values, vectors) = symmetric_eigen(&l);
            let recon = &vectors * DMatrix::from_diagonal(&values) * vectors.transpose();
            assert!((recon - &l).amax() < 1e-11 * l.amax(), "n {n} w {w_l2}");
            let orth = vectors.transpose() * &vectors - DMatrix::<f64>::identity(n, n);
            assert!(orth.amax() < 1e-12, "n {n} w {w_l2}");
            for route in ROUTES {
                let s = Spectrum::compute(&l, route);
                assert_eq!(s.route, route);
                let err = (&l * &s.lplus - &projector).amax();
                assert!(err < 1e-10, "n {n} w {w_l2} {route:?}: L L+ off by {err:e}");
            }
            let e = Spectrum::compute(&l, SpectralRoute::Eigen);
            let f = Spectrum::compute(&l, SpectralRoute::Fast);
            assert!((&e.lplus - &f.lplus).amax() <= 1e-9 * e.lplus.amax());
            assert!(close(e.lambda2, f.lambda2, 1e-9));
        }
    }
}

#[test]
fn jacobi_polish_diagonalises_from_scratch() {
    let mut rng = Rng(0x5151_7070_9090_1313);
    let n = 24;
    let mut a = DMatrix::<f64>::from_fn(n, n, |_, _| rng.unit() - 0.5);
    a = &a + a.transpose();
    let mut v = DMatrix::<f64>::identity(n, n);
    let mut d = a.clone();
    jacobi_polish(&mut d, &mut v);
    let recon = &v * DMatrix::from_diagonal(&d.diagonal()) * v.transpose();
    assert!((recon - &a).amax() < 1e-12);
}
