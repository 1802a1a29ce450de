// SPDX-License-Identifier: GPL-2.0-only
//! Which clang compiles the BPF side. Kept free of process spawning so the tests can drive it
//! with made-up `--version` outputs; build.rs supplies the real ones.

/// GNU C23 (-std=gnu23) and the BPF features main.bpf.c uses need clang 18.
pub const MIN_CLANG: u32 = 18;
/// Debian/Ubuntu (and apt.llvm.org) install clang-N side by side, Arch and Fedora only `clang`:
/// versioned names are tried newest first up to this one, then the unversioned name.
const NEWEST_VERSIONED: u32 = 30;

/// BPF_CLANG alone when set (the user's explicit choice is never second-guessed), else
/// clang-NEWEST_VERSIONED .. clang-MIN_CLANG, then clang.
pub fn candidates(bpf_clang: Option<&str>) -> Vec<String> {
    match bpf_clang {
        Some(c) if !c.is_empty() => vec![c.to_string()],
        _ => (MIN_CLANG..=NEWEST_VERSIONED)
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
/// MIN_CLANG, as (name, version). Otherwise the "name version" of every clang that ran but was
/// too old, for the error message.
pub fn choose(
    candidates: &[String],
    mut probe: impl FnMut(&str) -> Option<String>,
) -> Result<(String, String), Vec<String>> {
    let mut too_old = Vec::new();
    for c in candidates {
        let Some(ver) = probe(c).as_deref().and_then(version) else {
            continue;
        };
        if major(&ver) >= MIN_CLANG {
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
    let tried = match bpf_clang {
        Some(c) if !c.is_empty() => format!("BPF_CLANG={c}"),
        _ => format!("clang-{NEWEST_VERSIONED} .. clang-{MIN_CLANG}, clang"),
    };
    let found = if too_old.is_empty() {
        "none ran".to_string()
    } else {
        format!("too old: {}", too_old.join(", "))
    };
    format!(
        "no clang >= {MIN_CLANG} found (tried {tried}; {found}). Install one:\n{install_hint}\n\
         or name one with BPF_CLANG (e.g. BPF_CLANG=clang-19)"
    )
}
