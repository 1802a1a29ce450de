// SPDX-License-Identifier: GPL-2.0-only
//! systemd/pandemonium.service against the paths the daemon really writes: a sandbox that
//! leaves one of them read-only loses the learned profiles or the stats socket without an error
//! anyone sees at install time.

use scx_pandemonium::{procdb, stats};
use std::path::{Path, PathBuf};

fn service_values(key: &str) -> Vec<String> {
    let unit = Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/pandemonium.service");
    let text = std::fs::read_to_string(unit).unwrap();
    let mut in_service = false;
    let mut out = vec![];
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
        } else if in_service
            && let Some(v) = line.strip_prefix(key).and_then(|r| r.strip_prefix('='))
        {
            out.extend(v.split_whitespace().map(String::from));
        }
    }
    out
}

/// `/var/run` is a link to `/run` on every systemd system.
fn under_run(p: &Path) -> PathBuf {
    match p.strip_prefix("/var/run") {
        Ok(rest) => Path::new("/run").join(rest),
        Err(_) => p.to_path_buf(),
    }
}

#[test]
fn the_state_directory_is_where_root_keeps_the_procdb() {
    let dirs: Vec<PathBuf> = service_values("StateDirectory")
        .iter()
        .map(|d| Path::new("/var/lib").join(d))
        .collect();
    assert!(
        dirs.contains(&PathBuf::from(procdb::STATE_DIR)),
        "StateDirectory= {dirs:?} does not cover {}",
        procdb::STATE_DIR
    );
    assert_eq!(service_values("StateDirectoryMode"), ["0700"]);
    assert_eq!(service_values("ProtectSystem"), ["strict"]);
}

#[test]
fn the_runtime_directory_covers_the_stats_socket() {
    let socket = under_run(Path::new(stats::DEFAULT_SOCKET));
    let dirs: Vec<PathBuf> = service_values("RuntimeDirectory")
        .iter()
        .map(|d| Path::new("/run").join(d))
        .collect();
    assert!(
        dirs.iter().any(|d| socket.starts_with(d)),
        "RuntimeDirectory= {dirs:?} does not cover {}",
        socket.display()
    );
}

#[test]
fn no_cache_directory_is_left_to_suggest_another_home() {
    for key in ["CacheDirectory", "Environment"] {
        let v = service_values(key);
        assert!(
            !v.iter()
                .any(|x| x.contains("XDG_CACHE_HOME") || x == "pandemonium"),
            "{key}= {v:?}: the daemon ignores XDG_CACHE_HOME as root"
        );
    }
}

#[test]
fn the_unit_does_not_refuse_fsync() {
    let filter = service_values("SystemCallFilter");
    assert!(!filter.is_empty());
    assert!(
        !filter.iter().any(|g| g.contains("@sync")),
        "{filter:?}: the procdb save fsyncs"
    );
}
