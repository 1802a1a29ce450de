// SPDX-License-Identifier: GPL-2.0-only
//! Spectrum on both routes against closed forms and identities: R_eff is a
//! metric, path / cycle / complete graphs, trace identities, disconnected
//! and degenerate graphs, route selection.

use super::*;
use crate::topology::fixtures::*;
use crate::topology::{
    PINV_REL_TOL, TAU_MAX_NS, TAU_MIN_NS, laplacian_from_fn, tau_ns_from_lambda2,
};
use nalgebra::SymmetricEigen;

fn assert_metric(s: &Spectrum, what: &str) {
    let n = s.n();
    for i in 0..n {
        assert_eq!(s.reff(i, i), 0.0, "{what}");
        for j in 0..n {
            let rij = s.reff(i, j);
            assert!(close(rij, s.reff(j, i), 1e-12), "{what}: symmetry {i} {j}");
            if i != j {
                assert!(rij > 0.0, "{what}: positivity {i} {j} = {rij}");
            }
            for k in 0..n {
                assert!(
                    rij <= s.reff(i, k) + s.reff(k, j) + 1e-9,
                    "{what}: triangle {i} {j} via {k}"
                );
            }
        }
    }
}

#[test]
fn reff_is_a_metric_on_random_graphs() {
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    for trial in 0..12 {
        let n = 2 + (rng.next_u64() % 24) as usize;
        let density = [0.0, 0.1, 0.5, 1.0][trial % 4];
        let l = random_graph(n, density, &mut rng);
        for route in ROUTES {
            let s = Spectrum::compute(&l, route);
            assert_eq!(s.route, route, "no fallback expected");
            assert_metric(&s, &format!("trial {trial} n {n} {route:?}"));
        }
    }
}

#[test]
fn path_graph_closed_forms() {
    for n in [2usize, 3, 4, 7, 12, 33, 80] {
        let l = path_graph(n);
        for route in ROUTES {
            let s = Spectrum::compute(&l, route);
            for i in 0..n {
                for j in 0..n {
                    let want = i.abs_diff(j) as f64;
                    assert!(close(s.reff(i, j), want, 1e-9), "P{n} {route:?} {i} {j}");
                }
            }
            let want = 2.0 - 2.0 * (std::f64::consts::PI / n as f64).cos();
            assert!(close(s.lambda2, want, 1e-9), "P{n} {route:?} lambda2");
        }
    }
}

#[test]
fn cycle_graph_closed_forms() {
    for n in [3usize, 4, 5, 8, 13, 64, 90] {
        let l = cycle_graph(n);
        for route in ROUTES {
            let s = Spectrum::compute(&l, route);
            for i in 0..n {
                for j in 0..n {
                    let k = i.abs_diff(j) as f64;
                    let want = k * (n as f64 - k) / n as f64;
                    assert!(close(s.reff(i, j), want, 1e-9), "C{n} {route:?} {i} {j}");
                }
            }
            let want = 2.0 - 2.0 * (2.0 * std::f64::consts::PI / n as f64).cos();
            assert!(close(s.lambda2, want, 1e-9), "C{n} {route:?} lambda2");
        }
    }
}

#[test]
fn complete_graph_closed_forms() {
    for n in [2usize, 3, 6, 12, 32, 100] {
        let l = complete_graph(n);
        for route in ROUTES {
            let s = Spectrum::compute(&l, route);
            for i in 0..n {
                for j in 0..n {
                    let want = if i == j { 0.0 } else { 2.0 / n as f64 };
                    assert!(close(s.reff(i, j), want, 1e-9), "K{n} {route:?}");
                }
            }
            assert!(close(s.lambda2, n as f64, 1e-9), "K{n} {route:?} lambda2");
            // Tr(L+) = (n-1)/n, 2m = n(n-1).
            assert!(close(s.trace_lplus, (n as f64 - 1.0) / n as f64, 1e-9));
            assert!(close(s.two_m(), (n * (n - 1)) as f64, 1e-12));
        }
    }
}

#[test]
fn trace_identities_hold() {
    let mut rng = Rng(0x0BAD_5EED_1234_4321);
    for _ in 0..8 {
        let n = 3 + (rng.next_u64() % 30) as usize;
        let l = random_graph(n, 0.3, &mut rng);
        let eig = SymmetricEigen::new(l.clone());
        let lmax = eig.eigenvalues.max();
        let kemeny: f64 = eig
            .eigenvalues
            .iter()
            .filter(|&&v| v > PINV_REL_TOL * lmax)
            .map(|v| 1.0 / v)
            .sum();
        let total_weight: f64 = (0..n)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| -l[(i, j)])
            .sum();
        for route in ROUTES {
            let s = Spectrum::compute(&l, route);
            // Tr(L+) is the sum of 1/lambda over non-zero eigenvalues.
            assert!(close(s.trace_lplus, kemeny, 1e-9));
            assert!(close(s.mean_reff(), kemeny / n as f64, 1e-9));
            // Kirchhoff index: the pair sum of R_eff is N Tr(L+).
            let pair_sum: f64 = (0..n)
                .flat_map(|i| (0..i).map(move |j| (i, j)))
                .map(|(i, j)| s.reff(i, j))
                .sum();
            assert!(close(pair_sum, n as f64 * s.trace_lplus, 1e-9));
            // Foster's theorem: sum over edges of w R_eff = N - 1.
            let foster: f64 = (0..n)
                .flat_map(|i| (0..i).map(move |j| (i, j)))
                .map(|(i, j)| -l[(i, j)] * s.reff(i, j))
                .sum();
            assert!(close(foster, n as f64 - 1.0, 1e-9), "foster {foster}");
            assert!(close(s.two_m(), 2.0 * total_weight, 1e-12));
            // L L+ is the projector onto the ones-complement.
            let proj = &l * &s.lplus;
            for i in 0..n {
                for j in 0..n {
                    let want = if i == j { 1.0 } else { 0.0 } - 1.0 / n as f64;
                    assert!((proj[(i, j)] - want).abs() < 1e-9);
                }
            }
        }
    }
}

#[test]
fn disconnected_graph_has_zero_lambda2_and_infinite_cross_resistance() {
    // Triangle {0,1,2} and path {3,4}, plus isolated vertex 5.
    let l = laplacian_from_fn(6, |i, j| match (i.min(j), i.max(j)) {
        (0, 1) | (0, 2) | (1, 2) => 1.0,
        (3, 4) => 2.0,
        _ => 0.0,
    });
    let e = Spectrum::compute(&l, SpectralRoute::Eigen);
    let f = Spectrum::compute(&l, SpectralRoute::Fast);
    for s in [&e, &f] {
        assert_eq!(s.nr_components, 3);
        assert_eq!(s.lambda2, 0.0);
        assert!(close(s.reff(0, 1), 2.0 / 3.0, 1e-12));
        assert!(close(s.reff(3, 4), 0.5, 1e-12));
        assert_eq!(s.reff(0, 3), f64::INFINITY);
        assert_eq!(s.reff(5, 4), f64::INFINITY);
        assert_eq!(s.reff(5, 5), 0.0);
    }
    assert!((&e.lplus - &f.lplus).amax() < 1e-12);
    assert_eq!(tau_ns_from_lambda2(e.lambda2, 6), TAU_MAX_NS);
}

#[test]
fn single_vertex_and_empty_graph_do_not_divide_by_zero() {
    for route in [
        SpectralRoute::Auto,
        SpectralRoute::Eigen,
        SpectralRoute::Fast,
    ] {
        let s = Spectrum::compute(&DMatrix::zeros(1, 1), route);
        assert_eq!(s.lambda2, 0.0);
        assert_eq!(s.trace_lplus, 0.0);
        assert_eq!(s.mean_reff(), 0.0);
        let s = Spectrum::compute(&DMatrix::zeros(0, 0), route);
        assert_eq!(s.mean_reff(), 0.0);
    }
    assert_eq!(tau_ns_from_lambda2(0.0, 1), TAU_MIN_NS);
}

#[test]
fn auto_route_picks_by_size() {
    let small = Spectrum::compute(&complete_graph(8), SpectralRoute::Auto);
    assert_eq!(small.route, SpectralRoute::Eigen);
    let big = Spectrum::compute(&complete_graph(AUTO_EIGEN_MAX_N + 1), SpectralRoute::Auto);
    assert_eq!(big.route, SpectralRoute::Fast);
    assert!(close(big.lambda2, (AUTO_EIGEN_MAX_N + 1) as f64, 1e-9));
}
