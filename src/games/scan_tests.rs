// SPDX-License-Identifier: GPL-2.0-only
use super::*;
use crate::games::proc_stat::tests::line;
use std::path::PathBuf;

/// One process in a fake `/proc`: `exec` as the kernel shows it (zeros: not ours to read).
struct P<'a> {
    pid: u32,
    ppid: u32,
    comm: &'a [u8],
    start: u64,
    exec: [u64; 4],
    environ: &'a [u8],
    cmdline: &'a [u8],
}

fn p(pid: u32, comm: &str, environ: &'static str) -> P<'static> {
    P {
        pid,
        ppid: 1,
        comm: Box::leak(comm.as_bytes().to_vec().into_boxed_slice()),
        start: 5,
        exec: [
            pid as u64 * 100,
            pid as u64 * 100 + 10,
            pid as u64 * 100 + 10,
            pid as u64 * 100 + 50,
        ],
        environ: environ.as_bytes(),
        cmdline: b"",
    }
}

fn put(root: &Path, p: &P) {
    let dir = root.join(p.pid.to_string());
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("stat"),
        line(p.pid, p.comm, p.ppid, p.start, p.exec),
    )
    .unwrap();
    fs::write(dir.join("environ"), p.environ).unwrap();
    fs::write(dir.join("cmdline"), p.cmdline).unwrap();
}

fn pids(c: &Changes) -> Vec<u32> {
    c.added.iter().map(|g| g.pid).collect()
}

fn scanner() -> Scanner {
    Scanner::new(Limits::default())
}

#[test]
fn a_scan_reports_new_games_once_and_their_exit() {
    let root = tempfile::tempdir().unwrap();
    put(root.path(), &p(100, "steam", "HOME=/home/u\0"));
    put(root.path(), &p(200, "game.exe", "SteamGameId=730\0"));
    put(
        root.path(),
        &p(201, "wineserver", "SteamGameId=730\0WINEPREFIX=/p\0"),
    );
    fs::create_dir_all(root.path().join("self")).unwrap();
    let mut t = scanner();
    let first = t.scan(root.path());
    assert_eq!(
        first
            .added
            .iter()
            .map(|g| (g.pid, g.comm.as_str(), g.game, g.via))
            .collect::<Vec<_>>(),
        [
            (200, "game.exe", 730, Via::Environment),
            (201, "wineserver", 730, Via::Environment)
        ]
    );
    assert!(first.removed.is_empty() && first.warnings.is_empty());
    assert_eq!(t.boosted(), 2);
    assert_eq!(t.scan(root.path()), Changes::default());

    fs::remove_dir_all(root.path().join("201")).unwrap();
    assert_eq!(t.scan(root.path()).removed, [201]);
    assert_eq!(t.boosted(), 1);
}

#[test]
fn a_reused_pid_is_judged_again() {
    let root = tempfile::tempdir().unwrap();
    put(root.path(), &p(300, "game", "SteamGameId=42\0"));
    let mut t = scanner();
    assert_eq!(pids(&t.scan(root.path())), [300]);
    // The game exited and pid 300 went to an ordinary process started later.
    put(
        root.path(),
        &P {
            start: 77,
            ..p(300, "bash", "HOME=/root\0")
        },
    );
    let c = t.scan(root.path());
    assert_eq!((pids(&c), c.removed), (vec![], vec![300]));
    // And back to a game process: added again.
    put(
        root.path(),
        &P {
            start: 90,
            ..p(300, "game", "SteamGameId=42\0")
        },
    );
    assert_eq!(pids(&t.scan(root.path())), [300]);
}

/// Seen between fork and exec, a child shows its launcher's environment; its exec moves argv
/// and the environment (fields 48-51), and it is read again.
#[test]
fn a_process_is_judged_again_after_its_exec() {
    let root = tempfile::tempdir().unwrap();
    let before = p(500, "steam", "HOME=/home/u\0");
    put(root.path(), &before);
    let mut t = scanner();
    assert_eq!(t.scan(root.path()), Changes::default());
    let exec = [7000, 7010, 7010, 7100];
    put(
        root.path(),
        &P {
            exec,
            ..p(500, "game.exe", "SteamGameId=730\0")
        },
    );
    assert_eq!(pids(&t.scan(root.path())), [500]);
    // A game that renames itself stays boosted, reported once.
    put(
        root.path(),
        &P {
            exec,
            ..p(500, "GameThread", "SteamGameId=730\0")
        },
    );
    assert_eq!(t.scan(root.path()), Changes::default());
    assert_eq!(t.boosted(), 1);
}

/// Renaming is not an exec: a process that renames itself every second costs no environment
/// read. (The scan before judged a process again at every name change.)
#[test]
fn a_rename_is_not_a_new_exec() {
    let root = tempfile::tempdir().unwrap();
    let first = p(600, "worker", "HOME=/home/u\0");
    put(root.path(), &first);
    let mut t = scanner();
    t.scan(root.path());
    let reads = t.reads();
    for i in 0..5 {
        // Same exec (fields 48-51), new name; even a planted environment is not read again.
        let name = format!("worker-{i}");
        put(
            root.path(),
            &P {
                comm: name.as_bytes(),
                environ: b"SteamGameId=730\0",
                ..first
            },
        );
        assert_eq!(t.scan(root.path()), Changes::default());
    }
    assert_eq!(t.reads(), reads);
}

/// Another user's process without CAP_SYS_PTRACE: the kernel hides fields 48-51, so the comm
/// stands in for them, and exec'ing Steam's reaper (comm `reaper`) is noticed.
#[test]
fn without_exec_fields_an_exec_into_the_reaper_is_noticed() {
    let root = tempfile::tempdir().unwrap();
    let hidden = [0; 4];
    let child = P {
        exec: hidden,
        ppid: 1,
        ..p(700, "steam", "")
    };
    put(root.path(), &child);
    put(
        root.path(),
        &P {
            exec: hidden,
            ppid: 700,
            ..p(701, "game", "")
        },
    );
    let mut t = scanner();
    assert_eq!(t.scan(root.path()), Changes::default());
    let cmdline = b"/home/u/.steam/ubuntu12_32/reaper\0SteamLaunch\0AppId=570\0--\0game\0";
    put(
        root.path(),
        &P {
            comm: b"reaper",
            cmdline,
            ..child
        },
    );
    let c = t.scan(root.path());
    assert_eq!(c.added.len(), 1, "{c:?}");
    assert_eq!(
        (c.added[0].pid, c.added[0].game, c.added[0].via),
        (701, 570, Via::Reaper(700))
    );
}

fn denying(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    if path.ends_with("environ") {
        return Err(io::Error::from_raw_os_error(libc::EACCES));
    }
    proc_stat::read_capped(path, cap)
}

/// Under pandemonium.service and scx_loader every other user's environment is denied: Steam's
/// reaper still finds the whole game, and the denial is said once.
#[test]
fn a_game_under_steams_reaper_is_found_without_reading_any_environment() {
    let root = tempfile::tempdir().unwrap();
    let hidden = [0; 4];
    let steam = |pid, ppid, comm: &'static str, cmdline: &'static [u8]| P {
        ppid,
        exec: hidden,
        cmdline,
        ..p(pid, comm, "")
    };
    put(root.path(), &steam(100, 1, "steam", b"steam\0"));
    let reaper = b"/home/u/.local/share/Steam/ubuntu12_32/reaper\0SteamLaunch\0AppId=1245620\0--\0\
                   /home/u/.local/share/Steam/ubuntu12_32/steam-launch-wrapper\0--\0proton\0";
    put(root.path(), &steam(200, 100, "reaper", reaper));
    put(root.path(), &steam(201, 200, "steam-launch-wr", b""));
    put(root.path(), &steam(202, 201, "pv-bwrap", b""));
    put(root.path(), &steam(203, 202, "eldenring.exe", b""));
    put(root.path(), &steam(300, 100, "steamwebhelper", b""));
    // A reaper without SteamLaunch is someone else's program of that name.
    put(root.path(), &steam(400, 1, "reaper", b"reaper\0--daemon\0"));
    put(root.path(), &steam(401, 400, "child", b""));
    let mut t = Scanner::with_reader(Limits::default(), denying);
    let c = t.scan(root.path());
    assert_eq!(pids(&c), [201, 202, 203]);
    assert!(
        c.added
            .iter()
            .all(|g| (g.game, g.via) == (1245620, Via::Reaper(200)))
    );
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(c.warnings[0].contains("cannot read") && c.warnings[0].contains("CAP_SYS_PTRACE"));
    // Said once: a new process whose environment is denied too says nothing more.
    put(root.path(), &steam(500, 1, "bash", b""));
    assert_eq!(t.scan(root.path()), Changes::default());
    // The game's new processes join it, its exited ones leave; an orphan goes to the reaper
    // (a child subreaper) and stays the game's.
    fs::remove_dir_all(root.path().join("202")).unwrap();
    put(root.path(), &steam(203, 200, "eldenring.exe", b""));
    put(root.path(), &steam(204, 203, "vkd3d_queue", b""));
    let c = t.scan(root.path());
    assert_eq!((pids(&c), c.removed), (vec![204], vec![202]));
    assert_eq!(t.boosted(), 3);
}

#[test]
fn a_comm_that_is_not_utf8_is_still_a_game() {
    let root = tempfile::tempdir().unwrap();
    put(
        root.path(),
        &P {
            comm: b"Spiel-\xc3\x9cbersi\xc3",
            ..p(800, "", "SteamAppId=99\0")
        },
    );
    let c = scanner().scan(root.path());
    assert_eq!(pids(&c), [800]);
    assert_eq!(c.added[0].comm, "Spiel-\\xc3\\x9cbersi\\xc3");
}

/// A user forking many processes with large environments: one pass reads at most the limits,
/// oldest first, and the rest follow in later passes.
#[test]
fn a_pass_reads_no_more_than_its_budget() {
    let root = tempfile::tempdir().unwrap();
    let big: &'static str =
        Box::leak(format!("X={}\0SteamGameId=730\0", "y".repeat(60_000)).into_boxed_str());
    for pid in 1000..1300 {
        put(root.path(), &p(pid, "forker", big));
    }
    let limits = Limits::default();
    let mut t = scanner();
    let mut found = 0;
    let mut passes = 0;
    while found < 300 {
        passes += 1;
        let reads = t.reads();
        found += t.scan(root.path()).added.len();
        let read = t.reads() - reads;
        assert!(
            read as usize <= limits.reads_per_pass,
            "{read} reads in pass {passes}"
        );
        let bytes = read * big.len() as u64;
        assert!(
            bytes <= limits.bytes_per_pass + limits.environ_bytes,
            "{bytes} bytes"
        );
        assert!(passes <= 10, "{found} of 300 found after {passes} passes");
    }
    assert!(
        passes >= 300 * big.len() / limits.bytes_per_pass as usize,
        "{passes} passes"
    );
    assert_eq!(t.pending(), 0);
}

/// Reapers are judged before a backlog: a fork flood does not keep a game waiting.
#[test]
fn a_reaper_jumps_the_queue() {
    let root = tempfile::tempdir().unwrap();
    for pid in 2000..2050 {
        put(root.path(), &p(pid, "flood", "A=1\0"));
    }
    let cmdline = b"reaper\0SteamLaunch\0AppId=10\0--\0g\0";
    put(
        root.path(),
        &P {
            cmdline,
            ..p(9000, "reaper", "")
        },
    );
    put(
        root.path(),
        &P {
            ppid: 9000,
            ..p(9001, "game", "")
        },
    );
    let limits = Limits {
        reads_per_pass: 3,
        ..Limits::default()
    };
    let mut t = Scanner::new(limits);
    assert_eq!(pids(&t.scan(root.path())), [9001]);
    assert!(t.pending() > 40);
}

fn counting(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    assert!(
        cap <= Limits::default().environ_bytes,
        "read of {} capped at {cap}",
        path.display()
    );
    proc_stat::read_capped(path, cap)
}

#[test]
fn one_read_takes_at_most_its_cap_and_a_cut_id_is_no_id() {
    let root = tempfile::tempdir().unwrap();
    let cap = Limits::default().environ_bytes as usize;
    let late: &'static str =
        Box::leak(format!("X={}\0SteamGameId=730\0", "y".repeat(2 << 20)).into_boxed_str());
    put(root.path(), &p(1, "big", late));
    // The cap cuts through the id: "SteamGameId=7" must not be read as game 7.
    let cut: &'static str =
        Box::leak(format!("X={}\0SteamGameId=730\0", "y".repeat(cap - 17)).into_boxed_str());
    put(root.path(), &p(2, "cut", cut));
    let early: &'static str =
        Box::leak(format!("SteamGameId=730\0X={}\0", "y".repeat(2 << 20)).into_boxed_str());
    put(root.path(), &p(3, "early", early));
    let c = Scanner::with_reader(Limits::default(), counting).scan(root.path());
    assert_eq!(pids(&c), [3]);
}

#[test]
fn a_missing_or_unlistable_proc_changes_nothing() {
    let mut t = scanner();
    assert_eq!(t.scan(Path::new("/nonexistent/proc")), Changes::default());
    let root = tempfile::tempdir().unwrap();
    put(root.path(), &p(10, "game", "SteamGameId=1\0"));
    assert_eq!(pids(&t.scan(root.path())), [10]);
    let gone = PathBuf::from(root.path());
    drop(root);
    assert_eq!(t.scan(&gone), Changes::default());
    assert_eq!(t.boosted(), 1);
}

/// The real `/proc`: a process started as Steam starts a game, under a script named `reaper`
/// (`reaper SteamLaunch AppId=N -- COMMAND`) and with nothing in its environment, is found.
#[test]
fn a_game_under_a_reaper_is_found_in_the_real_proc() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let reaper = dir.path().join("reaper");
    let script = "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done; shift\n\"$@\"\nexit $?\n";
    fs::write(&reaper, script).unwrap();
    fs::set_permissions(&reaper, fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = Command::new(&reaper)
        .args(["SteamLaunch", "AppId=4242", "--", "sleep", "30"])
        .env_clear()
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // The scan can catch the reaper's forked child before it execs the command, still named
    // `reaper`: the process is the game all the same, so it is known by pid, not by name.
    let mut t = scanner();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut found = Vec::new();
    let mut comm = String::new();
    while Instant::now() < deadline && comm != "sleep" {
        found.extend(
            t.scan(Path::new("/proc"))
                .added
                .into_iter()
                .filter(|g| g.game == 4242),
        );
        if let Some(g) = found.iter().find(|g| g.pid != child.id()) {
            let read = fs::read_to_string(format!("/proc/{}/comm", g.pid));
            comm = read.unwrap_or_default().trim_end().to_owned();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let game = found.iter().find(|g| g.pid != child.id());
    assert!(
        game.is_some_and(|g| g.via == Via::Reaper(child.id())) && comm == "sleep",
        "{found:?} {comm:?}"
    );
}
