// SPDX-License-Identifier: GPL-2.0-only
//! build.rs's reading of system_packages.tsv: which package brings a missing tool on apt, pacman
//! and dnf systems. tools/pandemonium/packages.py reads the same table.

/// Compiled in, so the hint cannot disagree with the table the Python tools read.
pub const TABLE: &str = include_str!("system_packages.tsv");
const COLUMNS: [&str; 6] = ["tool", "check", "group", "apt", "pacman", "dnf"];
const AUR: &str = "aur:";

// build.rs reads only the package columns; check and group are for the Python tools and the tests.
#[allow(dead_code)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'a> {
    pub tool: &'a str,
    pub check: &'a str,
    pub group: &'a str,
    pub apt: &'a str,
    pub pacman: &'a str,
    pub dnf: &'a str,
}

/// The data rows; an error names the line that breaks the format, so a bad edit fails the build
/// (and the tests) instead of producing a wrong hint.
pub fn rows(table: &str) -> Result<Vec<Row<'_>>, String> {
    let mut lines = table
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let header: Vec<&str> = match lines.next() {
        Some((_, l)) => l.split_whitespace().collect(),
        None => return Err("system_packages.tsv: no header line".into()),
    };
    if header != COLUMNS {
        return Err(format!(
            "system_packages.tsv: header {header:?}, expected {COLUMNS:?}"
        ));
    }
    let mut out: Vec<Row> = Vec::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != COLUMNS.len() {
            return Err(format!(
                "system_packages.tsv line {}: {} columns, expected {}",
                i + 1,
                f.len(),
                COLUMNS.len()
            ));
        }
        if out.iter().any(|r| r.tool == f[0]) {
            return Err(format!(
                "system_packages.tsv line {}: tool {} listed twice",
                i + 1,
                f[0]
            ));
        }
        out.push(Row {
            tool: f[0],
            check: f[1],
            group: f[2],
            apt: f[3],
            pacman: f[4],
            dnf: f[5],
        });
    }
    Ok(out)
}

/// One line per package manager with the packages that bring `tools`, each package once:
///   apt-get install <apt names>
///   pacman -S <pacman names>
///   dnf install <dnf names>
/// AUR-only packages go in parentheses, since pacman cannot install them.
pub fn install_hint(table: &str, tools: &[&str]) -> Result<String, String> {
    if tools.is_empty() {
        return Err("install_hint: no tools named".into());
    }
    let rows = rows(table)?;
    let mut picked = Vec::new();
    for tool in tools {
        match rows.iter().find(|r| r.tool == *tool) {
            Some(r) => picked.push(r),
            None => return Err(format!("system_packages.tsv has no tool {tool}")),
        }
    }
    let pacman = once(picked.iter().map(|r| r.pacman));
    let (aur, repo): (Vec<&str>, Vec<&str>) = pacman.into_iter().partition(|n| n.starts_with(AUR));
    let aur: Vec<&str> = aur.iter().map(|n| &n[AUR.len()..]).collect();
    let pacman_line = if aur.is_empty() {
        format!("pacman -S {}", repo.join(" "))
    } else if repo.is_empty() {
        format!("(AUR: {})", aur.join(" "))
    } else {
        format!("pacman -S {} (AUR: {})", repo.join(" "), aur.join(" "))
    };
    Ok(format!(
        "  apt-get install {}\n  {}\n  dnf install {}",
        once(picked.iter().map(|r| r.apt)).join(" "),
        pacman_line,
        once(picked.iter().map(|r| r.dnf)).join(" ")
    ))
}

/// Each name once, in first-seen order (two tools often share a package, e.g. rt-tests).
fn once<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for n in names {
        if !v.contains(&n) {
            v.push(n);
        }
    }
    v
}
