// SPDX-License-Identifier: GPL-2.0-only
//! Times the topology pipeline per machine size.
//!
//! `cargo run --release --example topology_bench`
//!
//! Columns: sysfs detection of a generated tree (temp dir), the spectrum by
//! each route, and the full model (Laplacian + spectrum on the auto route +
//! ranks + params), which is what the scheduler pays at startup.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use scx_pandemonium::topology::{
    Live, SmtNumbering, SpectralRoute, Spectrum, SyntheticLayout, Topology, TopologyModel,
    TopologySource, write_sysfs_tree,
};

/// Repeats small cases so their timings are not pure noise.
fn time<T>(min_total: Duration, mut f: impl FnMut() -> T) -> (Duration, T) {
    let start = Instant::now();
    let mut runs = 0u32;
    loop {
        let out = f();
        runs += 1;
        if start.elapsed() >= min_total {
            return (start.elapsed() / runs, out);
        }
    }
}

fn layout(packages: u32, l3s: u32, cores: u32, threads: u32) -> SyntheticLayout {
    SyntheticLayout {
        packages,
        l3_per_package: l3s,
        cores_per_l3: cores,
        threads_per_core: threads,
        cores_per_l2: 1,
        nodes_per_package: 1,
        smt_numbering: SmtNumbering::Split,
    }
}

/// The tests' generated sysfs tree for `t`, written under `root`.
fn write_sysfs(root: &Path, t: &Topology) {
    write_sysfs_tree(t, |rel, content| {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("nested path")).expect("mkdir");
        fs::write(path, content).expect("write");
    });
}

fn ms(d: Duration) -> String {
    format!("{:9.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let cases: [(&str, SyntheticLayout); 7] = [
        ("12C Zen (2 CCX x 3 x 2)", layout(1, 2, 3, 2)),
        ("32C (4 CCX x 4 x 2)", layout(1, 4, 4, 2)),
        ("128C (2S x 4 L3 x 8 x 2)", layout(2, 4, 8, 2)),
        ("256C (2S x 64 x 2)", layout(2, 1, 64, 2)),
        ("512C (2S x 128 x 2)", layout(2, 1, 128, 2)),
        ("1024C (2S x 256 x 2)", layout(2, 1, 256, 2)),
        ("1024C (16 CCX x 32 x 2)", layout(1, 16, 32, 2)),
    ];
    let min_total = Duration::from_millis(300);
    println!(
        "{:<26}{:>6}{:>13}{:>13}{:>13}{:>13}  {:>10}{:>11}",
        "machine", "cpus", "detect", "eigen", "fast", "model", "lambda_2", "tau"
    );
    for (name, layout) in cases {
        let truth = Topology::synthetic(&layout).expect("valid layout");
        let dir = tempfile::tempdir().expect("temp dir");
        write_sysfs(dir.path(), &truth);
        let (detect, detected) = time(min_total, || {
            Topology::detect_from(dir.path()).expect("detect")
        });
        assert_eq!(detected, truth, "{name}: detection round trip");

        let l = truth.laplacian();
        let (eigen, e) = time(min_total, || Spectrum::compute(&l, SpectralRoute::Eigen));
        let (fast, f) = time(min_total, || Spectrum::compute(&l, SpectralRoute::Fast));
        assert_eq!(f.route, SpectralRoute::Fast, "{name}: fast route fell back");
        let diff = (&e.lplus - &f.lplus).amax() / e.lplus.amax();
        assert!(diff < 1e-9, "{name}: routes disagree by {diff:e}");
        assert!((e.lambda2 - f.lambda2).abs() <= 1e-9 * e.lambda2);

        let (model, m) = time(min_total, || TopologyModel::new(truth.clone()));
        println!(
            "{:<26}{:>6}{}{}{}{}  {:>10.3}{:>8.3} ms",
            name,
            truth.online.len(),
            ms(detect),
            ms(eigen),
            ms(fast),
            ms(model),
            m.spectrum.lambda2,
            m.tau_ns as f64 / 1e6
        );
    }

    if Path::new("/sys/devices/system/cpu/online").exists() {
        // The daemon's reader, so the column is what the scheduler pays.
        let (detect, t) = time(min_total, || Live.topology());
        match t {
            Ok(t) => {
                let m = TopologyModel::new(t);
                println!("\nthis machine (/sys, detect {}):\n{m}", ms(detect).trim());
            }
            Err(e) => println!("\nthis machine: detection failed: {e:#}"),
        }
    }
}
