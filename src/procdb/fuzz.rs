// SPDX-License-Identifier: GPL-2.0-only
//! Property tests of the procdb file decoder: no input makes it panic, whatever it accepts is
//! valid and re-encodes to itself, and every valid database survives a round trip. Inputs are
//! shaped to get past each check in turn: raw bytes (stopped by the magic), a correct header over
//! a random payload (reaches bincode), and single-byte damage to a real file with the checksum
//! redone (reaches the entry validation).

use super::format::{FORMAT_VERSION, HEADER_LEN, MAGIC, PersistedEntry, decode, encode};
use crate::bpf_intf::{COMM_LEN, NR_TIERS};
use crate::fuzz;
use proptest::prelude::*;

fn with_header(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn entry() -> impl Strategy<Value = PersistedEntry> {
    (
        prop::array::uniform16(any::<u8>()),
        0..NR_TIERS as u8,
        0.0..1e12f64,
        any::<(u32, u32, bool, u32, u64)>(),
        any::<(u32, bool)>(),
    )
        .prop_filter("a comm has a byte", |(c, ..)| c.iter().any(|&b| b != 0))
        .prop_map(
            |(comm, tier, rt, (streak, obs, confident, samples, last), (coop_streak, coop))| {
                PersistedEntry {
                    comm,
                    tier,
                    runtime_ewma_ns: rt,
                    streak,
                    observations: obs,
                    confident,
                    last_samples: samples,
                    last_runtime_ns: last,
                    coop_streak,
                    coop,
                }
            },
        )
}

/// Bytes a damaged or hostile file could hold.
fn file_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..128),
        prop::collection::vec(any::<u8>(), 0..512).prop_map(|p| with_header(&p)),
        (
            prop::collection::vec(entry(), 0..8),
            any::<prop::sample::Index>(),
            any::<u8>(),
            any::<bool>(),
        )
            .prop_map(|(entries, at, byte, fix_crc)| {
                let mut bytes = encode(&entries);
                let i = at.index(bytes.len());
                bytes[i] ^= byte.max(1);
                if fix_crc && bytes.len() >= HEADER_LEN {
                    with_header(&bytes[HEADER_LEN..])
                } else {
                    bytes
                }
            }),
    ]
}

#[test]
fn the_decoder_never_panics_and_accepts_only_valid_entries() {
    fuzz::run("procdb decode", file_bytes(), |bytes| {
        if let Ok(entries) = decode(&bytes) {
            for e in &entries {
                prop_assert!(usize::from(e.tier) < NR_TIERS);
                prop_assert!(e.runtime_ewma_ns.is_finite() && e.runtime_ewma_ns >= 0.0);
                prop_assert!(e.comm.iter().any(|&b| b != 0));
                prop_assert_eq!(e.comm.len(), COMM_LEN);
            }
            prop_assert_eq!(decode(&encode(&entries)), Ok(entries));
        }
        Ok(())
    });
}

#[test]
fn every_valid_database_round_trips() {
    fuzz::run(
        "procdb round trip",
        prop::collection::vec(entry(), 0..32),
        |entries| {
            prop_assert_eq!(decode(&encode(&entries)), Ok(entries));
            Ok(())
        },
    );
}
