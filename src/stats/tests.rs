// SPDX-License-Identifier: GPL-2.0-only
//! Host tests of the statistics: descriptions, JSON shape, the conversion from BPF's counters,
//! the monitor's text, and a real server/client round trip over a socket in a temp directory.

use super::*;
use crate::bpf_intf::{TopoParams, TuningKnobs};
use crate::codel::Oscillator;
use crate::telemetry::Snapshot;
use crate::topology::derive_params;
use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};
use std::time::Duration;

fn topo() -> TopoParams {
    TopoParams {
        codel_eq_ns: 600_000,
        ..derive_params(8_000_000, 4, 4).bpf
    }
}

fn snapshots() -> (Snapshot, Snapshot) {
    let mut prev = Snapshot::default();
    prev.stats.nr_dispatches = 1_000;
    prev.hist.wake_lat[0][10] = 500; // history before the last second must not count
    let mut cur = prev;
    cur.stats.nr_dispatches = 3_000;
    cur.stats.l2_hit = [1, 2, 3];
    cur.stats.l2_miss = [4, 5, 6];
    cur.stats.nr_overflow_rescue = 7;
    cur.hist.wake_lat[0][20] = 100; // BATCH: 100 new samples in [2^20, 2^21)
    cur.hist.wake_lat[2][12] = 99; // LAT_CRITICAL: 99 at [2^12, 2^13), 1 at [2^15, 2^16)
    cur.hist.wake_lat[2][15] = 1;
    cur.codel = Oscillator {
        x: 450_000,
        v: -1_234,
    };
    cur.nr_codel_stalls = 9;
    (prev, cur)
}

fn metrics(adaptive: bool) -> PandemoniumMetrics {
    let (prev, cur) = snapshots();
    let mut weights = [0.0; crate::tuning::NR_EXPERTS];
    weights[0] = 1.0;
    PandemoniumMetrics::of(&Sample {
        at_ms: 5_000,
        prev: &prev,
        cur: &cur,
        knobs: TuningKnobs::defaults(),
        topo: topo(),
        tau_ns: 8_000_000,
        longrun: true,
        mode: crate::tuning::Mode::Server,
        adaptive: adaptive.then(|| ("HEAVY+LONGRUN".to_string(), weights)),
        cgroup_cpu_pct: [("/system.slice/a.service", 3.5), ("/gate/hog", 48.25)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    })
}

#[test]
fn every_field_is_described_and_serialized() {
    let meta = PandemoniumMetrics::meta();
    assert_eq!(meta.attrs.top.as_deref(), Some("true"));
    let json = metrics(true).to_json().unwrap();
    let obj = json.as_object().unwrap();
    for (name, f) in &meta.fields {
        let desc = f.attrs.desc.as_deref().unwrap_or("");
        assert!(desc.len() >= 10, "{name} has no real description: {desc:?}");
        assert!(
            obj.contains_key(name),
            "{name} is described but not serialized"
        );
    }
    for name in obj.keys() {
        assert!(
            meta.fields.contains_key(name),
            "{name} is serialized but not described"
        );
    }
    // Counters are marked for rates; gauges are not.
    let counter = |n: &str| meta.fields[n].attrs.user.contains_key(COUNTER_ATTR);
    assert!(counter("nr_dispatches") && counter("l2_hit") && counter("nr_codel_stalls"));
    assert!(!counter("codel_target_ns") && !counter("wake_lat_max_ns") && !counter("regime"));
    assert!(!counter("cgroup_cpu_pct"));
    let ranked = |n: &str| meta.fields[n].attrs.user.contains_key(RANKED_ATTR);
    assert!(ranked("cgroup_cpu_pct") && !ranked("mwu_weights") && !ranked("l2_hit"));
}

#[test]
fn help_text_names_every_field() {
    let mut out = Vec::new();
    describe(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("[PandemoniumMetrics]"), "{text}");
    for (name, f) in &PandemoniumMetrics::meta().fields {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing from:\n{text}"));
        assert!(line.contains(f.attrs.desc.as_deref().unwrap()), "{line}");
    }
}

#[test]
fn conversion_from_bpf_counters_and_adaptive_state() {
    let m = metrics(true);
    assert_eq!((m.at_ms, m.adaptive, m.longrun), (5_000, 1, 1));
    assert_eq!(m.regime, "HEAVY+LONGRUN");
    assert_eq!(m.mode, "server");
    assert_eq!((m.nr_dispatches, m.nr_overflow_rescue), (3_000, 7));
    assert_eq!(m.l2_hit["BATCH"], 1);
    assert_eq!(m.l2_hit["LAT_CRITICAL"], 3);
    assert_eq!(m.l2_miss["INTERACTIVE"], 5);
    // P99 of the last second only, per tier; INTERACTIVE had no wakeups and is absent.
    assert_eq!(m.wake_p99_ns.get("BATCH"), Some(&((2 << 20) - 1)));
    assert_eq!(m.wake_p99_ns.get("LAT_CRITICAL"), Some(&((2 << 12) - 1)));
    assert!(!m.wake_p99_ns.contains_key("INTERACTIVE"));
    assert_eq!(m.mwu_weights.len(), crate::tuning::NR_EXPERTS);
    assert_eq!(m.mwu_weights["LATENCY"], 1.0);
    assert_eq!(m.knob_slice_ns, TuningKnobs::defaults().slice_ns);
    assert_eq!(m.topology_tau_ns, 8_000_000);
    assert_eq!((m.codel_target_ns, m.codel_velocity_ns), (450_000, -1_234));
    assert_eq!(m.codel_eq_ns, 600_000);
    assert_eq!(m.codel_floor_ns, topo().codel_target_floor_ns);
    assert_eq!(m.codel_max_ns, topo().codel_target_max_ns);
    assert_eq!(m.nr_codel_stalls, 9);
    assert_eq!(m.cgroup_cpu_pct["/gate/hog"], 48.25);
    assert_eq!(m.cgroup_cpu_pct.len(), 2);
}

#[test]
fn without_the_adaptive_loop_its_fields_are_marked_or_absent() {
    let m = metrics(false);
    assert_eq!((m.adaptive, m.regime.as_str()), (0, NO_REGIME));
    assert!(m.mwu_weights.is_empty());
    // BPF-side figures are still there.
    assert_eq!(m.nr_dispatches, 3_000);
    let json = m.to_json().unwrap();
    assert_eq!(json["mwu_weights"], serde_json::json!({}));
    assert_eq!(json["regime"], "-");
}

#[test]
fn uninitialised_oscillator_reports_the_equilibrium() {
    let (prev, mut cur) = snapshots();
    cur.codel = Oscillator::default();
    let m = PandemoniumMetrics::of(&Sample {
        at_ms: 0,
        prev: &prev,
        cur: &cur,
        knobs: TuningKnobs::defaults(),
        topo: topo(),
        tau_ns: 8_000_000,
        longrun: false,
        mode: crate::tuning::Mode::Auto,
        adaptive: None,
        cgroup_cpu_pct: Default::default(),
    });
    assert_eq!(m.codel_target_ns, 600_000);
}

#[test]
fn json_round_trips_through_the_client_type() {
    let m = metrics(true);
    let back: PandemoniumMetrics = serde_json::from_value(m.to_json().unwrap()).unwrap();
    assert_eq!(back, m);
}

fn line<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in:\n{text}"))
}

#[test]
fn block_prints_every_field_with_rates_for_counters() {
    let meta = PandemoniumMetrics::meta();
    let a = metrics(true).to_json().unwrap();
    let mut later = metrics(true);
    later.at_ms += 2_000;
    later.nr_dispatches += 4_000;
    *later.l2_hit.get_mut("BATCH").unwrap() += 10;
    later.codel_target_ns = 500_000;
    let b = later.to_json().unwrap();

    let first = block(&meta, None, &a);
    assert!(first.starts_with(BLOCK_HEADER), "{first}");
    assert_eq!(
        line(&first, "nr_dispatches").split_whitespace().nth(1),
        Some("3000")
    );
    assert!(
        !first.contains("/s)"),
        "no rates without a previous sample:\n{first}"
    );

    let text = block(&meta, Some(&a), &b);
    assert!(text.contains("(rates over 2.0 s)"), "{text}");
    assert_eq!(text.lines().count(), meta.fields.len() + 1);
    assert!(
        line(&text, "nr_dispatches").ends_with("7000 (+2000/s)"),
        "{text}"
    );
    assert!(line(&text, "l2_hit").contains("BATCH=11(+5/s)"), "{text}");
    assert!(
        line(&text, "codel_target_ns").ends_with(" 500000"),
        "{text}"
    );
    assert!(
        line(&text, "mwu_weights").contains("LATENCY=1.000"),
        "{text}"
    );
    assert!(line(&text, "regime").ends_with("HEAVY+LONGRUN"), "{text}");
    // Largest share first, not in key order.
    assert!(
        line(&text, "cgroup_cpu_pct").ends_with(" /gate/hog=48.250 /system.slice/a.service=3.500"),
        "{text}"
    );

    // A reload (hotplug restart) starts the counters again; say so instead of a huge rate.
    let mut reloaded = later.clone();
    reloaded.at_ms += 1_000;
    reloaded.nr_dispatches = 5;
    let text = block(&meta, Some(&b), &reloaded.to_json().unwrap());
    assert!(
        line(&text, "nr_dispatches").ends_with("5 (reset)"),
        "{text}"
    );

    let mut quiet = metrics(false);
    quiet.cgroup_cpu_pct.clear();
    let quiet = block(&meta, None, &quiet.to_json().unwrap());
    assert!(line(&quiet, "mwu_weights").ends_with(" -"), "{quiet}");
    assert!(line(&quiet, "cgroup_cpu_pct").ends_with(" -"), "{quiet}");
}

#[test]
fn interval_parsing() {
    assert_eq!(parse_interval("1"), Ok(1.0));
    assert_eq!(parse_interval("0.5"), Ok(0.5));
    for bad in ["0", "-1", "nan", "inf", "abc", "100000"] {
        assert!(parse_interval(bad).is_err(), "{bad}");
    }
}

fn temp_socket() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scx/root/stats");
    (dir, path)
}

#[test]
fn monitor_without_a_server_says_none_runs() {
    let (_dir, path) = temp_socket();
    let err = Monitor::connect(&path).err().expect("connected to nothing");
    let msg = format!("{err:#}");
    assert!(msg.contains("no scx_pandemonium is running"), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
}

#[test]
fn server_and_monitor_round_trip() {
    let (_dir, path) = temp_socket();
    let publisher = Publisher::default();
    let _server = launch(publisher.clone(), &path).unwrap();
    let mut mon = Monitor::connect(&path).unwrap();
    // Still loading: nothing to print, and the connection stays usable.
    assert_eq!(mon.poll().unwrap(), None);
    publisher.publish(metrics(true));
    let first = mon.poll().unwrap().expect("a block");
    assert!(line(&first, "nr_dispatches").ends_with(" 3000"), "{first}");
    // The daemon has not sampled again: the same sample is not printed twice.
    assert_eq!(mon.poll().unwrap(), None);
    let mut later = metrics(true);
    later.at_ms += 1_000;
    later.nr_dispatches += 500;
    publisher.publish(later);
    let mut printed = Vec::new();
    let calls = std::cell::Cell::new(0);
    mon.run(
        Duration::from_millis(100),
        || {
            calls.set(calls.get() + 1);
            calls.get() > 1
        },
        |t| {
            printed.push(t.to_string());
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(printed.len(), 1);
    assert!(
        line(&printed[0], "nr_dispatches").ends_with("3500 (+500/s)"),
        "{}",
        printed[0]
    );
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, Stats)]
#[stat(top, desc = "some other scheduler")]
struct OtherMetrics {
    #[stat(desc = "a counter of another scheduler")]
    nr_things: u64,
}

#[test]
fn monitor_refuses_another_schedulers_server() {
    let (_dir, path) = temp_socket();
    let data = StatsServerData::<(), ()>::new()
        .add_meta(OtherMetrics::meta())
        .add_stats("top", Box::new(|_, _| OtherMetrics::default().to_json()));
    let _server = StatsServer::new(data).set_path(&path).launch().unwrap();
    let msg = format!("{:#}", Monitor::connect(&path).err().expect("accepted"));
    assert!(
        msg.contains("belongs to another sched_ext scheduler"),
        "{msg}"
    );
    assert!(msg.contains("OtherMetrics"), "{msg}");
}
