// SPDX-License-Identifier: GPL-2.0-only
//! The pure parts of build.rs (src/build_support/): choosing a clang, the system package table,
//! when the header mirror is written, and the C23 patch of vmlinux.h. Build scripts have no test harness of their own, so the
//! same files are compiled in here.

#[path = "../src/build_support/clang.rs"]
mod clang;
#[path = "../src/build_support/header_mirror.rs"]
mod header_mirror;
#[path = "../src/build_support/packages.rs"]
mod packages;
// Only patch_for_c23 is pure; prepare() reads the machine's kernel BTF.
#[allow(dead_code)]
#[path = "../src/build_support/vmlinux.rs"]
mod vmlinux;

use std::collections::HashMap;

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A PATH holding exactly these clangs, answering `--version` like the real ones.
fn path_with(clangs: &[(&str, &str)]) -> impl FnMut(&str) -> Option<String> {
    let map: HashMap<String, String> = clangs
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                format!("Debian clang version {v} (3)\nTarget: x86_64-pc-linux-gnu\n"),
            )
        })
        .collect();
    move |name: &str| map.get(name).cloned()
}

#[test]
fn bpf_clang_is_the_only_candidate_when_set() {
    assert_eq!(
        clang::candidates(Some("/opt/llvm/bin/clang")),
        names(&["/opt/llvm/bin/clang"])
    );
}

#[test]
fn the_versions_come_from_the_tables_clang_row() {
    assert_eq!(clang::versions(), (18, 30));
    assert_eq!(clang::versions_of("clang:18-30"), Some((18, 30)));
    for bad in [
        "clang",
        "clang:18",
        "clang:30-18",
        "clang:x-30",
        "cmd:clang",
    ] {
        assert_eq!(clang::versions_of(bad), None, "{bad}");
    }
}

#[test]
fn without_bpf_clang_versioned_names_come_newest_first_then_plain_clang() {
    for unset in [None, Some("")] {
        let c = clang::candidates(unset);
        assert_eq!(c.last().map(String::as_str), Some("clang"));
        assert_eq!(c.first().map(String::as_str), Some("clang-30"));
        let n = |name: &str| c.iter().position(|x| x == name);
        assert!(n("clang-20").unwrap() < n("clang-19").unwrap());
        assert!(n("clang-18").is_some() && n("clang-17").is_none());
    }
}

#[test]
fn version_is_read_from_every_distribution_format() {
    for (out, want) in [
        (
            "Debian clang version 19.1.7 (3)\nTarget: x86_64-pc-linux-gnu",
            Some("19.1.7"),
        ),
        (
            "clang version 19.1.0 (Fedora 19.1.0-1.fc41)",
            Some("19.1.0"),
        ),
        ("Ubuntu clang version 18.1.3 (1ubuntu1)", Some("18.1.3")),
        (
            "clang version 21.1.6\nTarget: x86_64-pc-linux-gnu",
            Some("21.1.6"),
        ),
        ("gcc (Debian 14.2.0-19) 14.2.0", None),
        ("", None),
    ] {
        assert_eq!(clang::version(out).as_deref(), want, "{out:?}");
    }
    assert_eq!(clang::major("19.1.7"), 19);
    assert_eq!(clang::major("18"), 18);
    assert_eq!(clang::major("garbage"), 0);
}

#[test]
fn debian_with_several_clangs_gets_the_newest_versioned_one() {
    let c = clang::candidates(None);
    let got = clang::choose(
        &c,
        path_with(&[
            ("clang", "14.0.6"),
            ("clang-18", "18.1.8"),
            ("clang-19", "19.1.7"),
        ]),
    );
    assert_eq!(got, Ok(("clang-19".into(), "19.1.7".into())));
}

#[test]
fn arch_and_fedora_have_only_plain_clang() {
    let c = clang::candidates(None);
    let got = clang::choose(&c, path_with(&[("clang", "21.1.6")]));
    assert_eq!(got, Ok(("clang".into(), "21.1.6".into())));
}

#[test]
fn clangs_too_old_are_listed_for_the_error() {
    let c = clang::candidates(None);
    let got = clang::choose(
        &c,
        path_with(&[("clang-16", "16.0.6"), ("clang", "17.0.6")]),
    );
    // clang-16 is not a candidate at all (below MIN); plain clang ran but is too old.
    assert_eq!(got, Err(names(&["clang 17.0.6"])));
}

#[test]
fn an_explicit_bpf_clang_that_is_too_old_is_not_replaced_by_another() {
    let c = clang::candidates(Some("clang-17"));
    let got = clang::choose(
        &c,
        path_with(&[("clang-17", "17.0.6"), ("clang-19", "19.1.7")]),
    );
    assert_eq!(got, Err(names(&["clang-17 17.0.6"])));
}

#[test]
fn output_without_a_version_is_skipped() {
    let c = names(&["clang-wrapper", "clang"]);
    let mut probe = path_with(&[("clang", "19.1.7")]);
    let got = clang::choose(&c, |n| {
        if n == "clang-wrapper" {
            Some("usage: ...".into())
        } else {
            probe(n)
        }
    });
    assert_eq!(got, Ok(("clang".into(), "19.1.7".into())));
}

#[test]
fn the_not_found_message_says_what_was_tried_and_how_to_install() {
    let hint = packages::install_hint(packages::TABLE, &["clang"]).unwrap();
    let msg = clang::not_found_message(None, &[], &hint);
    assert!(
        msg.starts_with("no clang >= 18 found (tried clang-30 .. clang-18, clang; none ran)"),
        "{msg}"
    );
    assert!(msg.contains(&hint) && msg.contains("BPF_CLANG="), "{msg}");
    let msg = clang::not_found_message(Some("clang-17"), &names(&["clang-17 17.0.6"]), &hint);
    assert!(
        msg.contains("tried BPF_CLANG=clang-17; too old: clang-17 17.0.6"),
        "{msg}"
    );
}

#[test]
fn the_table_parses_and_every_row_names_a_package_everywhere() {
    let rows = packages::rows(packages::TABLE).unwrap();
    assert!(rows.len() >= 10, "{} rows", rows.len());
    for r in &rows {
        assert!(
            ["build", "vm", "bench", "extra"].contains(&r.group),
            "{r:?}"
        );
        let kind_ok = clang::versions_of(r.check).is_some()
            || ["cmd:", "file:", "py:"]
                .iter()
                .any(|k| r.check.starts_with(k) && r.check.len() > k.len());
        assert!(kind_ok, "{r:?}");
        for name in [r.apt, r.pacman, r.dnf] {
            assert!(!name.is_empty() && name != "aur:", "{r:?}");
        }
    }
    let build: Vec<&str> = rows
        .iter()
        .filter(|r| r.group == "build")
        .map(|r| r.tool)
        .collect();
    for tool in ["clang", "libclang", "libelf", "zlib", "pkg-config", "make"] {
        assert!(build.contains(&tool), "{tool} is not in the build group");
    }
}

#[test]
fn the_clang_hint_names_each_distributions_package() {
    let hint = packages::install_hint(packages::TABLE, &["clang"]).unwrap();
    assert_eq!(
        hint,
        "  apt-get install clang-19\n  pacman -S clang\n  dnf install clang"
    );
}

#[test]
fn a_hint_names_each_package_once_and_sets_aur_packages_apart() {
    let hint =
        packages::install_hint(packages::TABLE, &["cyclictest", "perf", "hackbench"]).unwrap();
    assert_eq!(
        hint,
        concat!(
            "  apt-get install rt-tests linux-perf\n",
            "  pacman -S perf (AUR: rt-tests)\n",
            "  dnf install realtime-tests perf"
        )
    );
    let only_aur = packages::install_hint(packages::TABLE, &["hackbench"]).unwrap();
    assert!(only_aur.contains("\n  (AUR: rt-tests)\n"), "{only_aur}");
}

#[test]
fn a_broken_table_or_an_unknown_tool_is_an_error() {
    let header = "tool check group apt pacman dnf\n";
    assert!(
        packages::rows("# only a comment\n")
            .unwrap_err()
            .contains("no header")
    );
    assert!(
        packages::rows("tool check apt\n")
            .unwrap_err()
            .contains("header")
    );
    let short = format!("{header}make cmd:make build make make\n");
    assert!(
        packages::rows(&short)
            .unwrap_err()
            .contains("line 2: 5 columns")
    );
    let twice = format!("{header}make cmd:make build make make make\nmake cmd:make build a b c\n");
    assert!(
        packages::rows(&twice)
            .unwrap_err()
            .contains("make listed twice")
    );
    assert!(
        packages::install_hint(packages::TABLE, &["no-such-tool"])
            .unwrap_err()
            .contains("no-such-tool")
    );
    assert!(packages::install_hint(packages::TABLE, &[]).is_err());
}

#[test]
fn the_header_mirror_is_written_only_where_gitignore_expects_it() {
    let ours = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.gitignore")).ok();
    assert!(
        header_mirror::wanted(ours.as_deref()),
        "this project's .gitignore lists /include/scx/"
    );
    for text in [
        "/include/scx/\n",
        "include/scx\n",
        "target\n  /include/scx  \n",
    ] {
        assert!(header_mirror::wanted(Some(text)), "{text:?}");
    }
    // The monorepo crate has no .gitignore of its own; other entries do not count.
    for text in [
        None,
        Some("/target\n"),
        Some("include/scx/generated.h\n"),
        Some("# /include/scx/\n"),
    ] {
        assert!(!header_mirror::wanted(text), "{text:?}");
    }
}

#[test]
fn the_c23_patch_drops_only_the_bool_declarations() {
    let vmlinux = "typedef _Bool bool;\nenum {\n\tfalse = 0,\n\ttrue = 1,\n};\n\
                   enum {\n\tA = 0,\n\tB = 1,\n};\nstruct s {\n\tbool b;\n};\n";
    let out = vmlinux::patch_for_c23(vmlinux);
    assert_eq!(
        out,
        "/* C23: bool is a keyword */\n/* C23: true/false are keywords */\n\
         enum {\n\tA = 0,\n\tB = 1,\n};\nstruct s {\n\tbool b;\n};\n"
    );
}
