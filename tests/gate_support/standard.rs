// SPDX-License-Identifier: GPL-2.0-only
//! The `interactive` layer: the field's standard tools beside the field's standard load, against
//! EEVDF in the same boot. cyclictest (`--policy=other`: RT tasks never reach a sched_ext
//! scheduler) measures how late a periodic SCHED_OTHER task wakes; hackbench measures how fast
//! many short-lived communicating tasks get through. Both run beside 2 pure busy loops per CPU
//! (`while :; do :; done`: no yield that would hand the scheduler a decision point). This is the
//! regression guard for issue #15's gap (cyclictest P99 3-4x EEVDF, hackbench 10x); the figures
//! the issue judges come from bench-scale, with three iterations.

use super::*;
use std::process::{Child, Command, Stdio};

const MS: u64 = 1_000_000;
/// cyclictest's histogram: 1 us buckets up to this; later samples count as overflows. Printing
/// 100 000 rows costs ~14 s of TCG time, 30 000 covers every wait seen in the VM.
const HIST_US: u64 = 30_000;
const CYCLIC_SECS: u64 = 5;

/// 2 busy loops per online CPU, killed on drop.
pub struct BusyLoops(Vec<Child>);

impl BusyLoops {
    pub fn start() -> BusyLoops {
        let n = 2 * online_cpus().len();
        BusyLoops(
            (0..n)
                .map(|_| {
                    Command::new("/bin/sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("starting a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Where a sample past the histogram counts: at its end (a floor: EEVDF's side of a bound) or at
/// the largest latency cyclictest reports (a ceiling: ours, so the cap never flatters it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overflow {
    AtHistogramEnd,
    AtMax,
}

fn numbers(rest: &str) -> impl Iterator<Item = u64> + '_ {
    rest.split_whitespace()
        .filter_map(|w| w.parse::<u64>().ok())
}

/// P50 and P99 (ns) of cyclictest's histogram output, all threads together; a sample past the
/// histogram counts as `overflow` says.
pub fn cyclictest_percentiles(out: &str, overflow: Overflow) -> Option<(u64, u64, u64)> {
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    let (mut overflows, mut max_us) = (0, HIST_US);
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("# Histogram Overflows:") {
            overflows += numbers(rest).sum::<u64>();
            continue;
        }
        if let Some(rest) = line.strip_prefix("# Max Latencies:") {
            max_us = numbers(rest).fold(max_us, u64::max);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace().map(|w| w.parse::<u64>().ok());
        let Some(Some(us)) = words.next() else {
            continue;
        };
        let count: u64 = words.map(|w| w.unwrap_or(0)).sum();
        if count > 0 {
            buckets.push((us, count));
        }
    }
    let overflow_us = match overflow {
        Overflow::AtHistogramEnd => HIST_US,
        Overflow::AtMax => max_us,
    };
    buckets.push((overflow_us, overflows));
    buckets.sort_unstable();
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    if total == 0 {
        return None;
    }
    let at = |q: u64| {
        let mut seen = 0;
        buckets
            .iter()
            .find(|(_, c)| {
                seen += c;
                seen * 100 >= total * q
            })
            .map(|b| b.0 * 1000)
            .unwrap_or(overflow_us * 1000)
    };
    Some((at(50), at(99), total))
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (is it in the guest's PATH?)"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// hackbench runs per measurement; the bound takes their median. One run is a second or two,
/// and under tcg-single on a 2-core host one EEVDF bracket read 0.96 / 1.99 s back to back: with
/// 3 runs one slow spell of the host moved a median by half.
const HACKBENCH_RUNS: usize = 5;

#[derive(Debug, Clone)]
struct Figures {
    cyclic_p50_ns: u64,
    cyclic_p99_ns: u64,
    /// Median of `hackbench_runs`.
    hackbench_s: f64,
    hackbench_runs: Vec<f64>,
}

fn hackbench_once() -> f64 {
    let out = run(
        Command::new("hackbench").args(["-P", "-g", "2", "-l", "50"]),
        "hackbench",
    );
    out.lines()
        .find_map(|l| l.strip_prefix("Time:"))
        .and_then(|t| t.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("hackbench printed no time: {out}"))
}

/// One measurement beside busy loops: cyclictest, then hackbench.
fn measure(overflow: Overflow) -> Figures {
    let n = online_cpus().len().to_string();
    let _busy = BusyLoops::start();
    std::thread::sleep(Duration::from_secs(1));
    let out = run(
        Command::new("cyclictest").args([
            "--policy=other",
            "-q",
            "-m",
            "-t",
            &n,
            "-i",
            "10000",
            "-D",
            &CYCLIC_SECS.to_string(),
            "-h",
            &HIST_US.to_string(),
        ]),
        "cyclictest",
    );
    let (p50, p99, samples) =
        cyclictest_percentiles(&out, overflow).expect("cyclictest printed no samples");
    assert!(samples > 100, "cyclictest: only {samples} samples");
    let runs: Vec<f64> = (0..HACKBENCH_RUNS).map(|_| hackbench_once()).collect();
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    Figures {
        cyclic_p50_ns: p50,
        cyclic_p99_ns: p99,
        hackbench_s: sorted[HACKBENCH_RUNS / 2],
        hackbench_runs: runs,
    }
}

fn show(f: &Figures) -> String {
    format!(
        "cyclictest P50 {:.0} us P99 {:.0} us, hackbench median {:.2} s ({} s)",
        f.cyclic_p50_ns as f64 / 1e3,
        f.cyclic_p99_ns as f64 / 1e3,
        f.hackbench_s,
        slashed(&f.hackbench_runs, |s| format!("{s:.2}"))
    )
}

/// hackbench is the median of [`HACKBENCH_RUNS`] runs each. Since synchronous wakeups stopped
/// preempting and consumers queue behind their producers, ours read 0.54-0.88x the worse EEVDF
/// median in sixteen gates at 2 and 4 vCPUs on an earlier host. On a noisier one (tcg-single,
/// 2 vCPUs) it read 0.70-1.96x, median 1.33x, in ten gates while queue waits lowered the
/// workers' rates (own_interval(), classify.bpf.h), and 0.53-1.30x, median 0.99x, in twelve
/// since, some boots reading ours steadily near 2.0 s against EEVDF's 1.2-1.6 s (not traced
/// yet); under tcg-icount, where the host cannot move a figure, 1.00-1.05x. 1.5x catches the
/// old loop's worst and a loss to the fair class by half again, not that spread.
const HACKBENCH_BOUND: f64 = 1.5;

/// cyclictest's P99 bound: 1.5x the worse EEVDF run, plus 1 ms for the histogram's and a tick's
/// granularity at small values. Ours read 0.45-0.84x that run in gates at 2 and 4 vCPUs under
/// tcg-single on an earlier host, when the bound was 0.9x. On a noisier one (CI's, 2 vCPUs)
/// EEVDF's own P99 moved from 7.8 to 30 ms between the two brackets of one boot, and ours read
/// 0.43-1.04x the worse of them in ten gates before the classifier's rates left queue waits out
/// and 0.21-1.40x in twelve after (ours 4.5-14.7 ms, 5.6-12.3 before); under tcg-icount up to
/// 1.36x once. So the bound catches losing to the fair class by half again, as the latency
/// layer's does, not the noise. An EEVDF P99 at the histogram's end is only a floor of the real
/// one, which the same 1.5x leaves room for.
fn cyclictest_bound_ns(eevdf_p99_ns: u64) -> u64 {
    eevdf_p99_ns * 3 / 2 + MS
}

/// EEVDF, then pandemonium, then EEVDF again in the same boot. The bounds take the worse EEVDF
/// bracket (EEVDF alone moves up to 2x between runs in one TCG boot) with room for that noise:
/// they catch losing to the fair class, not the last 10 %.
pub fn layer_interactive() {
    require_gate_environment();
    let eevdf_a = measure(Overflow::AtHistogramEnd);
    let mut sched = SchedulerProc::start(&[]);
    sched.wait_attached();
    let pand = measure(Overflow::AtMax);
    sched.stop();
    let eevdf_b = measure(Overflow::AtHistogramEnd);
    eprintln!(
        "gate interactive: beside {} busy loops: pandemonium {}; EEVDF {} / {} (first / last)",
        2 * online_cpus().len(),
        show(&pand),
        show(&eevdf_a),
        show(&eevdf_b)
    );
    let eevdf_p99 = eevdf_a.cyclic_p99_ns.max(eevdf_b.cyclic_p99_ns);
    let bound = cyclictest_bound_ns(eevdf_p99);
    assert!(
        pand.cyclic_p99_ns <= bound,
        "cyclictest P99 {} us exceeds the bound from the worse EEVDF run ({} us)",
        pand.cyclic_p99_ns / 1000,
        bound / 1000
    );
    let eevdf_hb = eevdf_a.hackbench_s.max(eevdf_b.hackbench_s);
    assert!(
        pand.hackbench_s <= eevdf_hb * HACKBENCH_BOUND,
        "hackbench median {:.2} s exceeds {HACKBENCH_BOUND}x the worse EEVDF median ({:.2} s)",
        pand.hackbench_s,
        eevdf_hb
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cyclictest_bound_is_half_again_eevdfs_p99_and_a_millisecond() {
        assert_eq!(cyclictest_bound_ns(8 * MS), 13 * MS);
        assert_eq!(cyclictest_bound_ns(HIST_US * 1000), 46 * MS);
    }

    #[test]
    fn percentiles_count_every_thread_and_the_overflows() {
        let out = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000100 000090\t000000\n\
                   000200 000000\t000009\n# Total: 000000090 000000010\n\
                   # Histogram Overflows: 00000 00001\n";
        let (p50, p99, n) = cyclictest_percentiles(out, Overflow::AtHistogramEnd).unwrap();
        assert_eq!(n, 100);
        assert_eq!(p50, 100_000);
        assert_eq!(p99, 200_000);
        let out = "# Histogram\n000100 000098\n# Histogram Overflows: 00002\n";
        let p99 = |o| cyclictest_percentiles(out, o).unwrap().1;
        assert_eq!(p99(Overflow::AtHistogramEnd), HIST_US * 1000);
        assert!(cyclictest_percentiles("# Histogram\n", Overflow::AtMax).is_none());
    }

    #[test]
    fn overflows_count_at_the_reported_max_for_the_side_that_must_not_be_flattered() {
        let out = "# Histogram\n000100 000098\n# Histogram Overflows: 00001 00001\n\
                   # Max Latencies: 41000 52000\n";
        let p99 = |o| cyclictest_percentiles(out, o).unwrap().1;
        assert_eq!(p99(Overflow::AtHistogramEnd), HIST_US * 1000);
        assert_eq!(p99(Overflow::AtMax), 52_000_000);
        // A max inside the histogram never pulls an overflow below its end.
        let out =
            "# Histogram\n000100 000098\n# Histogram Overflows: 00002\n# Max Latencies: 00120\n";
        assert_eq!(
            cyclictest_percentiles(out, Overflow::AtMax).unwrap().1,
            HIST_US * 1000
        );
    }
}
