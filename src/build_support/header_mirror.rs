// SPDX-License-Identifier: GPL-2.0-only
//! include/scx/: a copy of the sched_ext headers for editors and readers of src/bpf/. Build
//! scripts should not write into the source tree, so the copy is made only where the tree's own
//! .gitignore already keeps it out of git: this project, not the crate export_scx.py writes into
//! the scx monorepo (which compiles against the same headers in OUT_DIR either way).

pub const DIR: &str = "include/scx";

pub fn wanted(gitignore: Option<&str>) -> bool {
    gitignore.is_some_and(|text| {
        text.lines().any(|l| {
            let l = l.trim();
            let l = l.strip_prefix('/').unwrap_or(l);
            l.strip_suffix('/').unwrap_or(l) == DIR
        })
    })
}
