// SPDX-License-Identifier: GPL-2.0-only
//! The modes: their documented values, auto's identity with the scheduler without a mode, and
//! the adaptive loop keeping each mode's character instead of tuning it away.

use super::*;
use crate::tuning::mode_log::startup_lines;
use crate::tuning::tests::{MS, Rng, TAU, calm, random_input, storm, with_io};
use crate::tuning::{TickInput, Tuner, regime_knobs};

const US: u64 = 1_000;

/// Knobs in [`Knob::ALL`] order, then the affinity mode.
fn knobs(v: [u64; NR_KNOBS], affinity: AffinityMode) -> TuningKnobs {
    let mut k = TuningKnobs {
        affinity_mode: affinity as u64,
        ..TuningKnobs::default()
    };
    for knob in Knob::ALL {
        knob.set(&mut k, v[knob as usize]);
    }
    k
}

/// The table in README.md's Usage and in systemd/README.md: a change here is a change there.
#[test]
fn each_mode_writes_its_documented_knobs() {
    use AffinityMode::{Strong, Weak};
    let table = [
        (Mode::Auto, [MS, MS, 4, 20 * MS, MS, 32, 8], Weak),
        (
            Mode::Gaming,
            [2 * MS, 500 * US, 6, 20 * MS, 2 * MS, 16, 4],
            Weak,
        ),
        (
            Mode::LowLatency,
            [500 * US, 500 * US, 6, 10 * MS, 500 * US, 24, 6],
            Weak,
        ),
        (
            Mode::PowerSave,
            [2 * MS, 2 * MS, 4, 40 * MS, 2 * MS, 32, 8],
            Strong,
        ),
        (Mode::Server, [MS, 2 * MS, 2, 40 * MS, MS, 48, 12], Weak),
    ];
    for (mode, values, affinity) in table {
        let want = TuningKnobs {
            pack: u64::from(mode == Mode::PowerSave),
            ..knobs(values, affinity)
        };
        assert_eq!(mode.knobs(), want, "{mode}");
    }
}

#[test]
fn auto_is_the_scheduler_without_a_mode() {
    assert_eq!(Mode::default(), Mode::Auto);
    assert_eq!(Mode::Auto.knobs(), TuningKnobs::defaults());
    assert_eq!(*Mode::Auto.rails(), RAILS);
    assert!(Mode::Auto.preset().compositors.is_empty());
    for r in Regime::ALL {
        for tau in [0, 1, 2 * MS, TAU, 1_000_000_000, u64::MAX] {
            assert_eq!(
                Mode::Auto.baseline(r, tau),
                scaled_regime_knobs(r, tau),
                "{r:?} {tau}"
            );
        }
    }
    // Shaping by auto is the identity on any knobs, not just on the ones above.
    let mut rng = Rng(0x5eed);
    for _ in 0..1000 {
        let k = knobs(
            std::array::from_fn(|_| rng.next_u64() >> rng.below(64)),
            AffinityMode::Off,
        );
        assert_eq!(Mode::Auto.shape(k), k);
    }
}

#[test]
fn auto_ticks_exactly_as_before() {
    let mut r = Rng(0x0bad_cafe);
    let (mut plain, mut auto) = (Tuner::new(), Tuner::with_mode(Mode::Auto));
    for i in 0..5_000 {
        let t = random_input(&mut r);
        assert_eq!(plain.tick(&t), auto.tick(&t), "tick {i}");
    }
}

#[test]
fn every_modes_rails_are_a_satisfiable_narrowing_of_the_standard_ones() {
    for m in Mode::ALL {
        let rails = m.rails();
        assert!(rails.is_narrowing_of(&RAILS), "{m}: {rails:?}");
        let k = m.knobs();
        assert!(rails.within(&k), "{m}: {k:?}");
        assert!(RAILS.within(&k), "{m}: {k:?}");
        // Nothing in the documented values is an artefact of clamping.
        assert_eq!(m.shape(TuningKnobs::defaults()), k, "{m}");
    }
}

#[test]
fn mode_compositor_names_are_comm_names_the_default_list_lacks() {
    for m in Mode::ALL {
        for name in m.preset().compositors {
            crate::compositor::validate(name).unwrap();
            assert!(
                !crate::compositor::DEFAULT_COMPOSITORS.contains(name),
                "{name}"
            );
        }
    }
}

/// The policies beyond knobs belong to one mode each, and its startup log names them.
#[test]
fn only_gaming_boosts_games_and_only_powersave_packs_and_the_log_says_so() {
    type Flag = fn(&super::Preset) -> bool;
    let policies: [(Flag, Mode, &str); 2] = [
        (
            |p| p.boost_games,
            Mode::Gaming,
            "every thread of a game Steam launched",
        ),
        (|p| p.pack, Mode::PowerSave, "before it wakes an idle core"),
    ];
    for (flag, owner, text) in policies {
        for m in Mode::ALL {
            assert_eq!(flag(m.preset()), m == owner, "{m}");
            let said = startup_lines(m, true).iter().any(|l| l.contains(text));
            assert_eq!(said, m == owner, "{m}: {text}");
        }
    }
}

/// `--autopower`'s switch: the tick after `set_mode` writes the new mode's packing and rails,
/// the tick after switching back auto's again, and what the loop learned carries over.
#[test]
fn a_mode_switch_takes_effect_at_the_next_tick() {
    let mut tuner = Tuner::with_mode(Mode::Auto);
    for _ in 0..5 {
        tuner.tick(&calm());
    }
    let auto = tuner.tick(&calm()).knobs;
    assert_eq!(auto.pack, 0);
    let weights = *tuner.weights();
    tuner.set_mode(Mode::PowerSave);
    assert_eq!(*tuner.weights(), weights);
    let saving = tuner.tick(&calm()).knobs;
    assert_eq!(saving.pack, 1);
    assert_eq!(saving.affinity_mode, AffinityMode::Strong as u64);
    let centre = |m: Mode| m.rails().enforce(m.baseline(Regime::Mixed, TAU));
    assert_eq!(
        (auto, saving),
        (centre(Mode::Auto), centre(Mode::PowerSave))
    );
    assert_eq!(saving.slice_ns, 2 * auto.slice_ns);
    tuner.set_mode(Mode::Auto);
    assert_eq!(tuner.tick(&calm()).knobs, auto);
}

#[test]
fn every_regime_baseline_is_shaped_by_the_mode() {
    for m in Mode::ALL {
        for r in Regime::ALL {
            let (auto, mine) = (regime_knobs(r), m.baseline(r, 0));
            assert_eq!(
                mine.batch_slice_ns,
                m.preset().scale[Knob::BatchSlice as usize].of(auto.batch_slice_ns)
            );
        }
    }
    assert_eq!(
        Mode::PowerSave.baseline(Regime::Heavy, TAU).affinity_mode,
        AffinityMode::Strong as u64
    );
}

fn settle(mode: Mode, t: &TickInput) -> TuningKnobs {
    let mut tuner = Tuner::with_mode(mode);
    let mut k = tuner.tick(t).knobs;
    for _ in 0..10 {
        k = tuner.tick(t).knobs;
    }
    k
}

#[test]
fn the_loop_centres_on_the_modes_baseline() {
    for m in Mode::ALL {
        let k = settle(m, &calm());
        assert_eq!(k, m.rails().enforce(m.baseline(Regime::Mixed, TAU)), "{m}");
    }
    // A server keeps its long batch slice: the loop does not reset it to auto's a tick later.
    assert_eq!(settle(Mode::Auto, &calm()).batch_slice_ns, 20 * MS);
    assert_eq!(settle(Mode::Server, &calm()).batch_slice_ns, 40 * MS);
    assert_eq!(settle(Mode::LowLatency, &calm()).slice_ns, 500 * US);
}

#[test]
fn what_shortens_batch_slices_in_auto_stops_at_the_server_and_powersave_floor() {
    let io = with_io(calm(), 85);
    assert_eq!(settle(Mode::Auto, &io).batch_slice_ns, 10 * MS);
    assert_eq!(settle(Mode::Server, &io).batch_slice_ns, 20 * MS);
    assert_eq!(settle(Mode::PowerSave, &io).batch_slice_ns, 20 * MS);
    let fork = storm(3);
    assert!(settle(Mode::Auto, &fork).batch_slice_ns < 20 * MS);
    assert!(settle(Mode::Auto, &fork).preempt_thresh_ns < MS);
    let server = settle(Mode::Server, &fork);
    assert!(server.batch_slice_ns >= 20 * MS && server.preempt_thresh_ns >= MS);
}

#[test]
fn random_input_never_takes_a_mode_off_its_rails() {
    for (i, m) in Mode::ALL.into_iter().enumerate() {
        let mut r = Rng(0x1234_5678 + i as u64);
        let mut tuner = Tuner::with_mode(m);
        for tick in 0..5_000 {
            let k = tuner.tick(&random_input(&mut r)).knobs;
            assert!(m.rails().within(&k), "{m} tick {tick}: {k:?}");
        }
    }
}

#[test]
fn powersave_keeps_strong_affinity_through_storms_and_longrun() {
    let mut t = storm(3);
    t.longrun = true;
    let mut tuner = Tuner::with_mode(Mode::PowerSave);
    for _ in 0..10 {
        let k = tuner.tick(&t).knobs;
        assert_eq!(k.affinity_mode, AffinityMode::Strong as u64);
    }
}

#[test]
fn mode_names_parse_in_every_spelling_and_bad_ones_say_what_to_use() {
    for m in Mode::ALL {
        assert_eq!(Mode::parse(m.name()), Ok(m));
        assert_eq!(m.to_string(), m.name());
    }
    // scx_loader's own names for its modes.
    assert_eq!(Mode::parse("LowLatency"), Ok(Mode::LowLatency));
    assert_eq!(Mode::parse("PowerSave"), Ok(Mode::PowerSave));
    assert_eq!(Mode::parse("low-latency"), Ok(Mode::LowLatency));
    assert_eq!(Mode::parse("GAMING"), Ok(Mode::Gaming));

    let err = Mode::parse("turbo-boost").unwrap_err();
    assert!(err.contains("unknown mode \"turbo-boost\""), "{err}");
    assert!(
        err.contains("auto, gaming, lowlatency, powersave, server"),
        "{err}"
    );
    for bpfland in ["performance", "all", "0-3", "0,2,4", "0xff"] {
        let err = Mode::parse(bpfland).unwrap_err();
        assert!(err.contains("scx_bpfland's -m/--primary-domain"), "{err}");
        assert!(err.contains("-m is --mode"), "{err}");
    }
    assert!(Mode::parse("").is_err());
}

#[test]
fn the_startup_log_names_the_mode_and_its_values() {
    let bpf_only = startup_lines(Mode::Gaming, false);
    assert!(
        bpf_only[0].starts_with("mode gaming: fixed knobs"),
        "{bpf_only:?}"
    );
    for v in [
        "slice 2.000 ms",
        "preempt thresh 500.0 us",
        "lag scale 6",
        "lat cri thresh high 16",
        "affinity mode weak",
    ] {
        assert!(bpf_only[0].contains(v), "{v}: {bpf_only:?}");
    }
    assert!(bpf_only.iter().any(|l| l.contains("gamescope-xwm")));

    let server = startup_lines(Mode::Server, true);
    assert!(server[0].contains("batch slice 40.000 ms"), "{server:?}");
    assert!(server[1].contains("batch slice x2"), "{server:?}");
    assert!(server[1].contains("batch slice >= 20.000 ms"), "{server:?}");
    assert!(!server[1].contains("slice x1"), "{server:?}");

    let low = startup_lines(Mode::LowLatency, true);
    assert!(low[1].contains("preempt thresh <= 1.000 ms"), "{low:?}");
    assert!(startup_lines(Mode::PowerSave, true)[1].contains("affinity mode strong"));
    let auto = startup_lines(Mode::Auto, true);
    assert_eq!(auto.len(), 2, "{auto:?}");
    assert!(auto[1].contains("as they are"), "{auto:?}");
}
