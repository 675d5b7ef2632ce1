//! [`Unwinder`]: the call frame information of one image (`.debug_frame`, else `.eh_frame`)
//! and the CFI row at a pc, which `unwind` evaluates frame by frame. Apart from `unwind`
//! because [`Symbols`](crate::Symbols) keeps the sections from its one parse of the file.

use gimli::UnwindSection;
use object::{Object, ObjectSection};

use crate::elf::{ElfBytes, Reader, section_reader};

/// The CFI sections of one image.
pub struct Unwinder {
    debug_frame: Option<gimli::DebugFrame<Reader>>,
    eh_frame: Option<(gimli::EhFrame<Reader>, gimli::BaseAddresses)>,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("debug_frame", &self.debug_frame.is_some())
            .field("eh_frame", &self.eh_frame.is_some())
            .finish()
    }
}

/// The part of a CFI row this unwinder evaluates, copied out of gimli's context.
pub(crate) struct Row {
    pub(crate) cfa_register: u16,
    pub(crate) cfa_offset: i64,
    pub(crate) rules: Vec<(u16, gimli::RegisterRule<usize>)>,
}

impl Unwinder {
    /// Takes `.debug_frame` and `.eh_frame` from the parsed ELF (readers over its shared
    /// bytes); `None` when the image has neither.
    pub(crate) fn from_object(
        file: &object::File<'_>,
        bytes: &ElfBytes,
        endian: gimli::RunTimeEndian,
        address_size: u8,
    ) -> Option<Self> {
        let section = |name: &str| section_reader(file, bytes, name, endian);
        let debug_frame = section(".debug_frame").map(|s| {
            let mut df = gimli::DebugFrame::from(s.reader);
            // `.debug_frame` version 1 does not record the address size; gimli would assume
            // the host's.
            df.set_address_size(address_size);
            df
        });
        let eh_frame = section(".eh_frame").map(|s| {
            let mut eh = gimli::EhFrame::from(s.reader);
            eh.set_address_size(address_size);
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(s.address);
            if let Some(text) = file.section_by_name(".text") {
                bases = bases.set_text(text.address());
            }
            (eh, bases)
        });
        if debug_frame.is_none() && eh_frame.is_none() {
            return None;
        }
        Some(Unwinder {
            debug_frame,
            eh_frame,
        })
    }

    /// Whether a `.debug_frame` section is present.
    pub fn has_debug_frame(&self) -> bool {
        self.debug_frame.is_some()
    }

    /// Whether an `.eh_frame` section is present.
    pub fn has_eh_frame(&self) -> bool {
        self.eh_frame.is_some()
    }

    /// Whether any FDE covers `pc`.
    pub fn covers(&self, pc: u64) -> bool {
        matches!(self.row(pc), Ok(Some(_)))
    }

    /// The CFI row at `pc`: `Ok(None)` when no FDE covers it.
    pub(crate) fn row(&self, pc: u64) -> Result<Option<Row>, gimli::Error> {
        let mut ctx = gimli::UnwindContext::new();
        if let Some(df) = &self.debug_frame {
            let bases = gimli::BaseAddresses::default();
            match df.unwind_info_for_address(
                &bases,
                &mut ctx,
                pc,
                gimli::DebugFrame::cie_from_offset,
            ) {
                Ok(row) => return Ok(Some(copy_row(row))),
                Err(gimli::Error::NoUnwindInfoForAddress) => {}
                Err(e) => return Err(e),
            }
        }
        if let Some((eh, bases)) = &self.eh_frame {
            match eh.unwind_info_for_address(bases, &mut ctx, pc, gimli::EhFrame::cie_from_offset) {
                Ok(row) => return Ok(Some(copy_row(row))),
                Err(gimli::Error::NoUnwindInfoForAddress) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

fn copy_row(row: &gimli::UnwindTableRow<usize>) -> Row {
    let (cfa_register, cfa_offset) = match row.cfa() {
        gimli::CfaRule::RegisterAndOffset { register, offset } => (register.0, *offset),
        // Marked by an impossible register; `step` reports it as unsupported.
        gimli::CfaRule::Expression(_) => (u16::MAX, 0),
    };
    Row {
        cfa_register,
        cfa_offset,
        rules: row
            .registers()
            .map(|(r, rule)| (r.0, rule.clone()))
            .collect(),
    }
}
