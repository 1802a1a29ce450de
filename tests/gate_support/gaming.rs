// SPDX-License-Identifier: GPL-2.0-only
//! The `gaming` layer: `--mode gaming` makes every thread of a game Steam launched LAT_CRITICAL
//! (src/games.rs), and auto does not. The "game" is a busy loop started with `SteamGameId` in its
//! environment, as Steam starts games; beside it run an identical loop without it and 2 busy
//! shell loops per CPU. Under gaming the game's loop must be LAT_CRITICAL, the other BATCH, and
//! the game's loop must get through at least GAME_ADVANTAGE times the other's work; under auto
//! both are BATCH.

use super::standard::BusyLoops;
use super::*;
use scx_pandemonium::bpf_intf::Tier;
use std::process::{Child, Command, Stdio};

const GAME: &str = "gate-game";
const PLAIN: &str = "gate-plain";
const STEAM_GAME_ID: &str = "4242";
const RUN_SECS: u64 = 20;
const VERDICT_LIMIT: Duration = Duration::from_secs(15);
/// The game's loop against the plain one, in iterations over the run. Under gaming the game's
/// loop runs whenever it is runnable while the plain one shares a CPU with the shell loops.
const GAME_ADVANTAGE: f64 = 1.5;

/// One `pandemonium-tools stress` busy loop whose thread is named `name`.
fn stress(name: &str, steam_game_id: Option<&str>) -> Child {
    let mut cmd = Command::new(tools_binary());
    cmd.args(["stress", "--workers", "1", "--long-runner", "--name", name])
        .args(["--duration-s", &RUN_SECS.to_string()])
        .stdout(Stdio::piped());
    if let Some(id) = steam_game_id {
        cmd.env("SteamGameId", id);
    }
    cmd.spawn().expect("starting pandemonium-tools stress")
}

fn iterations(child: Child) -> u64 {
    let out = child.wait_with_output().expect("waiting for stress");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stress printed no JSON ({e}): {:?}", out.stdout));
    v["total_iterations"].as_u64().expect("total_iterations")
}

fn run(mode: &str) {
    let gaming = mode == "gaming";
    let mut sched = SchedulerProc::start(&["--mode", mode]);
    sched.wait_attached();
    let _busy = BusyLoops::start();
    let (game, plain) = (stress(GAME, Some(STEAM_GAME_ID)), stress(PLAIN, None));
    let game_pid = game.id();
    let want_game = if gaming {
        Tier::LatCritical
    } else {
        Tier::Batch
    };
    let t0 = Instant::now();
    let mut got = (None, None);
    while t0.elapsed() < VERDICT_LIMIT {
        std::thread::sleep(Duration::from_millis(500));
        let prof = maps::read_profiles();
        let tier = |c: &str| prof.get(c).and_then(|e| Tier::from_u8(e.tier));
        got = (tier(GAME), tier(PLAIN));
        if got == (Some(want_game), Some(Tier::Batch)) {
            break;
        }
    }
    let verdict_at = t0.elapsed();
    let (game_n, plain_n) = (iterations(game), iterations(plain));
    let ratio = game_n as f64 / plain_n.max(1) as f64;
    eprintln!(
        "gate gaming: --mode {mode}: {GAME} {:?}, {PLAIN} {:?} after {:.1} s; iterations {game_n} \
         against {plain_n} ({ratio:.2}x) beside 2 busy loops per CPU",
        got.0,
        got.1,
        verdict_at.as_secs_f64()
    );
    assert_eq!(
        got,
        (Some(want_game), Some(Tier::Batch)),
        "--mode {mode}: tiers ({GAME}, {PLAIN})"
    );
    let out = sched.output();
    let boosted =
        format!("gaming: game {STEAM_GAME_ID}: every thread LAT_CRITICAL in {game_pid} (");
    assert_eq!(
        out.contains(&boosted),
        gaming,
        "--mode {mode}: the log {} {boosted:?}:\n{out}",
        if gaming { "lacks" } else { "has" }
    );
    if gaming {
        assert!(
            ratio >= GAME_ADVANTAGE,
            "the game's loop did {ratio:.2}x the plain loop's work, under {GAME_ADVANTAGE}x"
        );
    }
    assert!(sched.running(), "scheduler died:\n{out}");
    sched.stop();
}

pub fn layer_gaming() {
    require_gate_environment();
    run("gaming");
    run("auto");
}
