// SPDX-License-Identifier: GPL-2.0-only
//
// Builds the BPF half of scx_pandemonium with scx_cargo's BpfBuilder, as the scx schedulers do:
// it compiles src/bpf/main.bpf.c into the libbpf-rs skeleton (OUT_DIR/bpf_skel.rs, types BpfSkel
// and BpfSkelBuilder) and runs bindgen over src/bpf/intf.h (OUT_DIR/bpf_intf.rs, which
// src/bpf_intf.rs includes). Around it, what the builder does not do:
//   1. find a clang >= 18 (src/build_support/clang.rs: BPF_CLANG, else the newest clang-N on PATH,
//      else clang) and hand it to the builder through BPF_CLANG: alone it runs plain `clang`,
//      which on Debian and Ubuntu is often missing or too old;
//   2. GNU C23: -std=gnu23 goes in through the builder's cflags (bindgen gets the same), but C23
//      rejects the bool/true/false declarations of vmlinux.h, so src/build_support/vmlinux.rs
//      writes a patched copy that shadows the bundled one on the include path;
//   3. mirror the builder's headers into include/scx/ for editors where .gitignore expects them
//      (src/build_support/header_mirror.rs);
//   4. record the clang, vmlinux.h origin, commit and target for --version.
//
// export_scx.py copies this file and src/build_support/ unchanged into the scx monorepo: there
// the scx_cargo path dependency supplies the monorepo's own headers through the same calls.
// src/build_support/ holds build-script code only: no crate target declares it as a module.

use anyhow::{Context, Result, bail};
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/build_support/clang.rs"]
mod clang;
#[path = "src/build_support/header_mirror.rs"]
mod header_mirror;
#[path = "src/build_support/packages.rs"]
mod packages;
#[path = "src/build_support/vmlinux.rs"]
mod vmlinux;

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
    // The builder's ClangInfo reads BPF_CLANG; build scripts are single-threaded here.
    unsafe { env::set_var("BPF_CLANG", &clang) };
    println!("cargo:rerun-if-env-changed={}", vmlinux::ENV);

    // new() unpacks the builder's header bundle into OUT_DIR/scx_utils-bpf_h.
    let mut bpf =
        scx_cargo::BpfBuilder::new().context("scx_cargo could not unpack its BPF headers")?;
    let bundle = out_dir.join("scx_utils-bpf_h");
    let gitignore = fs::read_to_string(manifest.join(".gitignore")).ok();
    if header_mirror::wanted(gitignore.as_deref()) {
        extract_headers(&bundle, &manifest.join(header_mirror::DIR))?;
    }

    let arch = scx_cargo::ClangInfo::new()?.kernel_target()?;
    let vmlinux_dir = out_dir.join("vmlinux");
    let vmlinux_origin = vmlinux::prepare(&bundle.join("arch").join(arch), &vmlinux_dir)
        .context("preparing vmlinux.h")?;
    println!("cargo:warning=vmlinux.h: {vmlinux_origin}");

    if env::var_os("CARGO_FEATURE_PROFILE").is_some() {
        bpf.add_cflag("-DPANDEMONIUM_PROFILE");
    }
    bpf.add_include_path(vmlinux_dir.to_str().context("OUT_DIR is not UTF-8")?)
        .add_cflag("-std=gnu23")
        .enable_intf(INTF_H, "bpf_intf.rs")
        .enable_skel(BPF_SRC, "bpf")
        .build()
        .with_context(|| format!("compiling {BPF_SRC} with {clang}"))?;

    // The builder names src/bpf/ and the BPF_* variables; the rest of the inputs are ours.
    println!("cargo:rerun-if-changed=build.rs");
    // Only an existing file: cargo reruns a build script on every build for a missing one.
    if gitignore.is_some() {
        println!("cargo:rerun-if-changed=.gitignore");
    }
    for entry in fs::read_dir("src/build_support")? {
        println!("cargo:rerun-if-changed={}", entry?.path().display());
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
