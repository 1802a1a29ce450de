// SPDX-License-Identifier: GPL-2.0-only
//! The fast route agrees with the reference eigen route.

use crate::topology::fixtures::*;
use crate::topology::{SpectralRoute, Spectrum};

#[test]
fn fast_route_matches_eigen_route() {
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    // 150 crosses the Cholesky leaf size twice, exercising the recursion.
    for &n in &[2usize, 3, 5, 9, 17, 40, 65, 150] {
        for density in [0.05, 0.3, 1.0] {
            let l = random_graph(n, density, &mut rng);
            let e = Spectrum::compute(&l, SpectralRoute::Eigen);
            let f = Spectrum::compute(&l, SpectralRoute::Fast);
            assert_eq!(f.route, SpectralRoute::Fast, "n {n}: unexpected fallback");
            let scale = e.lplus.amax();
            let diff = (&e.lplus - &f.lplus).amax();
            assert!(
                diff <= 1e-9 * scale,
                "n {n} density {density}: L+ diff {diff}"
            );
            assert!(
                close(e.lambda2, f.lambda2, 1e-9),
                "n {n} density {density}: lambda2 {} vs {}",
                e.lambda2,
                f.lambda2
            );
            assert!(close(e.trace_lplus, f.trace_lplus, 1e-9));
        }
    }
}

#[test]
fn fast_route_matches_eigen_route_on_topologies() {
    for (name, layout) in fixtures() {
        let l = synth(layout).laplacian();
        let e = Spectrum::compute(&l, SpectralRoute::Eigen);
        let f = Spectrum::compute(&l, SpectralRoute::Fast);
        assert_eq!(f.route, SpectralRoute::Fast, "{name}");
        assert!(
            (&e.lplus - &f.lplus).amax() <= 1e-9 * e.lplus.amax(),
            "{name}"
        );
        assert!(close(e.lambda2, f.lambda2, 1e-9), "{name}");
    }
}
