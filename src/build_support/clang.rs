// SPDX-License-Identifier: GPL-2.0-only
//! Which clang compiles the BPF side. Kept free of process spawning so the tests can drive it
//! with made-up `--version` outputs; build.rs supplies the real ones.
//!
//! The versions come from the check of system_packages.tsv's clang row, `clang:MIN-NEWEST`, the
//! one place they are written (tools/pandemonium/packages.py reads the same row):
//! - MIN: GNU C23 (-std=gnu23) and the BPF features main.bpf.c uses need clang 18;
//! - NEWEST: Debian/Ubuntu (and apt.llvm.org) install clang-N side by side, Arch and Fedora only
//!   `clang`: versioned names are tried from clang-NEWEST down to clang-MIN, then `clang`.

use crate::packages;

/// (MIN, NEWEST) of a check `clang:MIN-NEWEST`; None for anything else.
pub fn versions_of(check: &str) -> Option<(u32, u32)> {
    let (min, newest) = check.strip_prefix("clang:")?.split_once('-')?;
    let (min, newest) = (min.parse().ok()?, newest.parse().ok()?);
    (min <= newest).then_some((min, newest))
}

/// (MIN, NEWEST) from the compiled-in table. A malformed row is this repository's bug, not the
/// user's machine's (tests/build_support.rs reads it), hence the panic.
pub fn versions() -> (u32, u32) {
    packages::rows(packages::TABLE)
        .ok()
        .and_then(|rows| rows.into_iter().find(|r| r.tool == "clang"))
        .and_then(|r| versions_of(r.check))
        .expect("system_packages.tsv: the clang row's check must be clang:MIN-NEWEST")
}

/// BPF_CLANG alone when set (the user's explicit choice is never second-guessed), else
/// clang-NEWEST .. clang-MIN, then clang.
pub fn candidates(bpf_clang: Option<&str>) -> Vec<String> {
    let (min, newest) = versions();
    match bpf_clang {
        Some(c) if !c.is_empty() => vec![c.to_string()],
        _ => (min..=newest)
            .rev()
            .map(|v| format!("clang-{v}"))
            .chain(std::iter::once("clang".to_string()))
            .collect(),
    }
}

/// The version in `clang --version` output: the word after "version" ("Debian clang version
/// 19.1.7 (3)", "clang version 19.1.0 (Fedora 19.1.0-1.fc41)").
pub fn version(version_output: &str) -> Option<String> {
    version_output
        .split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)
        .map(str::to_string)
}

pub fn major(version: &str) -> u32 {
    version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// The first candidate whose `--version` (from `probe`; None: it did not run) reports clang >=
/// MIN, as (name, version). Otherwise the "name version" of every clang that ran but was
/// too old, for the error message.
pub fn choose(
    candidates: &[String],
    mut probe: impl FnMut(&str) -> Option<String>,
) -> Result<(String, String), Vec<String>> {
    let (min, _) = versions();
    let mut too_old = Vec::new();
    for c in candidates {
        let Some(ver) = probe(c).as_deref().and_then(version) else {
            continue;
        };
        if major(&ver) >= min {
            return Ok((c.clone(), ver));
        }
        too_old.push(format!("{c} {ver}"));
    }
    Err(too_old)
}

/// Why the build stops without a clang; `install_hint` is the table's lines for "clang".
pub fn not_found_message(
    bpf_clang: Option<&str>,
    too_old: &[String],
    install_hint: &str,
) -> String {
    let (min, newest) = versions();
    let tried = match bpf_clang {
        Some(c) if !c.is_empty() => format!("BPF_CLANG={c}"),
        _ => format!("clang-{newest} .. clang-{min}, clang"),
    };
    let found = if too_old.is_empty() {
        "none ran".to_string()
    } else {
        format!("too old: {}", too_old.join(", "))
    };
    format!(
        "no clang >= {min} found (tried {tried}; {found}). Install one:\n{install_hint}\n\
         or name one with BPF_CLANG (e.g. BPF_CLANG=clang-19)"
    )
}
