// SPDX-License-Identifier: GPL-2.0-only
//! Older file formats, read into the current entry: a database learned by an earlier build
//! keeps what it learned. Version 1 predates `--coop-learn`: its names have learned no
//! cooperation yet.

use serde::Deserialize;

use super::format::PersistedEntry;
use crate::bpf_intf::COMM_LEN;

/// The oldest version [`super::format::decode`] still reads.
pub const OLDEST_VERSION: u32 = 1;

/// Version 1's entry, field for field (bincode has no field names: the order is the format).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
pub struct EntryV1 {
    pub comm: [u8; COMM_LEN],
    pub tier: u8,
    pub runtime_ewma_ns: f64,
    pub streak: u32,
    pub observations: u32,
    pub confident: bool,
    pub last_samples: u32,
    pub last_runtime_ns: u64,
}

pub fn v1(entries: Vec<EntryV1>) -> Vec<PersistedEntry> {
    entries
        .into_iter()
        .map(|e| PersistedEntry {
            comm: e.comm,
            tier: e.tier,
            runtime_ewma_ns: e.runtime_ewma_ns,
            streak: e.streak,
            observations: e.observations,
            confident: e.confident,
            last_samples: e.last_samples,
            last_runtime_ns: e.last_runtime_ns,
            coop_streak: 0,
            coop: false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procdb::format::{HEADER_LEN, MAGIC, decode};
    use bincode::Options;

    /// A version 1 file as the build before `--coop-learn` wrote it.
    fn v1_file(entries: &[EntryV1]) -> Vec<u8> {
        let payload = bincode::DefaultOptions::new().serialize(entries).unwrap();
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    #[test]
    fn a_version_1_database_loads_with_nothing_learned_of_cooperation() {
        let mut comm = [0u8; COMM_LEN];
        comm[..4].copy_from_slice(b"make");
        let old = EntryV1 {
            comm,
            tier: 0,
            runtime_ewma_ns: 5e6,
            streak: 6,
            observations: 9,
            confident: true,
            last_samples: 64,
            last_runtime_ns: 5_000_000,
        };
        let got = decode(&v1_file(&[old])).expect("a version 1 file decodes");
        assert_eq!(got.len(), 1);
        let e = got[0];
        assert_eq!((e.comm, e.tier, e.streak, e.confident), (comm, 0, 6, true));
        assert_eq!((e.runtime_ewma_ns, e.last_runtime_ns), (5e6, 5_000_000));
        assert_eq!((e.coop_streak, e.coop), (0, false));
    }

    #[test]
    fn a_version_1_file_is_checked_as_any_other() {
        let mut bytes = v1_file(&[]);
        assert_eq!(decode(&bytes), Ok(vec![]));
        bytes.push(0);
        assert!(decode(&bytes).is_err());
    }
}
