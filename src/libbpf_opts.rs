// SPDX-License-Identifier: GPL-2.0-only
//! The libbpf options every scx scheduler takes (`--relaxed-maps`, `--pin-root-path`,
//! `--kconfig`, `--btf-custom-path`, `--bpf-token-path`: scx_utils' `LibbpfOpts`), turned into
//! the open options of the BPF skeleton.
//!
//! scx_utils' conversion drops every option at once, without a word, when one cannot be used
//! (an unreadable --kconfig file, a path with a NUL byte): the scheduler would then open the BPF
//! object as if none had been given. Here that is an error naming the option instead.

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys::bpf_object_open_opts;
use scx_utils::libbpf_clap_opts::LibbpfOpts;

/// Open options for the skeleton, or `None` when no libbpf option was given. The strings they
/// point to are leaked on purpose: they must outlive every reload of the scheduler, and there
/// are at most four.
pub fn open_opts(opts: &LibbpfOpts) -> Result<Option<bpf_object_open_opts>> {
    if let Some(path) = &opts.kconfig {
        // Read here only to report a failure; scx_utils reads the file again itself.
        std::fs::read_to_string(path).with_context(|| format!("--kconfig {path}"))?;
    }
    let given = opts.relaxed_maps.is_some()
        || opts.pin_root_path.is_some()
        || opts.kconfig.is_some()
        || opts.btf_custom_path.is_some()
        || opts.bpf_token_path.is_some();
    match opts.clone().into_bpf_open_opts() {
        None if given => bail!(
            "the libbpf options could not be passed on (a NUL byte in a path, or in the \
             --kconfig file?)"
        ),
        converted => Ok(converted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn c_str(p: *const std::os::raw::c_char) -> Option<String> {
        // SAFETY: the pointers come from into_bpf_open_opts: null or a leaked, NUL-ended CString.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string())
    }

    #[test]
    fn no_option_opens_plainly() {
        assert!(open_opts(&LibbpfOpts::default()).unwrap().is_none());
    }

    #[test]
    fn options_reach_the_open_options() {
        let opts = LibbpfOpts {
            relaxed_maps: Some(true),
            pin_root_path: Some("/sys/fs/bpf/pnd".into()),
            btf_custom_path: Some("/tmp/vmlinux.btf".into()),
            bpf_token_path: Some(String::new()),
            ..Default::default()
        };
        let o = open_opts(&opts).unwrap().expect("open options");
        assert_eq!(o.sz as usize, std::mem::size_of::<bpf_object_open_opts>());
        assert!(o.relaxed_maps);
        assert_eq!(c_str(o.pin_root_path).as_deref(), Some("/sys/fs/bpf/pnd"));
        assert_eq!(
            c_str(o.btf_custom_path).as_deref(),
            Some("/tmp/vmlinux.btf")
        );
        assert_eq!(c_str(o.bpf_token_path).as_deref(), Some(""));
        assert!(o.kconfig.is_null());
    }

    #[test]
    fn kconfig_passes_the_files_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kconfig");
        std::fs::write(&path, "CONFIG_HZ=1000\n").unwrap();
        let opts = LibbpfOpts {
            kconfig: Some(path.to_str().unwrap().into()),
            ..Default::default()
        };
        let o = open_opts(&opts).unwrap().expect("open options");
        assert_eq!(c_str(o.kconfig).as_deref(), Some("CONFIG_HZ=1000\n"));
    }

    #[test]
    fn an_unreadable_kconfig_is_an_error_not_a_silent_plain_open() {
        let opts = LibbpfOpts {
            kconfig: Some("/nonexistent/kconfig".into()),
            relaxed_maps: Some(true),
            ..Default::default()
        };
        let msg = format!("{:#}", open_opts(&opts).unwrap_err());
        assert!(msg.contains("--kconfig /nonexistent/kconfig"), "{msg}");
    }

    #[test]
    fn a_nul_byte_in_the_kconfig_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kconfig");
        std::fs::write(&path, "CONFIG_A=y\n\0").unwrap();
        let opts = LibbpfOpts {
            kconfig: Some(path.to_str().unwrap().into()),
            ..Default::default()
        };
        let msg = format!("{:#}", open_opts(&opts).unwrap_err());
        assert!(msg.contains("could not be passed on"), "{msg}");
    }
}
