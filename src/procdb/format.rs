// SPDX-License-Identifier: GPL-2.0-only
//! The on-disk format: a fixed header, then a bincode payload.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "PANDPDB\0"
//!      8     4  format version, u32 little-endian
//!     12     8  payload length, u64 little-endian
//!     20     4  CRC-32 (IEEE) of the payload, u32 little-endian
//!     24     n  payload: bincode (varint, little-endian) of `Vec<PersistedEntry>`, oldest first
//! ```
//!
//! Version 1 (before `--coop-learn`) lacks the coop fields; it still loads (upgrade.rs), and the
//! next save writes version 2.
//!
//! The header is checked field by field before the payload is decoded, so every way a file can be
//! damaged (cut short, overwritten, from a newer build) maps to its own [`Corruption`].

use serde::{Deserialize, Serialize};
use std::fmt;

use super::upgrade;
use crate::bpf_intf::{COMM_LEN, NR_TIERS};

pub const MAGIC: [u8; 8] = *b"PANDPDB\0";
pub const FORMAT_VERSION: u32 = 2;
pub const HEADER_LEN: usize = 24;
/// 4096 entries take ~200 KiB; anything past 16 MiB was not written by us.
pub const MAX_PAYLOAD: u64 = 16 << 20;

/// One profile as stored. Field order is the format: append only, and bump the version.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PersistedEntry {
    pub comm: [u8; COMM_LEN],
    pub tier: u8,
    pub runtime_ewma_ns: f64,
    pub streak: u32,
    pub observations: u32,
    pub confident: bool,
    pub last_samples: u32,
    pub last_runtime_ns: u64,
    /// Version 2: seconds in a row the name's processes showed cooperation, and whether the
    /// name is learned as a cooperative group's (`--coop-learn`).
    pub coop_streak: u32,
    pub coop: bool,
}

/// Why a file could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Corruption {
    Empty,
    BadMagic,
    Truncated { expected: u64, actual: u64 },
    TrailingBytes { expected: u64, actual: u64 },
    UnsupportedVersion(u32),
    FutureVersion(u32),
    TooLarge(u64),
    BadChecksum { stored: u32, computed: u32 },
    Undecodable(String),
    Invalid(String),
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Corruption::Empty => write!(f, "empty file"),
            Corruption::BadMagic => write!(f, "not a procdb file (bad magic)"),
            Corruption::Truncated { expected, actual } => {
                write!(f, "truncated: {actual} of {expected} bytes")
            }
            Corruption::TrailingBytes { expected, actual } => {
                write!(f, "{actual} bytes where {expected} were expected")
            }
            Corruption::UnsupportedVersion(v) => write!(f, "unsupported format version {v}"),
            Corruption::FutureVersion(v) => write!(
                f,
                "format version {v} is newer than this build's {FORMAT_VERSION}"
            ),
            Corruption::TooLarge(n) => write!(f, "payload of {n} bytes exceeds {MAX_PAYLOAD}"),
            Corruption::BadChecksum { stored, computed } => {
                write!(
                    f,
                    "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
                )
            }
            Corruption::Undecodable(e) => write!(f, "payload does not decode: {e}"),
            Corruption::Invalid(e) => write!(f, "invalid entry: {e}"),
        }
    }
}

fn codec() -> impl bincode::Options {
    use bincode::Options;
    bincode::DefaultOptions::new().with_limit(MAX_PAYLOAD)
}

pub fn encode(entries: &[PersistedEntry]) -> Vec<u8> {
    use bincode::Options;
    let payload = codec()
        .serialize(entries)
        .expect("plain structs always serialise");
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

pub fn decode(bytes: &[u8]) -> Result<Vec<PersistedEntry>, Corruption> {
    use bincode::Options;
    let len = bytes.len() as u64;
    let truncated = |expected: usize| Corruption::Truncated {
        expected: expected as u64,
        actual: len,
    };
    if bytes.is_empty() {
        return Err(Corruption::Empty);
    }
    let magic_len = bytes.len().min(MAGIC.len());
    if bytes[..magic_len] != MAGIC[..magic_len] {
        return Err(Corruption::BadMagic);
    }
    if bytes.len() < 12 {
        return Err(truncated(HEADER_LEN));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version > FORMAT_VERSION {
        return Err(Corruption::FutureVersion(version));
    }
    if version < upgrade::OLDEST_VERSION {
        return Err(Corruption::UnsupportedVersion(version));
    }
    if bytes.len() < HEADER_LEN {
        return Err(truncated(HEADER_LEN));
    }
    let payload_len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    let stored = u32::from_le_bytes(bytes[20..24].try_into().unwrap());
    if payload_len > MAX_PAYLOAD {
        return Err(Corruption::TooLarge(payload_len));
    }
    let expected = HEADER_LEN as u64 + payload_len;
    if len < expected {
        return Err(Corruption::Truncated {
            expected,
            actual: len,
        });
    }
    if len > expected {
        return Err(Corruption::TrailingBytes {
            expected,
            actual: len,
        });
    }
    let payload = &bytes[HEADER_LEN..];
    let computed = crc32fast::hash(payload);
    if computed != stored {
        return Err(Corruption::BadChecksum { stored, computed });
    }
    let undecodable = |e: bincode::Error| Corruption::Undecodable(e.to_string());
    let entries: Vec<PersistedEntry> = if version == FORMAT_VERSION {
        codec().deserialize(payload).map_err(undecodable)?
    } else {
        upgrade::v1(codec().deserialize(payload).map_err(undecodable)?)
    };
    for e in &entries {
        validate(e)?;
    }
    Ok(entries)
}

fn validate(e: &PersistedEntry) -> Result<(), Corruption> {
    let name = String::from_utf8_lossy(&e.comm);
    if usize::from(e.tier) >= NR_TIERS {
        return Err(Corruption::Invalid(format!("{name:?}: tier {}", e.tier)));
    }
    if !e.runtime_ewma_ns.is_finite() || e.runtime_ewma_ns < 0.0 {
        return Err(Corruption::Invalid(format!(
            "{name:?}: runtime {}",
            e.runtime_ewma_ns
        )));
    }
    if e.comm.iter().all(|&b| b == 0) {
        return Err(Corruption::Invalid("empty comm".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> PersistedEntry {
        let mut comm = [0u8; COMM_LEN];
        comm[..name.len()].copy_from_slice(name.as_bytes());
        PersistedEntry {
            comm,
            tier: 1,
            runtime_ewma_ns: 123_456.5,
            streak: 3,
            observations: 9,
            confident: true,
            last_samples: 64,
            last_runtime_ns: 120_000,
            coop_streak: 2,
            coop: true,
        }
    }

    /// The header's CRC-32 is the IEEE one (zlib, PNG, Ethernet), which crc32fast computes.
    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32fast::hash(b""), 0);
    }

    #[test]
    fn encode_decode_round_trip() {
        let v = vec![entry("firefox"), entry("make")];
        let bytes = encode(&v);
        assert_eq!(&bytes[..8], &MAGIC);
        assert_eq!(decode(&bytes), Ok(v));
        assert_eq!(decode(&encode(&[])), Ok(vec![]));
    }

    #[test]
    fn every_damage_has_its_own_diagnosis() {
        let good = encode(&[entry("a"), entry("b")]);
        assert_eq!(decode(&[]), Err(Corruption::Empty));
        assert_eq!(
            decode(b"JUNKJUNKJUNKJUNKJUNKJUNKJUNK"),
            Err(Corruption::BadMagic)
        );
        for cut in [1, 7, 8, 11, 12, 23, 24, good.len() - 1] {
            assert!(
                matches!(decode(&good[..cut]), Err(Corruption::Truncated { .. })),
                "cut at {cut}: {:?}",
                decode(&good[..cut])
            );
        }
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(
            decode(&long),
            Err(Corruption::TrailingBytes { .. })
        ));
        let mut future = good.clone();
        future[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        assert_eq!(
            decode(&future),
            Err(Corruption::FutureVersion(FORMAT_VERSION + 1))
        );
        let mut zero = good.clone();
        zero[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(decode(&zero), Err(Corruption::UnsupportedVersion(0)));
        let mut zero = good.clone();
        zero[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(decode(&zero), Err(Corruption::UnsupportedVersion(0)));
        let mut huge = good.clone();
        huge[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(decode(&huge), Err(Corruption::TooLarge(u64::MAX)));
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 0x40;
        assert!(matches!(
            decode(&flipped),
            Err(Corruption::BadChecksum { .. })
        ));
    }

    #[test]
    fn a_checksummed_but_invalid_payload_is_rejected() {
        let mut bad = entry("x");
        bad.tier = 7;
        assert!(matches!(
            decode(&encode(&[bad])),
            Err(Corruption::Invalid(_))
        ));
        bad.tier = 0;
        bad.runtime_ewma_ns = f64::NAN;
        assert!(matches!(
            decode(&encode(&[bad])),
            Err(Corruption::Invalid(_))
        ));
        let garbage = [0xffu8; 40];
        let mut file = Vec::from(&MAGIC[..]);
        file.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        file.extend_from_slice(&(garbage.len() as u64).to_le_bytes());
        file.extend_from_slice(&crc32fast::hash(&garbage).to_le_bytes());
        file.extend_from_slice(&garbage);
        assert!(matches!(decode(&file), Err(Corruption::Undecodable(_))));
    }
}
