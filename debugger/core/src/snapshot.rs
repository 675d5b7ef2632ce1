//! The offline snapshot: RAM regions and registers saved from a halted target.
//!
//! File format, version 1 (all integers little-endian):
//!
//! ```text
//! 8 bytes   magic  "MLSNAP\r\n"  (the CR LF catches text-mode mangling)
//! u32       format version (1)
//! u32       header length N
//! N bytes   header, JSON: { "description", "elf", "registers": [[name, value]...],
//!                           "regions": [{ "start", "len" }...] }
//! ...       region bytes, concatenated in header order
//! ```
//!
//! A snapshot implements [`Target`] without any live capability, so every analysis that needs
//! only memory and registers runs on it unchanged.

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Memory, Register, Registers, Result, Target, TargetError};

const MAGIC: &[u8; 8] = b"MLSNAP\r\n";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Upper bound on a header, so a corrupt length cannot make us allocate gigabytes.
const MAX_HEADER: u32 = 16 << 20;
/// Upper bound on the saved bytes (a microcontroller's RAM fits many times over).
const MAX_TOTAL: u64 = 1 << 30;
/// Upper bound on the number of regions (a chip has a handful of RAM blocks), so a header
/// cannot make adding them quadratic.
const MAX_REGIONS: usize = 4096;

/// One saved memory range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRegion {
    /// First address.
    pub start: u64,
    /// The bytes.
    pub data: Vec<u8>,
}

/// RAM regions plus registers, saved from a halted target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// What it was taken from and where it stopped.
    pub description: String,
    /// The ELF it belongs to, as given when it was taken.
    pub elf: Option<String>,
    /// Registers by name, in the backend's order.
    pub registers: Vec<(String, u64)>,
    /// Saved memory, sorted by address, non-overlapping.
    pub regions: Vec<SnapshotRegion>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    description: String,
    elf: Option<String>,
    registers: Vec<(String, u64)>,
    regions: Vec<RegionHeader>,
}

#[derive(Serialize, Deserialize)]
struct RegionHeader {
    start: u64,
    len: u64,
}

/// Why a snapshot file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file is not a memlife snapshot.
    #[error("not a memlife snapshot (bad magic)")]
    BadMagic,
    /// Written by a newer memlife.
    #[error(
        "snapshot format version {0} is not supported (this memlife reads version {FORMAT_VERSION})"
    )]
    Version(u32),
    /// The header or the data is damaged.
    #[error("snapshot is damaged: {0}")]
    Damaged(String),
    /// Reading the file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing the file failed.
    #[error(transparent)]
    Write(#[from] crate::output::WriteError),
}

impl Snapshot {
    /// Adds a region, keeping regions sorted; overlapping ranges are the caller's mistake and
    /// are rejected.
    pub fn add_region(
        &mut self,
        start: u64,
        data: Vec<u8>,
    ) -> std::result::Result<(), SnapshotError> {
        let end = start.checked_add(data.len() as u64).ok_or_else(|| {
            SnapshotError::Damaged(format!(
                "region at {start:#x} ({} bytes) runs past the end of the address space",
                data.len()
            ))
        })?;
        // Every region already held was checked the same way, so its end does not overflow.
        if self
            .regions
            .iter()
            .any(|r| start < r.start.saturating_add(r.data.len() as u64) && r.start < end)
        {
            return Err(SnapshotError::Damaged(format!(
                "region {start:#010x}..{end:#010x} overlaps another"
            )));
        }
        self.regions.push(SnapshotRegion { start, data });
        self.regions.sort_by_key(|r| r.start);
        Ok(())
    }

    /// Serialises to a writer.
    pub fn write_to(&self, mut w: impl Write) -> std::result::Result<(), SnapshotError> {
        let header = Header {
            description: self.description.clone(),
            elf: self.elf.clone(),
            registers: self.registers.clone(),
            regions: self
                .regions
                .iter()
                .map(|r| RegionHeader {
                    start: r.start,
                    len: r.data.len() as u64,
                })
                .collect(),
        };
        let json =
            serde_json::to_vec(&header).map_err(|e| SnapshotError::Damaged(e.to_string()))?;
        w.write_all(MAGIC)?;
        w.write_all(&FORMAT_VERSION.to_le_bytes())?;
        w.write_all(&(json.len() as u32).to_le_bytes())?;
        w.write_all(&json)?;
        for r in &self.regions {
            w.write_all(&r.data)?;
        }
        Ok(())
    }

    /// Parses from a reader; every length is checked before anything is allocated.
    pub fn read_from(mut r: impl Read) -> std::result::Result<Self, SnapshotError> {
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)
            .map_err(|_| SnapshotError::BadMagic)?;
        if &magic != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let mut word = [0u8; 4];
        r.read_exact(&mut word)?;
        let version = u32::from_le_bytes(word);
        if version != FORMAT_VERSION {
            return Err(SnapshotError::Version(version));
        }
        r.read_exact(&mut word)?;
        let header_len = u32::from_le_bytes(word);
        if header_len > MAX_HEADER {
            return Err(SnapshotError::Damaged(format!(
                "header length {header_len}"
            )));
        }
        let mut json = vec![0; header_len as usize];
        r.read_exact(&mut json)
            .map_err(|_| SnapshotError::Damaged("truncated header".into()))?;
        let header: Header =
            serde_json::from_slice(&json).map_err(|e| SnapshotError::Damaged(e.to_string()))?;
        if header.regions.len() > MAX_REGIONS {
            return Err(SnapshotError::Damaged(format!(
                "{} regions (at most {MAX_REGIONS})",
                header.regions.len()
            )));
        }
        // Lengths come from the file: summed with a check, so two halves of 2^64 are an error.
        let total = header
            .regions
            .iter()
            .try_fold(0u64, |acc, r| acc.checked_add(r.len));
        if total.is_none_or(|t| t > MAX_TOTAL) {
            return Err(SnapshotError::Damaged(format!(
                "regions add up to more than {MAX_TOTAL} bytes"
            )));
        }
        let mut snap = Snapshot {
            description: header.description,
            elf: header.elf,
            registers: header.registers,
            regions: Vec::new(),
        };
        for region in header.regions {
            let len = usize::try_from(region.len)
                .map_err(|_| SnapshotError::Damaged(format!("region length {}", region.len)))?;
            let mut data = vec![0; len];
            r.read_exact(&mut data).map_err(|_| {
                SnapshotError::Damaged(format!("region at {:#010x} is truncated", region.start))
            })?;
            snap.add_region(region.start, data)?;
        }
        Ok(snap)
    }

    /// Loads a snapshot file.
    pub fn load(path: &Path) -> std::result::Result<Self, SnapshotError> {
        let bytes = crate::input::read_regular(path, crate::input::MAX_DATA_BYTES)?;
        Self::read_from(bytes.as_slice())
    }

    /// Saves atomically (see [`crate::output`]).
    pub fn save(&self, path: &Path) -> std::result::Result<(), SnapshotError> {
        let mut buf = Vec::new();
        self.write_to(&mut buf)?;
        crate::output::write_atomic(path, &buf)?;
        Ok(())
    }

    fn register_by_name(&self, name: &str) -> Option<u64> {
        self.registers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

impl Memory for Snapshot {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len() as u64;
        // A read running past the end of the address space is in no region (a saturating end
        // would match a region at the top and slice past its data).
        let end = addr.checked_add(len);
        let region = self.regions.iter().find(|r| {
            addr >= r.start
                && end.is_some_and(|end| end <= r.start.saturating_add(r.data.len() as u64))
        });
        // `find` above checked the range lies inside the region; the slice is taken with `get`
        // all the same, so a region whose end saturated cannot make this panic.
        let bytes = region.and_then(|r| {
            let off = usize::try_from(addr.checked_sub(r.start)?).ok()?;
            r.data.get(off..off.checked_add(buf.len())?)
        });
        match bytes {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(TargetError::Unmapped {
                addr,
                len: buf.len(),
            }),
        }
    }
}

impl Registers for Snapshot {
    fn read_register(&mut self, reg: Register) -> Result<u64> {
        // Snapshots keep the names the backend gave (`sp`, `xpsr`); GDB numbers 13..15 and 25
        // are those registers too (`CoreRegisters::read` asks by number).
        let names: Vec<String> = match reg {
            Register::ProgramCounter | Register::Numbered(15) => vec!["pc".into(), "r15".into()],
            Register::StackPointer | Register::Numbered(13) => vec!["sp".into(), "r13".into()],
            Register::ReturnAddress | Register::Numbered(14) => vec!["lr".into(), "r14".into()],
            Register::Numbered(crate::cortex_m::GDB_XPSR) => {
                vec!["xpsr".into(), "cpsr".into(), "r25".into()]
            }
            Register::Argument(n) => vec![format!("r{n}")],
            Register::ReturnValue => vec!["r0".into()],
            Register::Numbered(n) => vec![format!("r{n}")],
        };
        names
            .iter()
            .find_map(|n| self.register_by_name(n))
            .ok_or(TargetError::Unsupported("this register in the snapshot"))
    }

    fn write_register(&mut self, _reg: Register, _value: u64) -> Result<()> {
        Err(TargetError::Unsupported("writing registers of a snapshot"))
    }

    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        Ok(self.registers.clone())
    }
}

impl Target for Snapshot {
    fn describe(&self) -> String {
        format!("snapshot ({})", self.description)
    }

    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A read from a region at the top of the address space that runs past 2^64 was matched
    /// (both ends saturated to u64::MAX) and sliced past the region's data: a panic.
    #[test]
    fn read_past_the_top_of_the_address_space_is_unmapped() {
        let mut s = Snapshot::default();
        s.add_region(u64::MAX - 16, vec![7; 16]).unwrap();
        let mut buf = [0u8; 10];
        assert!(matches!(
            s.read(u64::MAX - 4, &mut buf),
            Err(TargetError::Unmapped { .. })
        ));
        let mut buf = [0u8; 4];
        s.read(u64::MAX - 4, &mut buf).unwrap();
        assert_eq!(buf, [7; 4]);
    }

    fn sample() -> Snapshot {
        let mut s = Snapshot {
            description: "test".into(),
            elf: Some("fw.elf".into()),
            registers: vec![("pc".into(), 0x0800_0100), ("sp".into(), 0x2000_1000)],
            regions: vec![],
        };
        s.add_region(0x2000_0000, (0..=255).collect()).unwrap();
        s.add_region(0x1000_0000, vec![7; 16]).unwrap();
        s
    }

    #[test]
    fn round_trips_and_reads() {
        let s = sample();
        let mut bytes = Vec::new();
        s.write_to(&mut bytes).unwrap();
        let mut back = Snapshot::read_from(bytes.as_slice()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.read_u32(0x2000_0004).unwrap(), 0x0706_0504);
        assert_eq!(
            back.read_register(Register::ProgramCounter).unwrap(),
            0x0800_0100
        );
        assert!(matches!(
            back.read_u32(0x2000_00fe),
            Err(TargetError::Unmapped { .. })
        ));
    }

    #[test]
    fn rejects_damage() {
        let mut bytes = Vec::new();
        sample().write_to(&mut bytes).unwrap();
        assert!(matches!(
            Snapshot::read_from(&b"garbage!"[..]),
            Err(SnapshotError::BadMagic)
        ));
        let mut v2 = bytes.clone();
        v2[8] = 2;
        assert!(matches!(
            Snapshot::read_from(v2.as_slice()),
            Err(SnapshotError::Version(2))
        ));
        let truncated = &bytes[..bytes.len() - 10];
        assert!(matches!(
            Snapshot::read_from(truncated),
            Err(SnapshotError::Damaged(_))
        ));
        let mut huge = bytes.clone();
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            Snapshot::read_from(huge.as_slice()),
            Err(SnapshotError::Damaged(_))
        ));
    }

    /// A file with this header and no region bytes.
    fn with_header(json: &str) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend(FORMAT_VERSION.to_le_bytes());
        bytes.extend((json.len() as u32).to_le_bytes());
        bytes.extend(json.as_bytes());
        bytes
    }

    #[test]
    fn region_lengths_past_2_pow_64_are_damage_not_a_panic() {
        let half = 1u64 << 63;
        let json = format!(
            r#"{{"description":"","elf":null,"registers":[],"regions":[{{"start":0,"len":{half}}},{{"start":0,"len":{half}}},{{"start":0,"len":16}}]}}"#
        );
        let err = Snapshot::read_from(with_header(&json).as_slice()).unwrap_err();
        assert!(matches!(err, SnapshotError::Damaged(_)), "{err}");
        let json = format!(
            r#"{{"description":"","elf":null,"registers":[],"regions":[{{"start":{},"len":16}}]}}"#,
            u64::MAX - 4
        );
        let mut bytes = with_header(&json);
        bytes.extend([0u8; 16]);
        let err = Snapshot::read_from(bytes.as_slice()).unwrap_err();
        assert!(
            err.to_string().contains("end of the address space"),
            "{err}"
        );
    }

    #[test]
    fn a_header_with_too_many_regions_is_refused_quickly() {
        let regions: Vec<String> = (0..200_000)
            .map(|i| format!(r#"{{"start":{i},"len":0}}"#))
            .collect();
        let json = format!(
            r#"{{"description":"","elf":null,"registers":[],"regions":[{}]}}"#,
            regions.join(",")
        );
        let started = std::time::Instant::now();
        let err = Snapshot::read_from(with_header(&json).as_slice()).unwrap_err();
        assert!(err.to_string().contains("regions"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn rejects_overlapping_regions() {
        let mut s = sample();
        assert!(s.add_region(0x2000_0080, vec![0; 4]).is_err());
    }

    #[test]
    fn core_registers_read_by_gdb_number_from_a_snapshot() {
        let mut snap = Snapshot::default();
        let mut regs: Vec<(String, u64)> = (0..13).map(|i| (format!("r{i}"), i)).collect();
        regs.extend([
            ("sp".into(), 0x2000_1000),
            ("lr".into(), 0x0800_0101),
            ("pc".into(), 0x0800_0200),
            ("xpsr".into(), 0x0100_0000),
        ]);
        snap.registers = regs;
        let core = crate::cortex_m::CoreRegisters::read(&mut snap).unwrap();
        assert_eq!(core.sp(), 0x2000_1000);
        assert_eq!(core.pc(), 0x0800_0200);
        assert_eq!(core.xpsr, 0x0100_0000);
        assert_eq!(core.r[7], 7);
    }
}
