// SPDX-License-Identifier: GPL-2.0-only
//! Learning, eviction and persistence tests. File tests run in private temp directories.

use super::*;
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn obs(name: &str, tier: Tier, rt: u64, samples: u32) -> Observation {
    Observation::named(name, tier, rt, samples)
}

fn comm(name: &str) -> [u8; COMM_LEN] {
    obs(name, Tier::Batch, 0, 0).comm
}

/// Feeds `n` fresh publishes of a steady profile (runtime jittering by +-4 %).
fn steady(db: &mut ProcDb, name: &str, tier: Tier, rt: u64, n: u32) {
    for i in 1..=n {
        let jitter = if i % 2 == 0 { 104 } else { 96 };
        db.observe(&obs(name, tier, rt * jitter / 100, i * 16));
    }
}

fn sample_db() -> ProcDb {
    let mut db = ProcDb::default();
    steady(&mut db, "firefox", Tier::Interactive, 300_000, 10);
    steady(&mut db, "Xwayland", Tier::LatCritical, 50_000, 10);
    steady(&mut db, "cc1", Tier::Batch, 20_000_000, 3);
    for i in 0..20 {
        steady(
            &mut db,
            &format!("worker-{i}"),
            Tier::Batch,
            1_000_000 + i,
            1 + i as u32 % 8,
        );
    }
    db
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn a_steady_profile_becomes_confident() {
    let mut db = ProcDb::default();
    steady(
        &mut db,
        "firefox",
        Tier::Interactive,
        300_000,
        CONFIDENT_STREAK,
    );
    assert!(
        !db.get(&comm("firefox")).unwrap().confident,
        "first sight plus 4 agreeing"
    );
    steady(
        &mut db,
        "firefox",
        Tier::Interactive,
        300_000,
        CONFIDENT_STREAK + 1,
    );
    let v = db.get(&comm("firefox")).unwrap();
    assert!(v.confident, "{v:?}");
    let set = db.confident();
    assert_eq!(set.len(), 1);
    let (k, e) = set[0];
    assert_eq!(k.comm, comm("firefox"));
    assert_eq!((e.tier, e.confident), (Tier::Interactive as u8, 1));
    assert!((e.avg_runtime_ns as f64 - 300_000.0).abs() < 0.05 * 300_000.0);
}

#[test]
fn rereading_the_same_map_entry_is_not_evidence() {
    let mut db = ProcDb::default();
    for _ in 0..100 {
        db.observe(&obs("daemon", Tier::Batch, 5_000_000, 32));
    }
    let v = db.get(&comm("daemon")).unwrap();
    assert_eq!((v.observations, v.streak, v.confident), (1, 0, false));
}

#[test]
fn a_tier_change_demotes_at_once() {
    let mut db = ProcDb::default();
    steady(&mut db, "game", Tier::LatCritical, 80_000, 10);
    assert_eq!(db.confident_count(), 1);
    db.observe(&obs("game", Tier::Batch, 9_000_000, 999));
    let v = db.get(&comm("game")).unwrap();
    assert_eq!((v.tier, v.confident, v.streak), (Tier::Batch, false, 0));
    assert!(db.confident().is_empty());
    assert_eq!(
        v.runtime_ewma_ns, 9_000_000.0,
        "the new behaviour starts a fresh average"
    );
}

#[test]
fn runtime_swings_keep_a_profile_unconfident() {
    let mut db = ProcDb::default();
    for i in 1..=50u32 {
        let rt = if i % 2 == 0 { 100_000 } else { 300_000 };
        db.observe(&obs("bursty", Tier::Interactive, rt, i * 16));
    }
    assert!(!db.get(&comm("bursty")).unwrap().confident);
}

#[test]
fn eviction_drops_the_least_recently_seen() {
    let mut db = ProcDb::with_capacity(3);
    for n in ["a", "b", "c"] {
        db.observe(&obs(n, Tier::Batch, 1_000_000, 16));
    }
    db.observe(&obs("a", Tier::Batch, 1_000_000, 16)); // a re-read still counts as seen
    db.observe(&obs("d", Tier::Batch, 1_000_000, 16));
    assert!(db.get(&comm("b")).is_none(), "b was least recently seen");
    db.observe(&obs("e", Tier::Batch, 1_000_000, 16));
    assert!(db.get(&comm("c")).is_none());
    for n in ["a", "d", "e"] {
        assert!(db.get(&comm(n)).is_some(), "{n}");
    }
    assert_eq!(db.len(), 3);
}

#[test]
fn observations_from_the_map_are_validated() {
    let key = CommKey { comm: comm("sh") };
    let e = TaskClassEntry {
        tier: 2,
        samples: 16,
        avg_runtime_ns: 7,
        ..Default::default()
    };
    let o = Observation::from_map(&key, &e).unwrap();
    assert_eq!(
        (o.tier, o.samples, o.avg_runtime_ns),
        (Tier::LatCritical, 16, 7)
    );
    assert!(Observation::from_map(&key, &TaskClassEntry { tier: 3, ..e }).is_none());
    assert!(Observation::from_map(&CommKey::default(), &e).is_none());
    let long = Observation::named("a-very-long-process-name", Tier::Batch, 0, 0);
    assert_eq!(&long.comm[..15], b"a-very-long-pro");
    assert_eq!(long.comm[15], 0);
}

#[test]
fn save_and_load_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pandemonium").join("procdb.bin");
    let mut db = sample_db();
    assert!(db.is_dirty());
    db.save(&path).unwrap();
    assert!(!db.is_dirty());
    let (back, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(
        matches!(
            outcome,
            LoadOutcome::Loaded {
                entries: 23,
                dropped: 0
            }
        ),
        "{outcome}"
    );
    assert_eq!(back.confident(), db.confident());
    for name in ["firefox", "Xwayland", "cc1", "worker-7"] {
        assert_eq!(back.get(&comm(name)), db.get(&comm(name)), "{name}");
    }
    assert!(!back.is_dirty());

    // Recency survives: a smaller capacity keeps the most recently seen.
    let (small, outcome) = ProcDb::load(&path, 3);
    assert!(matches!(
        outcome,
        LoadOutcome::Loaded {
            entries: 3,
            dropped: 20
        }
    ));
    for i in 17..20 {
        assert!(small.get(&comm(&format!("worker-{i}"))).is_some());
    }
}

#[test]
fn a_missing_file_is_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    let (db, outcome) = ProcDb::load(&dir.path().join("nope.bin"), DEFAULT_CAPACITY);
    assert!(matches!(outcome, LoadOutcome::Missing));
    assert!(!outcome.is_warning());
    assert!(db.is_empty());
}

/// Writes `bytes` as the database file, loads it, and checks it was diagnosed and set aside
/// with its bytes intact; returns the diagnosis.
fn load_damaged(bytes: &[u8]) -> Corruption {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    fs::write(&path, bytes).unwrap();
    let (db, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(db.is_empty());
    assert!(outcome.is_warning());
    let LoadOutcome::Corrupt { problem, set_aside } = outcome else {
        panic!("not diagnosed as corrupt: {outcome:?}");
    };
    let aside = set_aside.expect("set aside");
    let name = aside.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with("procdb.bin.corrupt-"), "{name}");
    assert!(
        name["procdb.bin.corrupt-".len()..].parse::<u64>().is_ok(),
        "{name}"
    );
    assert_eq!(fs::read(&aside).unwrap(), bytes, "original bytes intact");
    assert!(
        !path.exists(),
        "the damaged file no longer sits at the live path"
    );

    // The next save creates a fresh file and leaves the set-aside copy alone.
    let mut fresh = sample_db();
    fresh.save(&path).unwrap();
    assert_eq!(fs::read(&aside).unwrap(), bytes);
    assert!(matches!(
        ProcDb::load(&path, 8).1,
        LoadOutcome::Loaded { .. }
    ));
    problem
}

#[test]
fn corrupt_files_are_diagnosed_and_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    sample_db().save(&path).unwrap();
    let good = fs::read(&path).unwrap();

    let mut flipped = good.clone();
    flipped[good.len() / 2 + 12] ^= 0x01;
    assert!(matches!(
        load_damaged(&flipped),
        Corruption::BadChecksum { .. }
    ));

    for cut in [1, 8, 16, 24, 25, good.len() / 2, good.len() - 1] {
        let p = load_damaged(&good[..cut]);
        assert!(
            matches!(p, Corruption::Truncated { .. }),
            "cut {cut}: {p:?}"
        );
    }

    let mut magic = good.clone();
    magic[..8].copy_from_slice(b"NOTPANDM");
    assert_eq!(load_damaged(&magic), Corruption::BadMagic);

    let mut future = good.clone();
    future[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    assert_eq!(
        load_damaged(&future),
        Corruption::FutureVersion(FORMAT_VERSION + 1)
    );

    assert_eq!(load_damaged(&[]), Corruption::Empty);
}

#[test]
fn two_corrupt_files_in_one_second_get_distinct_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    let mut asides = vec![];
    for content in [&b"garbage one"[..], &b"garbage two"[..]] {
        fs::write(&path, content).unwrap();
        let LoadOutcome::Corrupt { set_aside, .. } = ProcDb::load(&path, 8).1 else {
            panic!("not corrupt");
        };
        asides.push(set_aside.unwrap());
    }
    assert_ne!(asides[0], asides[1]);
    assert_eq!(fs::read(&asides[0]).unwrap(), b"garbage one");
    assert_eq!(fs::read(&asides[1]).unwrap(), b"garbage two");
}

#[test]
fn concurrent_saves_never_tear_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = Arc::new(dir.path().join("procdb.bin"));
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (path, done) = (path.clone(), done.clone());
        std::thread::spawn(move || {
            let mut loads = 0u32;
            while !done.load(Ordering::Relaxed) || loads == 0 {
                match ProcDb::load(&path, DEFAULT_CAPACITY).1 {
                    LoadOutcome::Loaded { .. } | LoadOutcome::Missing => loads += 1,
                    other => panic!("reader saw {other:?}"),
                }
            }
            loads
        })
    };
    let writers: Vec<_> = (0..8u64)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                // Each writer saves a differently sized database so a torn file would show.
                let mut db = ProcDb::default();
                steady(&mut db, "shared", Tier::Interactive, 100_000, 6);
                for s in 0..50u64 {
                    for i in 0..(t * 10 + s % 7) {
                        let name = format!("t{t}-{i}");
                        db.observe(&obs(&name, Tier::Batch, 1_000 + s, s as u32 + 1));
                    }
                    db.save(&path).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    let (db, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(matches!(outcome, LoadOutcome::Loaded { .. }), "{outcome}");
    assert!(db.get(&comm("shared")).unwrap().confident);
    let stray: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "procdb.bin")
        .collect();
    assert!(stray.is_empty(), "temp files left behind: {stray:?}");
}

#[test]
fn an_unwritable_location_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, b"not a directory").unwrap();
    // A regular file as a parent directory: fails for root too, unlike mode bits.
    let path = file.join("procdb.bin");
    let mut db = sample_db();
    assert!(db.save(&path).is_err());
    assert!(db.is_dirty(), "a failed save keeps the changes pending");
    let (loaded, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(loaded.is_empty());
    assert!(matches!(outcome, LoadOutcome::Unreadable(_)), "{outcome:?}");
    assert_eq!(fs::read(&file).unwrap(), b"not a directory");
}

#[test]
fn a_read_only_directory_is_an_error_for_non_root() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    fs::create_dir(&ro).unwrap();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o500)).unwrap();
    let result = sample_db().save(&ro.join("procdb.bin"));
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o700)).unwrap();
    // Root ignores mode bits (CAP_DAC_OVERRIDE), so there the save legitimately succeeds; the
    // file-as-parent test above covers root.
    if !is_root() {
        assert!(result.is_err());
    }
}

#[test]
fn a_planted_symlink_is_neither_followed_nor_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    fs::create_dir(&cache).unwrap();
    let outside = dir.path().join("etc-shadow");
    fs::write(&outside, b"precious").unwrap();
    let path = cache.join("procdb.bin");
    std::os::unix::fs::symlink(&outside, &path).unwrap();

    let mut db = sample_db();
    let err = db.save(&path).unwrap_err();
    assert!(err.to_string().contains("symlink"), "{err}");
    let (loaded, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(loaded.is_empty());
    assert!(matches!(outcome, LoadOutcome::Unreadable(_)), "{outcome:?}");

    assert_eq!(fs::read(&outside).unwrap(), b"precious");
    assert!(
        fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_link(&path).unwrap(), outside);
    assert_eq!(
        fs::read_dir(&cache).unwrap().count(),
        1,
        "no temp file left behind"
    );
}

#[test]
fn a_planted_fifo_does_not_block_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let (db, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(db.is_empty());
    assert!(matches!(outcome, LoadOutcome::Unreadable(_)), "{outcome:?}");
    assert!(sample_db().save(&path).is_err());
}

#[test]
fn save_if_due_waits_for_the_period_and_for_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("procdb.bin");
    let t0 = Instant::now();
    let s = Duration::from_secs(1);
    let mut db = ProcDb::default();
    assert!(
        db.save_if_due(&path, t0).is_none(),
        "first call starts the period"
    );
    steady(&mut db, "x", Tier::Batch, 1_000_000, 2);
    assert!(db.save_if_due(&path, t0 + 59 * s).is_none());
    assert!(db.save_if_due(&path, t0 + 60 * s).unwrap().is_ok());
    assert!(path.exists());
    assert!(
        db.save_if_due(&path, t0 + 200 * s).is_none(),
        "nothing changed"
    );
    steady(&mut db, "y", Tier::Batch, 1_000_000, 1);
    assert!(db.save_if_due(&path, t0 + 201 * s).unwrap().is_ok());

    let bad = dir.path().join("procdb.bin").join("child");
    steady(&mut db, "z", Tier::Batch, 1_000_000, 1);
    assert!(db.save_if_due(&bad, t0 + 300 * s).unwrap().is_err());
    assert!(
        db.save_if_due(&bad, t0 + 301 * s).is_none(),
        "a failure also waits a period"
    );
}

/// Loads `path` the way a daemon without CAP_DAC_OVERRIDE does (the unit's): the file's mode is
/// 000, and as root the loading thread takes a non-zero fsuid, which drops the DAC capabilities
/// from that thread alone.
fn load_without_read_permission(path: &Path) -> (ProcDb, LoadOutcome) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o000)).unwrap();
    let p = path.to_path_buf();
    let loaded = std::thread::spawn(move || {
        if is_root() {
            // Changes this thread's file-system uid only.
            nix::unistd::setfsuid(nix::unistd::Uid::from_raw(65534));
        }
        ProcDb::load(&p, DEFAULT_CAPACITY)
    })
    .join()
    .unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    loaded
}

#[test]
fn a_file_that_could_not_be_read_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    sample_db().save(&path).unwrap();
    let theirs = fs::read(&path).unwrap();

    let (mut db, outcome) = load_without_read_permission(&path);
    let LoadOutcome::Unreadable(e) = &outcome else {
        panic!("not unreadable: {outcome:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
    let said = outcome.to_string();
    assert!(said.contains("the file stays as it is"), "{said}");
    steady(&mut db, "learned", Tier::Batch, 1_000_000, 3);
    for _ in 0..2 {
        let err = db.save(&path).unwrap_err();
        assert!(is_kept(&err), "{err}");
        assert!(db.is_dirty(), "what was learned stays pending");
    }
    assert_eq!(fs::read(&path).unwrap(), theirs, "the unread file changed");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "a temp file left"
    );

    // Once the administrator moves it away, the next save writes a fresh file, and from then on
    // the file is ours to replace.
    fs::rename(&path, dir.path().join("moved")).unwrap();
    db.save(&path).unwrap();
    assert!(db.get(&comm("learned")).is_some());
    steady(&mut db, "later", Tier::Batch, 1_000_000, 1);
    db.save(&path).unwrap();
    let (reloaded, _) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(reloaded.get(&comm("later")).is_some());
}

#[test]
fn a_damaged_file_that_could_not_be_set_aside_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    let garbage = b"PANDPDB\0 damaged".to_vec();
    fs::write(&path, &garbage).unwrap();
    // Every name the set-aside could take, this second and the next few, is taken. Writing
    // 1000 names a second can itself take seconds on a loaded host: the seconds run on until
    // five past the end of the writing.
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let mut ts = now();
    while ts < now() + 5 {
        for n in 0..1000u32 {
            let suffix = if n == 0 {
                String::new()
            } else {
                format!("-{n}")
            };
            fs::write(
                dir.path().join(format!("procdb.bin.corrupt-{ts}{suffix}")),
                b"",
            )
            .unwrap();
        }
        ts += 1;
    }
    let (mut db, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(
        matches!(
            &outcome,
            LoadOutcome::Corrupt {
                set_aside: Err(_),
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(
        outcome.to_string().contains("the file stays as it is"),
        "{outcome}"
    );
    steady(&mut db, "learned", Tier::Batch, 1_000_000, 3);
    assert!(is_kept(&db.save(&path).unwrap_err()));
    assert_eq!(fs::read(&path).unwrap(), garbage);
}

#[test]
fn a_missing_or_set_aside_file_leaves_saves_free() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    let (mut db, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(matches!(outcome, LoadOutcome::Missing));
    steady(&mut db, "a", Tier::Batch, 1_000_000, 1);
    db.save(&path).unwrap();
    fs::write(&path, b"garbage").unwrap();
    let (mut db, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(!outcome.to_string().contains("stays as it is"), "{outcome}");
    steady(&mut db, "b", Tier::Batch, 1_000_000, 1);
    db.save(&path).unwrap();
}

/// `sample_db()` as the hand-written CRC-32 before crc32fast saved it, in format version 1 (before
/// `--coop-learn`): the file still loads, to the same database, which now saves as version 2.
#[test]
fn a_version_1_file_written_before_crc32fast_still_loads() {
    const OLD: &[u8] = include_bytes!("../../tests/fixtures/procdb-v1.bin");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    fs::write(&path, OLD).unwrap();
    let (back, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(matches!(outcome, LoadOutcome::Loaded { .. }), "{outcome}");
    let db = sample_db();
    assert_eq!(back.to_persisted(), db.to_persisted());
    assert_eq!(&OLD[8..12], &1u32.to_le_bytes());
    let now = format::encode(&db.to_persisted());
    assert_eq!(&now[8..12], &FORMAT_VERSION.to_le_bytes());
    assert_eq!(format::decode(&now), Ok(db.to_persisted()));
}

#[test]
fn cooperation_is_learned_after_a_streak_and_unlearned_at_once() {
    let mut db = ProcDb::default();
    let omp = comm("omp_prog");
    // A name never seen behaving is not added by a withdrawal.
    db.observe_coop(&omp, false);
    assert!(db.get(&omp).is_none());
    db.observe_coop(&omp, true);
    assert!(
        !db.get(&omp).unwrap().coop,
        "one second can be start-up alone"
    );
    assert!(db.coop_names().is_empty());
    db.observe_coop(&omp, true);
    assert!(db.get(&omp).unwrap().coop);
    assert_eq!(db.coop_names(), [CommKey { comm: omp }]);
    // Learned, but its tier is not confident: nothing is warm-started from the row.
    assert!(db.confident().is_empty());
    // A process of the name held the treatment and stopped showing the behaviour.
    db.observe_coop(&omp, false);
    assert!(!db.get(&omp).unwrap().coop);
    assert!(db.coop_names().is_empty());
}

#[test]
fn a_learned_tier_and_learned_cooperation_live_side_by_side() {
    let mut db = ProcDb::default();
    steady(&mut db, "solver", Tier::Batch, 9_000_000, 8);
    db.observe_coop(&comm("solver"), true);
    db.observe_coop(&comm("solver"), true);
    let v = db.get(&comm("solver")).unwrap();
    assert!(v.confident && v.coop && v.tier == Tier::Batch);
    steady(&mut db, "solver", Tier::Batch, 9_000_000, 2);
    assert!(
        db.get(&comm("solver")).unwrap().coop,
        "a tier update keeps it"
    );
}

#[test]
fn learned_cooperation_survives_a_save_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procdb.bin");
    let mut db = sample_db();
    for _ in 0..COOP_STREAK {
        db.observe_coop(&comm("omp_prog"), true);
    }
    db.observe_coop(&comm("half"), true);
    db.save(&path).unwrap();
    let (back, outcome) = ProcDb::load(&path, DEFAULT_CAPACITY);
    assert!(matches!(outcome, LoadOutcome::Loaded { .. }), "{outcome}");
    assert_eq!(
        back.coop_names(),
        [CommKey {
            comm: comm("omp_prog")
        }]
    );
    let mut back = back;
    back.observe_coop(&comm("half"), true);
    assert!(
        back.get(&comm("half")).unwrap().coop,
        "the streak was kept too"
    );
}
