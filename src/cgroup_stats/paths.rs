// SPDX-License-Identifier: GPL-2.0-only
//! From a cgroup id to its path. BPF keys groups by `cgrp->kn->id`, which on a 64-bit kernel is
//! the inode number of the group's directory in cgroupfs: walking the cgroup2 mount and stat'ing
//! each directory maps ids to paths. Paths are cached, and a cached one is checked (one stat)
//! each time it is used, since a group can be renamed or removed and its name reused.

use crate::autogroup;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where cgroup2 is mounted on systemd machines, the fallback when /proc/self/mounts is unreadable.
pub const DEFAULT_MOUNT: &str = "/sys/fs/cgroup";

/// An id a walk did not find is not looked for again before this: a group removed between the
/// map read and the walk would otherwise cost a walk a second while it stays among the top.
/// It is looked for again at all because cgroup_init() can run before the directory shows.
pub const MISSING_RETRY: Duration = Duration::from_secs(10);

/// The cgroup2 mount point in `mounts` (/proc/self/mounts' format); `None` when cgroup2 is not
/// mounted. A hybrid (v1 + v2) system mounts it at /sys/fs/cgroup/unified.
pub fn cgroup2_mount(mounts: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_, dir, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == "cgroup2").then(|| PathBuf::from(unescape_mount(dir)))
    })
}

/// /proc/self/mounts writes space, tab, newline and backslash in a path as octal escapes.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) if b[i] == b'\\' => {
                out.push(d.iter().fold(0u8, |a, c| a.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How a path is printed: from the mount's root ("/system.slice/foo.service"). Whitespace and
/// control characters are written as `\xNN` (systemd's unit escaping), so the monitor's
/// `path=share` words still split on whitespace.
pub fn display(rel: &Path) -> String {
    let mut out = String::from("/");
    for c in rel.to_string_lossy().chars() {
        if c.is_whitespace() || c.is_control() {
            for b in c.to_string().bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The name of a group whose path is not known.
pub fn unresolved(id: u64) -> String {
    format!("id:{id}")
}

/// Every cgroup directory under `root` (the root itself excluded) as inode -> path relative to
/// `root`. Unreadable directories, and groups removed during the walk, are skipped.
pub fn scan(root: &Path) -> HashMap<u64, PathBuf> {
    let mut found = HashMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for e in entries.flatten() {
            // cgroupfs holds only directories and files; a symlink is not followed.
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if let (true, Ok(m)) = (is_dir, e.metadata()) {
                let child = rel.join(e.file_name());
                found.insert(m.ino(), child.clone());
                stack.push(child);
            }
        }
    }
    found
}

/// Ids to paths under one cgroup2 mount, walking it again only when an id is not known.
pub struct PathCache {
    root: Option<PathBuf>,
    known: HashMap<u64, PathBuf>,
    /// Ids the last walk that looked for them did not find, and when.
    missing: HashMap<u64, Instant>,
}

impl PathCache {
    /// Paths under `root`; with `None` (cgroup2 not mounted) every id prints as `id:N`.
    pub fn new(root: Option<PathBuf>) -> PathCache {
        PathCache {
            root,
            known: HashMap::new(),
            missing: HashMap::new(),
        }
    }

    /// The running system's cgroup2 mount, from /proc/self/mounts.
    pub fn live() -> PathCache {
        let root = match std::fs::read_to_string("/proc/self/mounts") {
            Ok(m) => cgroup2_mount(&m),
            Err(_) => Some(PathBuf::from(DEFAULT_MOUNT)),
        };
        PathCache::new(root)
    }

    /// Printable names of `ids`, in their order: the path, or `id:N` when it cannot be found.
    pub fn names(&mut self, ids: &[u64], now: Instant) -> Vec<String> {
        // An autogroup has no directory to find: it is named by its id.
        let dirs: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|&id| !autogroup::is_key(id))
            .collect();
        let mut paths = self.paths(&dirs, now).into_iter();
        ids.iter()
            .map(|&id| {
                if autogroup::is_key(id) {
                    autogroup::name(id)
                } else {
                    paths.next().unwrap_or_else(|| unresolved(id))
                }
            })
            .collect()
    }

    fn paths(&mut self, ids: &[u64], now: Instant) -> Vec<String> {
        let Some(root) = self.root.clone() else {
            return ids.iter().map(|&id| unresolved(id)).collect();
        };
        // A cached path that no longer leads to the id (removed, renamed) is forgotten.
        for id in ids {
            if let Some(rel) = self.known.get(id)
                && std::fs::metadata(root.join(rel)).map(|m| m.ino()).ok() != Some(*id)
            {
                self.known.remove(id);
            }
        }
        let looked_for_lately = |id: &u64| {
            self.missing
                .get(id)
                .is_some_and(|at| now.saturating_duration_since(*at) < MISSING_RETRY)
        };
        if ids
            .iter()
            .any(|id| !self.known.contains_key(id) && !looked_for_lately(id))
        {
            self.known = scan(&root);
            self.missing
                .retain(|_, at| now.saturating_duration_since(*at) < MISSING_RETRY);
            for id in ids {
                if !self.known.contains_key(id) {
                    self.missing.entry(*id).or_insert(now);
                }
            }
        }
        ids.iter()
            .map(|id| {
                self.known
                    .get(id)
                    .map_or_else(|| unresolved(*id), |p| display(p))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn ino(p: &Path) -> u64 {
        fs::metadata(p).unwrap().ino()
    }

    #[test]
    fn the_cgroup2_mount_is_found_among_others() {
        let mounts = "sysfs /sys sysfs rw,nosuid 0 0\n\
                      tmpfs /sys/fs/cgroup tmpfs ro 0 0\n\
                      cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n";
        assert_eq!(
            cgroup2_mount(mounts),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(cgroup2_mount("proc /proc proc rw 0 0\n"), None);
        assert_eq!(cgroup2_mount(""), None);
        assert_eq!(
            cgroup2_mount("none /mnt/my\\040cg\\134x cgroup2 rw 0 0"),
            Some(PathBuf::from("/mnt/my cg\\x"))
        );
    }

    #[test]
    fn display_escapes_whitespace() {
        assert_eq!(
            display(Path::new("system.slice/a.service")),
            "/system.slice/a.service"
        );
        assert_eq!(display(Path::new("my group\tx")), "/my\\x20group\\x09x");
    }

    /// A cgroupfs stand-in: directories, with files in them that are not groups.
    fn tree() -> (tempfile::TempDir, [PathBuf; 4]) {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let dirs = [
            r.join("system.slice"),
            r.join("system.slice/sshd.service"),
            r.join("user.slice"),
            r.join("user.slice/user-1000.slice"),
        ];
        for d in &dirs {
            fs::create_dir_all(d).unwrap();
            fs::write(d.join("cpu.stat"), "usage_usec 0\n").unwrap();
        }
        fs::write(r.join("cgroup.procs"), "1\n").unwrap();
        (dir, dirs)
    }

    #[test]
    fn scan_maps_every_directory_inode_to_its_path() {
        let (dir, dirs) = tree();
        let found = scan(dir.path());
        assert_eq!(found.len(), 4, "{found:?}");
        assert_eq!(
            found[&ino(&dirs[1])],
            PathBuf::from("system.slice/sshd.service")
        );
        assert_eq!(
            found[&ino(&dirs[3])],
            PathBuf::from("user.slice/user-1000.slice")
        );
        assert!(scan(&dir.path().join("absent")).is_empty());
    }

    #[test]
    fn names_resolve_cache_and_print_unknown_ids_as_id_n() {
        let (dir, dirs) = tree();
        let mut cache = PathCache::new(Some(dir.path().to_path_buf()));
        let t0 = Instant::now();
        let (a, b) = (ino(&dirs[1]), ino(&dirs[3]));
        assert_eq!(
            cache.names(&[b, a, 1 << 62], t0),
            vec![
                "/user.slice/user-1000.slice".to_string(),
                "/system.slice/sshd.service".to_string(),
                format!("id:{}", 1u64 << 62),
            ]
        );
        // A group created after the walk: the id was looked for lately, so no new walk yet...
        let late = dir.path().join("late");
        fs::create_dir(&late).unwrap();
        let id = ino(&late);
        cache.missing.insert(id, t0);
        assert_eq!(cache.names(&[id], t0), vec![format!("id:{id}")]);
        // ...until MISSING_RETRY has passed.
        assert_eq!(
            cache.names(&[id], t0 + MISSING_RETRY),
            vec!["/late".to_string()]
        );
        // A never-seen id walks again at once.
        let fresh = dir.path().join("user.slice/fresh");
        fs::create_dir(&fresh).unwrap();
        assert_eq!(
            cache.names(&[ino(&fresh)], t0),
            vec!["/user.slice/fresh".to_string()]
        );
    }

    #[test]
    fn a_removed_or_renamed_group_is_not_named_by_its_stale_path() {
        let (dir, dirs) = tree();
        let mut cache = PathCache::new(Some(dir.path().to_path_buf()));
        let t0 = Instant::now();
        let a = ino(&dirs[1]);
        assert_eq!(cache.names(&[a], t0), vec!["/system.slice/sshd.service"]);
        fs::rename(&dirs[1], dir.path().join("system.slice/renamed")).unwrap();
        assert_eq!(cache.names(&[a], t0), vec!["/system.slice/renamed"]);
        fs::remove_dir_all(dir.path().join("system.slice/renamed")).unwrap();
        assert_eq!(cache.names(&[a], t0), vec![format!("id:{a}")]);
    }

    #[test]
    fn without_a_cgroup2_mount_every_id_is_printed_as_id_n() {
        let mut cache = PathCache::new(None);
        assert_eq!(cache.names(&[7, 8], Instant::now()), vec!["id:7", "id:8"]);
        let mut gone = PathCache::new(Some(PathBuf::from("/nonexistent/cgroup2")));
        assert_eq!(gone.names(&[7], Instant::now()), vec!["id:7"]);
    }
}
