// SPDX-License-Identifier: GPL-2.0-only
//! Time-boxed property runs for the parsers that read bytes we do not control (test builds
//! only): the procdb file decoder and the sysfs topology parser.
//!
//! Under plain `cargo test` each target runs one batch of random cases. With
//! `PANDEMONIUM_FUZZ_SECS=N` every target keeps drawing fresh batches (new seeds) for N seconds
//! and prints how many cases it ran, e.g.
//! `PANDEMONIUM_FUZZ_SECS=300 cargo test --release --lib fuzz -- --nocapture`.
//! A panic inside a case is caught, shrunk to a minimal input by proptest, and fails the test.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::fmt::Debug;
use std::time::{Duration, Instant};

const BATCH: u32 = 256;

pub fn run<S>(name: &str, strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let secs = std::env::var("PANDEMONIUM_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let t0 = Instant::now();
    let mut cases = 0u64;
    loop {
        let mut runner = TestRunner::new(Config {
            cases: BATCH,
            failure_persistence: None,
            ..Config::default()
        });
        if let Err(e) = runner.run(&strategy, &check) {
            panic!("fuzz {name}: {e}");
        }
        cases += u64::from(BATCH);
        if t0.elapsed() >= Duration::from_secs(secs) {
            break;
        }
    }
    eprintln!(
        "fuzz {name}: {cases} cases in {:.1} s, no failure",
        t0.elapsed().as_secs_f64()
    );
}
