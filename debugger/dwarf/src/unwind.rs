//! Call-stack unwinding through DWARF call frame information (`.debug_frame`, else `.eh_frame`).
//!
//! [`Unwinder`] keeps the CFI sections of one image; [`backtrace`] walks a halted core's stack
//! from its registers ([`CoreRegisters`]) through a [`Memory`], and names every frame with
//! [`Symbols::locate`](crate::Symbols::locate). It is written for 32-bit ARM (Cortex-M): DWARF
//! register numbers 0..15 are r0..r15, the return address column is `lr` (r14) and the thumb bit
//! of a return address is cleared.
//!
//! How one frame is unwound:
//! - the CFI row is evaluated at the exact pc for frame 0 (so at a function's first instruction
//!   the CFA is `sp + 0` and `lr` is still live in its register), and at `return address - 2`
//!   (inside the call instruction) for callers, because a call to a `noreturn` function may be a
//!   function's last instruction and its return address then belongs to the next function;
//! - the saved registers (`offset(N)` rules) are read from the stack in one bulk read;
//! - the caller's pc is the return address (thumb bit cleared) and its sp is the CFA;
//! - callee-saved registers without a rule keep their value; caller-saved ones (r0-r3, r12)
//!   become unknown, and so does `lr` once it has been used as a return address;
//! - where no FDE covers the pc (a leaf without CFI), "caller pc = lr, sp unchanged" is tried
//!   once.
//!
//! The walk ends, and says why in [`UnwindEnd`], at pc 0, at a pc outside every function, at an
//! `EXC_RETURN` value (an exception frame: interrupt handlers are not unwound into the
//! interrupted code), at a repeated `(pc, sp)`, at the frame limit, or at the first read error.
//! It is bounded and never panics on target data.

use std::collections::HashSet;

use gimli::UnwindSection;
use memlife_core::Memory;
use memlife_core::cortex_m::{self, CoreRegisters};
use object::{Object, ObjectSection};

use crate::Symbols;
use crate::elf::{ElfBytes, Reader, section_reader};

/// DWARF register number of the stack pointer (r13) on ARM.
const SP: usize = 13;
/// DWARF register number of the link register (r14), the return address column.
const LR: usize = 14;
/// DWARF register number of the program counter (r15).
const PC: usize = 15;
/// A saved-register area larger than this is not a real stack frame (damaged CFI).
const MAX_SAVE_AREA: i64 = 4096;
/// Inlined frames reported per physical frame at most.
const MAX_INLINE: usize = 16;

/// One frame of a backtrace. A physical frame whose pc lies in inlined code is reported as
/// several frames (the inlined functions first), all with the same `pc` and `sp`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Frame {
    /// For frame 0 the current pc; for the others the return address (thumb bit cleared).
    pub pc: u64,
    /// The frame's stack pointer: the current sp for frame 0, the CFA of the callee otherwise.
    pub sp: u64,
    /// Function name.
    pub function: Option<String>,
    /// Source file of the pc (for callers: of the call instruction).
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// This frame is a function inlined into the next frame (same pc, no stack frame of its own).
    pub inlined: bool,
}

impl std::fmt::Display for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:#010x} in {}",
            self.pc,
            self.function.as_deref().unwrap_or("??")
        )?;
        if let Some(file) = &self.file {
            write!(f, " at {file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
        }
        if self.inlined {
            write!(f, " [inlined]")?;
        }
        Ok(())
    }
}

/// Why a backtrace ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "end", rename_all = "snake_case")]
#[non_exhaustive]
pub enum UnwindEnd {
    /// The outermost frame: no return address is known (`main` that never returns), or the
    /// return address is 0 or the reset value of `lr` (`0xffffffff`, above the reset handler).
    Outermost,
    /// The return address is an `EXC_RETURN` value: the frame above is an exception entry.
    ExceptionFrame {
        /// The `EXC_RETURN` value found in `lr`.
        exc_return: u32,
    },
    /// A return address lies outside every function of the image.
    NotInFunction {
        /// The address.
        pc: u64,
    },
    /// The same `(pc, sp)` came round again.
    Loop,
    /// `max_frames` frames were produced.
    Limit,
    /// No CFI covers this pc, and the one "caller pc = lr" fallback is used up.
    NoUnwindInfo {
        /// The address.
        pc: u64,
    },
    /// The CFI asks for something this unwinder does not evaluate (a DWARF expression).
    Unsupported {
        /// What.
        what: String,
    },
    /// The CFI could not be parsed.
    BadCfi {
        /// What gimli said.
        reason: String,
    },
    /// Reading saved registers from the stack failed.
    ReadError {
        /// First address of the failed read.
        addr: u64,
        /// What the target said.
        reason: String,
    },
}

/// A backtrace and why it ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Backtrace {
    /// Frames, innermost first.
    pub frames: Vec<Frame>,
    /// Why the walk stopped.
    pub end: UnwindEnd,
}

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

/// A register value in an unwound frame: known, or not recoverable.
type Regs = [Option<u32>; 16];

/// The part of a CFI row this unwinder evaluates, copied out of gimli's context.
struct Row {
    cfa_register: u16,
    cfa_offset: i64,
    rules: Vec<(u16, gimli::RegisterRule<usize>)>,
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
    fn row(&self, pc: u64) -> Result<Option<Row>, gimli::Error> {
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

/// Walks the stack of a halted core: frame 0 is `regs.pc()`, then one frame per caller, at most
/// `max_frames` frames in all (inlined frames count). Never fails: the frames found so far are
/// returned, and [`unwind`] says why the walk stopped.
pub fn backtrace(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    regs: &CoreRegisters,
    max_frames: usize,
) -> Vec<Frame> {
    unwind(symbols, mem, regs, max_frames).frames
}

/// [`backtrace`], with the reason the walk ended.
pub fn unwind(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    regs: &CoreRegisters,
    max_frames: usize,
) -> Backtrace {
    let mut frames = Vec::new();
    let mut cur: Regs = regs.r.map(Some);
    let mut pc = u64::from(regs.pc() & !1);
    let mut sp = u64::from(regs.sp());
    let mut first = true;
    let mut fallback_used = false;
    let mut seen = HashSet::new();
    let end = loop {
        if frames.len() >= max_frames {
            break UnwindEnd::Limit;
        }
        if !seen.insert((pc, sp)) {
            break UnwindEnd::Loop;
        }
        // For callers, look up the call instruction rather than the return address.
        let lookup = if first { pc } else { pc.saturating_sub(2) };
        let in_function = symbols.function_at(lookup).is_some();
        push_frames(symbols, &mut frames, pc, sp, lookup, max_frames);
        if !in_function && !first {
            break UnwindEnd::NotInFunction { pc };
        }
        first = false;
        let row = match symbols.unwinder().map(|u| u.row(lookup)) {
            Some(Ok(row)) => row,
            Some(Err(e)) => {
                break UnwindEnd::BadCfi {
                    reason: e.to_string(),
                };
            }
            None => None,
        };
        let (next, next_sp) = match row {
            Some(row) => match step(&row, &cur, mem) {
                Ok(x) => x,
                Err(end) => break end,
            },
            None => {
                // A leaf without CFI: it has not touched sp or lr (the best guess there is).
                if fallback_used || cur[LR].is_none() {
                    break UnwindEnd::NoUnwindInfo { pc };
                }
                fallback_used = true;
                let mut next = cur;
                next[PC] = cur[LR];
                for r in [0, 1, 2, 3, 12] {
                    next[r] = None;
                }
                (next, sp)
            }
        };
        let Some(ra) = next[PC] else {
            break UnwindEnd::Outermost;
        };
        // The reset value of lr: the reset handler was not called by anything.
        if ra == cortex_m::LR_AT_RESET {
            break UnwindEnd::Outermost;
        }
        if cortex_m::ExcReturn::from_lr(ra).is_some() {
            break UnwindEnd::ExceptionFrame { exc_return: ra };
        }
        if ra & !1 == 0 {
            break UnwindEnd::Outermost;
        }
        cur = next;
        // `lr` was spent as the return address; the caller's own `lr` is not recoverable.
        cur[LR] = None;
        cur[SP] = u32::try_from(next_sp).ok();
        pc = u64::from(ra & !1);
        sp = next_sp;
    };
    Backtrace { frames, end }
}

/// Adds the frames of one physical frame (inlined functions first).
fn push_frames(
    symbols: &Symbols,
    frames: &mut Vec<Frame>,
    pc: u64,
    sp: u64,
    lookup: u64,
    max_frames: usize,
) {
    let locations = symbols.locate(lookup);
    if locations.is_empty() {
        frames.push(Frame {
            pc,
            sp,
            function: None,
            file: None,
            line: None,
            inlined: false,
        });
        return;
    }
    let n = locations.len().min(MAX_INLINE);
    for (i, loc) in locations.into_iter().take(n).enumerate() {
        if frames.len() >= max_frames {
            return;
        }
        frames.push(Frame {
            pc,
            sp,
            function: loc.function,
            file: loc.file,
            line: loc.line,
            inlined: i + 1 < n,
        });
    }
}

/// Applies one CFI row: the caller's registers (`next[PC]` = the return address) and its sp.
fn step(row: &Row, cur: &Regs, mem: &mut dyn Memory) -> Result<(Regs, u64), UnwindEnd> {
    let base = cur
        .get(usize::from(row.cfa_register))
        .copied()
        .flatten()
        .ok_or_else(|| UnwindEnd::Unsupported {
            what: if row.cfa_register == u16::MAX {
                "a CFA defined by a DWARF expression".into()
            } else {
                format!("a CFA based on unknown register r{}", row.cfa_register)
            },
        })?;
    // Offsets come from the ELF: every sum is checked, a result outside 0..=u32::MAX ends the
    // walk as unsupported.
    let cfa = i64::from(base)
        .checked_add(row.cfa_offset)
        .filter(|c| (0..=i64::from(u32::MAX)).contains(c))
        .ok_or_else(|| UnwindEnd::Unsupported {
            what: format!(
                "CFA r{}{:+} outside the address space",
                row.cfa_register, row.cfa_offset
            ),
        })?;
    // One bulk read for every register saved at CFA+N.
    let offsets = row.rules.iter().filter_map(|(_, rule)| match rule {
        gimli::RegisterRule::Offset(n) => Some(*n),
        _ => None,
    });
    let (lo, hi) = offsets.fold((i64::MAX, i64::MIN), |(lo, hi), n| (lo.min(n), hi.max(n)));
    let saved = if lo <= hi {
        let span = hi
            .checked_sub(lo)
            .filter(|&span| span <= MAX_SAVE_AREA)
            .ok_or_else(|| UnwindEnd::Unsupported {
                what: format!("a save area from CFA{lo:+} to CFA{hi:+}"),
            })?;
        let start = cfa
            .checked_add(lo)
            .and_then(|s| u32::try_from(s).ok())
            .ok_or_else(|| UnwindEnd::Unsupported {
                what: format!("a register saved outside the address space (CFA {cfa:#x}{lo:+})"),
            })?;
        let start = u64::from(start);
        // 0 <= span <= MAX_SAVE_AREA, so this is exact.
        let len = usize::try_from(span + 4).unwrap_or(0);
        let bytes = mem.read_vec(start, len).map_err(|e| UnwindEnd::ReadError {
            addr: start,
            reason: e.to_string(),
        })?;
        Some((lo, bytes))
    } else {
        None
    };
    let load = |n: i64| -> Option<u32> {
        let (lo, bytes) = saved.as_ref()?;
        let at = usize::try_from(n.checked_sub(*lo)?).ok()?;
        let word = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
    };

    let mut next: Regs = *cur;
    // Caller-saved registers do not survive a call (AAPCS).
    for r in [0, 1, 2, 3, 12] {
        next[r] = None;
    }
    // Without a rule for the return address column, lr still holds it (function entry, leaf).
    next[PC] = cur[LR];
    for (reg, rule) in &row.rules {
        let value = match rule {
            gimli::RegisterRule::Undefined => None,
            gimli::RegisterRule::SameValue => cur.get(usize::from(*reg)).copied().flatten(),
            gimli::RegisterRule::Offset(n) => load(*n),
            gimli::RegisterRule::ValOffset(n) => {
                cfa.checked_add(*n).and_then(|v| u32::try_from(v).ok())
            }
            gimli::RegisterRule::Register(r) => cur.get(usize::from(r.0)).copied().flatten(),
            gimli::RegisterRule::Constant(c) => u32::try_from(*c).ok(),
            _ => None,
        };
        let reg = usize::from(*reg);
        if reg == LR {
            next[PC] = value;
            next[LR] = value;
        } else if reg < 16 && reg != SP {
            next[reg] = value;
        }
    }
    // cfa was checked to lie in 0..=u32::MAX.
    let cfa = u32::try_from(cfa).unwrap_or(0);
    next[SP] = Some(cfa);
    Ok((next, u64::from(cfa)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use memlife_core::Snapshot;

    fn ram() -> Snapshot {
        let mut s = Snapshot::default();
        s.add_region(0x2000_0000, vec![0x11; 0x100]).unwrap();
        s
    }

    fn regs() -> Regs {
        let mut r: Regs = [Some(0); 16];
        r[SP] = Some(0x2000_0080);
        r[LR] = Some(0x0800_0101);
        r
    }

    fn row(cfa_offset: i64, rules: Vec<(u16, gimli::RegisterRule<usize>)>) -> Row {
        Row {
            cfa_register: SP as u16,
            cfa_offset,
            rules,
        }
    }

    /// CFI offsets at the ends of i64 (what a damaged or hostile ELF can say) end the walk as
    /// unsupported; before, each of these overflowed (a panic in debug builds, a wrap in
    /// release ones).
    #[test]
    fn extreme_cfi_offsets_end_the_walk_without_overflow() {
        use gimli::RegisterRule::{Offset, ValOffset};
        let cases = [
            row(i64::MAX, vec![]),
            row(i64::MIN, vec![]),
            row(
                0,
                vec![(LR as u16, Offset(i64::MIN)), (4, Offset(i64::MAX))],
            ),
            row(0, vec![(LR as u16, Offset(i64::MAX))]),
            row(0, vec![(LR as u16, Offset(i64::MIN))]),
            row(8, vec![(LR as u16, ValOffset(i64::MAX))]),
        ];
        for (i, r) in cases.iter().enumerate() {
            match step(r, &regs(), &mut ram()) {
                Err(UnwindEnd::Unsupported { .. } | UnwindEnd::ReadError { .. }) => {}
                Ok((next, _)) => assert_eq!(next[PC], None, "case {i}"),
                Err(other) => panic!("case {i}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_sound_row_still_unwinds() {
        let r = row(8, vec![(LR as u16, gimli::RegisterRule::Offset(-4))]);
        let (next, sp) = step(&r, &regs(), &mut ram()).unwrap();
        assert_eq!(sp, 0x2000_0088);
        assert_eq!(next[PC], Some(0x1111_1111));
    }
}
