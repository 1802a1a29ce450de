// SPDX-License-Identifier: GPL-2.0-only
//! Property tests of the sysfs topology parser: whatever the files under a sysfs tree hold
//! (random bytes, near-miss cpulists, negative or huge ids, unknown cache types, missing files
//! and directories), building the scheduler's layout from it returns a layout or an error and
//! never panics. Contents are mostly well-formed-looking so that cases get past the first check.

use super::{CPU_LIST_ID_LIMIT, format_cpu_list, parse_cpu_list};
use crate::fuzz;
use crate::layout::Layout;
use crate::topology::SysfsTree;
use proptest::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

const CPUS: u32 = 4;

/// A file's content, or None for a missing file.
type Content = Option<Vec<u8>>;

fn raw() -> impl Strategy<Value = Content> {
    prop::collection::vec(any::<u8>(), 0..20).prop_map(Some)
}

fn text(re: &'static str) -> impl Strategy<Value = Content> {
    re.prop_map(|s| Some(s.into_bytes()))
}

fn cpulist() -> impl Strategy<Value = Content> {
    prop_oneof![
        3 => text("[0-3](-[0-3])?(,[0-4](-[0-5])?){0,2}\n?"),
        1 => text("[0-9,\\- +\n]{0,12}"),
        1 => raw(),
        1 => Just(None),
    ]
}

fn id() -> impl Strategy<Value = Content> {
    prop_oneof![
        3 => text("-?[0-9]{1,2}\n"),
        1 => text("-?[0-9]{9,12}"),
        1 => raw(),
        1 => Just(None),
    ]
}

fn cache_type() -> impl Strategy<Value = Content> {
    prop_oneof![text("(Data|Unified|Instruction)\n"), raw(), Just(None),]
}

/// One cache/indexN directory: level, type, shared_cpu_list.
fn cache_index() -> impl Strategy<Value = [Content; 3]> {
    (prop_oneof![text("[1-4]\n"), id()], cache_type(), cpulist()).prop_map(|(a, b, c)| [a, b, c])
}

#[derive(Debug, Clone)]
struct Cpu {
    topology: Option<[Content; 4]>,
    cache: Option<Vec<[Content; 3]>>,
}

fn cpu() -> impl Strategy<Value = Cpu> {
    (
        prop::option::weighted(
            0.8,
            (id(), id(), id(), cpulist()).prop_map(|(a, b, c, d)| [a, b, c, d]),
        ),
        prop::option::weighted(0.8, prop::collection::vec(cache_index(), 0..4)),
    )
        .prop_map(|(topology, cache)| Cpu { topology, cache })
}

#[derive(Debug, Clone)]
struct Tree {
    online: Content,
    possible: Content,
    cpus: Vec<Cpu>,
    nodes: Option<Vec<Content>>,
}

fn tree() -> impl Strategy<Value = Tree> {
    (
        prop_oneof![4 => text("0(-[1-3])?\n"), 1 => cpulist()],
        prop_oneof![3 => text("0-[0-3]\n"), 1 => cpulist()],
        prop::collection::vec(cpu(), CPUS as usize),
        prop::option::of(prop::collection::vec(cpulist(), 0..3)),
    )
        .prop_map(|(online, possible, cpus, nodes)| Tree {
            online,
            possible,
            cpus,
            nodes,
        })
}

fn put(path: &Path, content: &Content) {
    if let Some(bytes) = content {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

fn write_tree(root: &Path, t: &Tree) {
    let cpu_dir = root.join("devices/system/cpu");
    std::fs::create_dir_all(&cpu_dir).unwrap();
    put(&cpu_dir.join("online"), &t.online);
    put(&cpu_dir.join("possible"), &t.possible);
    for (n, c) in t.cpus.iter().enumerate() {
        let base = cpu_dir.join(format!("cpu{n}"));
        std::fs::create_dir_all(&base).unwrap();
        if let Some(files) = &c.topology {
            let topo = base.join("topology");
            std::fs::create_dir_all(&topo).unwrap();
            let names = [
                "physical_package_id",
                "core_id",
                "cluster_id",
                "thread_siblings_list",
            ];
            for (name, content) in names.iter().zip(files) {
                put(&topo.join(name), content);
            }
        }
        if let Some(indexes) = &c.cache {
            std::fs::create_dir_all(base.join("cache")).unwrap();
            for (i, files) in indexes.iter().enumerate() {
                let dir = base.join(format!("cache/index{i}"));
                std::fs::create_dir_all(&dir).unwrap();
                for (name, content) in ["level", "type", "shared_cpu_list"].iter().zip(files) {
                    put(&dir.join(name), content);
                }
            }
        }
    }
    if let Some(nodes) = &t.nodes {
        for (i, list) in nodes.iter().enumerate() {
            let dir = root.join(format!("devices/system/node/node{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            put(&dir.join("cpulist"), list);
        }
    }
}

#[test]
fn any_sysfs_tree_gives_a_layout_or_an_error() {
    let built = AtomicU64::new(0);
    fuzz::run("sysfs topology", tree(), |t| {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &t);
        if let Ok(layout) = Layout::detect(&SysfsTree(dir.path())) {
            built.fetch_add(1, Ordering::Relaxed);
            prop_assert!(!layout.online.is_empty());
            prop_assert!(layout.online.iter().all(|&c| c < layout.nr_cpu_ids));
            prop_assert_eq!(layout.ranks.len(), layout.nr_cpu_ids as usize);
        }
        Ok(())
    });
    // Cases that got all the way through are what exercise the model; keep them common.
    let built = built.into_inner();
    eprintln!("fuzz sysfs topology: {built} trees gave a layout");
    assert!(built > 0, "no generated tree got past the parser");
}

#[test]
fn cpu_lists_parse_or_fail_and_round_trip() {
    let input = prop_oneof![
        "[0-9,\\- \n]{0,40}",
        "([0-9]{1,6}(-[0-9]{1,6})?,){0,6}[0-9]{1,6}",
        any::<String>(),
    ];
    fuzz::run("cpulist", input, |s| {
        if let Ok(cpus) = parse_cpu_list(&s) {
            prop_assert!(cpus.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(cpus.iter().all(|&c| c < CPU_LIST_ID_LIMIT));
            prop_assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)).unwrap(), cpus);
        }
        Ok(())
    });
}
