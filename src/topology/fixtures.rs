// SPDX-License-Identifier: GPL-2.0-only
//! Test fixtures shared by every `topology` test module: generated sysfs
//! trees, the reference machines and random / closed-form graphs.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use nalgebra::DMatrix;

use super::{
    SmtNumbering, SpectralRoute, SyntheticLayout, Topology, laplacian_from_fn, write_sysfs_tree,
};

// Fixture sysfs trees

/// A sysfs tree in a temp dir, written from a [`Topology`] so a fixture is a
/// one-line layout instead of hundreds of hand-written files.
pub(super) struct Sysfs {
    dir: tempfile::TempDir,
}

impl Sysfs {
    pub(super) fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub(super) fn put(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    pub(super) fn rm(&self, rel: &str) {
        let path = self.path(rel);
        if path.is_dir() {
            fs::remove_dir_all(path).unwrap();
        } else {
            fs::remove_file(path).unwrap();
        }
    }

    pub(super) fn detect(&self) -> Result<Topology> {
        Topology::detect_from(self.root())
    }
}

pub(super) fn write_sysfs(t: &Topology) -> Sysfs {
    let fx = Sysfs {
        dir: tempfile::tempdir().unwrap(),
    };
    write_sysfs_tree(t, |rel, content| fx.put(rel, content));
    fx
}

pub(super) fn layout(
    packages: u32,
    l3_per_package: u32,
    cores_per_l3: u32,
    threads_per_core: u32,
    cores_per_l2: u32,
    nodes_per_package: u32,
) -> SyntheticLayout {
    SyntheticLayout {
        packages,
        l3_per_package,
        cores_per_l3,
        threads_per_core,
        cores_per_l2,
        nodes_per_package,
        smt_numbering: SmtNumbering::Split,
    }
}

/// The reference machines. 4C shares an L2 per core pair (a module/cluster
/// design), so "slot 0 is the L2 sibling" is meaningful without SMT.
pub(super) fn fixtures() -> Vec<(&'static str, SyntheticLayout)> {
    vec![
        ("2C (1 core x 2 SMT)", SyntheticLayout::simple(1, 1, 2)),
        ("4C (L2 per core pair)", layout(1, 1, 4, 1, 2, 1)),
        ("8C (4 cores x 2 SMT)", SyntheticLayout::simple(1, 4, 2)),
        ("12C Zen (2 CCX x 3 x 2)", SyntheticLayout::simple(2, 3, 2)),
        ("32C 2 sockets (2 x 8 x 2)", layout(2, 1, 8, 2, 1, 1)),
        (
            "32C 1 socket (4 CCX x 4 x 2)",
            SyntheticLayout::simple(4, 4, 2),
        ),
        (
            "128C 2 sockets (2 x 4 L3 x 8 x 2)",
            layout(2, 4, 8, 2, 1, 1),
        ),
    ]
}

pub(super) fn synth(layout: SyntheticLayout) -> Topology {
    Topology::synthetic(&layout).unwrap()
}

pub(super) fn sysfs_8c() -> Sysfs {
    write_sysfs(&synth(SyntheticLayout::simple(1, 4, 2)))
}

/// 8C with cpu3 and cpu5 hot-unplugged: the kernel drops them from `online`
/// and removes their topology and cache directories; the survivors' sharing
/// lists still name them here to prove they are filtered.
pub(super) fn sysfs_8c_holes() -> Sysfs {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/online", "0-2,4,6-7\n");
    fx.rm("devices/system/cpu/cpu3");
    fx.rm("devices/system/cpu/cpu5");
    fx
}

pub(super) fn err_text(r: Result<Topology>) -> String {
    format!("{:#}", r.expect_err("expected a detection error"))
}

// Graphs

pub(super) use crate::prng::XorShift64 as Rng;

/// Random weighted graph: a random spanning tree (so it is connected) plus
/// each other edge with probability `density`, weights in (0, 5].
pub(super) fn random_graph(n: usize, density: f64, rng: &mut Rng) -> DMatrix<f64> {
    let mut w = DMatrix::<f64>::zeros(n, n);
    for v in 1..n {
        let parent = (rng.next_u64() % v as u64) as usize;
        let x = 5.0 * rng.unit();
        w[(v, parent)] = x;
        w[(parent, v)] = x;
    }
    for i in 0..n {
        for j in 0..i {
            if w[(i, j)] == 0.0 && rng.unit() < density {
                let x = 5.0 * rng.unit();
                w[(i, j)] = x;
                w[(j, i)] = x;
            }
        }
    }
    laplacian_from_fn(n, |i, j| w[(i, j)])
}

pub(super) fn path_graph(n: usize) -> DMatrix<f64> {
    laplacian_from_fn(n, |i, j| if i.abs_diff(j) == 1 { 1.0 } else { 0.0 })
}

pub(super) fn cycle_graph(n: usize) -> DMatrix<f64> {
    laplacian_from_fn(n, |i, j| {
        let d = i.abs_diff(j);
        if d == 1 || d == n - 1 { 1.0 } else { 0.0 }
    })
}

pub(super) fn complete_graph(n: usize) -> DMatrix<f64> {
    laplacian_from_fn(n, |_, _| 1.0)
}

pub(super) fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

pub(super) const ROUTES: [SpectralRoute; 2] = [SpectralRoute::Eigen, SpectralRoute::Fast];
