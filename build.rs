// SPDX-License-Identifier: GPL-2.0-only
//
// Builds the BPF half of scx_pandemonium:
//   1. finds a clang >= 18 (build_support/clang.rs: BPF_CLANG, else the newest clang-N on PATH,
//      else clang),
//   2. unpacks the sched_ext BPF headers shipped in the scx_cargo crate into OUT_DIR (and mirrors
//      them into include/scx/ for editors where .gitignore expects that:
//      build_support/header_mirror.rs),
//   3. picks vmlinux.h (running kernel's BTF if it knows sched_ext, else scx_cargo's copy) and
//      patches what GNU C23 rejects into a private copy,
//   4. compiles src/bpf/main.bpf.c as GNU C23 and generates the libbpf-rs skeleton,
//   5. runs bindgen over src/bpf/intf.h so src/bpf_intf.rs can assert its mirror at compile time.
//
// export_scx.py copies this file and build_support/ unchanged into the scx monorepo: there the
// scx_cargo path dependency supplies the monorepo's own headers through the same calls.

use anyhow::{Context, Result, bail};
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build_support/clang.rs"]
mod clang;
#[path = "build_support/header_mirror.rs"]
mod header_mirror;
#[path = "build_support/packages.rs"]
mod packages;

const BPF_SRC: &str = "src/bpf/main.bpf.c";
const INTF_H: &str = "src/bpf/intf.h";

fn main() {
    if let Err(e) = build() {
        // A panic would bury the reason under a backtrace; cargo prints this verbatim.
        eprintln!("\nscx_pandemonium build failed: {e:#}\n");
        std::process::exit(1);
    }
}

fn build() -> Result<()> {
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);

    let (clang, clang_ver) = find_clang()?;
    // scx_cargo's ClangInfo reads BPF_CLANG; build scripts are single-threaded here.
    unsafe { env::set_var("BPF_CLANG", &clang) };
    for var in ["BPF_CLANG", "BPF_EXTRA_CFLAGS", "PANDEMONIUM_VMLINUX_H"] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    // BpfBuilder::new() is the crate's public way to unpack its header bundle into OUT_DIR.
    scx_cargo::BpfBuilder::new().context("scx_cargo could not unpack its BPF headers")?;
    let bundle = out_dir.join("scx_utils-bpf_h");
    let gitignore = fs::read_to_string(manifest.join(".gitignore")).ok();
    if header_mirror::wanted(gitignore.as_deref()) {
        extract_headers(&bundle, &manifest.join(header_mirror::DIR))?;
    }

    let vmlinux_dir = out_dir.join("vmlinux");
    let vmlinux_origin = prepare_vmlinux_h(&bundle, &vmlinux_dir)?;
    println!("cargo:warning=vmlinux.h: {vmlinux_origin}");

    let clang_info = scx_cargo::ClangInfo::new()?;
    let mut cflags = clang_info.determine_base_cflags()?;
    cflags.extend([
        "-std=gnu23".to_string(),
        format!("-I{}", vmlinux_dir.display()),
        format!("-I{}", bundle.display()),
        format!("-I{}/bpf-compat", bundle.display()),
        format!("-I{}", manifest.join("src/bpf").display()),
        format!("-D__SCX_TARGET_ARCH_{}", clang_info.kernel_target()?),
    ]);
    if let Ok(extra) = env::var("BPF_EXTRA_CFLAGS") {
        cflags.extend(extra.split_whitespace().map(String::from));
    }

    // The object's stem names the skeleton types (BpfSkel, BpfSkelBuilder), as in the scx tree.
    let obj = out_dir.join("bpf.bpf.o");
    libbpf_cargo::SkeletonBuilder::new()
        .source(BPF_SRC)
        .obj(&obj)
        .clang(&clang)
        .clang_args(&cflags)
        .build_and_generate(out_dir.join("bpf_skel.rs"))
        .with_context(|| format!("compiling {BPF_SRC} with {clang}"))?;

    bindgen::Builder::default()
        .header(INTF_H)
        .clang_args(["-target", "bpf", "-std=gnu23"])
        .derive_default(true)
        .generate()
        .context("bindgen over src/bpf/intf.h")?
        .write_to_file(out_dir.join("bpf_intf_gen.rs"))?;

    for dep in [BPF_SRC, INTF_H, "build.rs"] {
        println!("cargo:rerun-if-changed={dep}");
    }
    // Only an existing file: cargo reruns a build script on every build for a missing one.
    if gitignore.is_some() {
        println!("cargo:rerun-if-changed=.gitignore");
    }
    for dir in ["src/bpf", "build_support"] {
        for entry in fs::read_dir(dir)? {
            println!("cargo:rerun-if-changed={}", entry?.path().display());
        }
    }
    // --version names the commit: rerun when HEAD moves or the branch it names advances.
    if let Ok(head) = fs::read_to_string(".git/HEAD") {
        println!("cargo:rerun-if-changed=.git/HEAD");
        if let Some(r) = head.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=.git/{r}");
        }
    }

    let git = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PANDEMONIUM_GIT_HASH={git}");
    println!("cargo:rustc-env=PANDEMONIUM_BPF_CLANG={clang} {clang_ver}");
    println!("cargo:rustc-env=PANDEMONIUM_VMLINUX_ORIGIN={vmlinux_origin}");
    println!(
        "cargo:rustc-env=PANDEMONIUM_TARGET={}",
        env::var("TARGET").unwrap_or_default()
    );
    Ok(())
}

fn find_clang() -> Result<(String, String)> {
    let bpf_clang = env::var("BPF_CLANG").ok();
    let candidates = clang::candidates(bpf_clang.as_deref());
    let probe = |c: &str| {
        let out = Command::new(c).arg("--version").output().ok()?;
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    clang::choose(&candidates, probe).or_else(|too_old| {
        let hint =
            packages::install_hint(packages::TABLE, &["clang"]).map_err(anyhow::Error::msg)?;
        bail!(clang::not_found_message(
            bpf_clang.as_deref(),
            &too_old,
            &hint
        ))
    })
}

/// Mirrors the crate's header bundle (minus the per-arch vmlinux.h) into `dest`, rewriting
/// only files whose content changed so editors and cargo see stable mtimes.
fn extract_headers(bundle: &Path, dest: &Path) -> Result<()> {
    fn walk(src: &Path, dst: &Path) -> Result<()> {
        fs::create_dir_all(dst)?;
        for entry in fs::read_dir(src)? {
            let entry = entry?;
            let name = entry.file_name();
            if name == "arch" {
                continue;
            }
            let from = entry.path();
            let to = dst.join(&name);
            if from.is_dir() {
                walk(&from, &to)?;
            } else {
                let data = fs::read(&from)?;
                if fs::read(&to).ok().as_deref() != Some(data.as_slice()) {
                    fs::write(&to, data).with_context(|| format!("writing {}", to.display()))?;
                }
            }
        }
        Ok(())
    }
    walk(bundle, dest).with_context(|| format!("extracting BPF headers into {}", dest.display()))
}

/// Returns where vmlinux.h came from, for the build log and `--version`.
fn prepare_vmlinux_h(bundle: &Path, out: &Path) -> Result<String> {
    fs::create_dir_all(out)?;
    let (text, origin) = if let Ok(path) = env::var("PANDEMONIUM_VMLINUX_H") {
        (
            fs::read_to_string(&path)?,
            format!("PANDEMONIUM_VMLINUX_H={path}"),
        )
    } else if let Some(text) = running_kernel_vmlinux_h() {
        (
            text,
            "running kernel BTF (/sys/kernel/btf/vmlinux via bpftool)".into(),
        )
    } else {
        let dir = bundle.join("arch/x86");
        let versioned = fs::read_dir(&dir)?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .find(|n| n.starts_with("vmlinux-"))
            .unwrap_or_else(|| "vmlinux.h".into());
        (
            fs::read_to_string(dir.join("vmlinux.h"))?,
            format!("scx_cargo bundle ({versioned}); the host kernel's BTF has no sched_ext types"),
        )
    };
    fs::write(out.join("vmlinux.h"), patch_for_c23(&text))?;
    Ok(origin)
}

/// Only a BTF that already describes sched_ext is worth dumping; bpftool is optional.
fn running_kernel_vmlinux_h() -> Option<String> {
    let btf = fs::read("/sys/kernel/btf/vmlinux").ok()?;
    let needle = b"sched_ext_ops";
    if !btf.windows(needle.len()).any(|w| w == needle) {
        return None;
    }
    let out = Command::new("bpftool")
        .args([
            "btf",
            "dump",
            "file",
            "/sys/kernel/btf/vmlinux",
            "format",
            "c",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// C23 made bool/true/false keywords; vmlinux.h still declares them as a typedef and an enum.
fn patch_for_c23(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t == "typedef _Bool bool;" {
            out.push_str("/* C23: bool is a keyword */\n");
            continue;
        }
        // enum { false = 0, true = 1, };  (split over several lines by bpftool)
        if t == "enum {" {
            let mut block = vec![line.to_string()];
            for next in lines.by_ref() {
                block.push(next.to_string());
                if next.trim_start().starts_with('}') {
                    break;
                }
            }
            let body: String = block.join("\n");
            if body.contains("false = 0") && body.contains("true = 1") && block.len() <= 5 {
                out.push_str("/* C23: true/false are keywords */\n");
            } else {
                out.push_str(&body);
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
