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
//! Two return addresses are not calls:
//! - an `EXC_RETURN` value (`0xFFFFFFxx`): the caller is an exception entry. The walk crosses
//!   the exception frame the core stacked (memlife-core's `cortex_m::exception`) and goes on in
//!   the interrupted code, whose pc is where it resumes (looked up as it is). The frame is on
//!   the main stack at the handler's CFA, or on the process stack (a task an interrupt
//!   stopped), which the walk can read only when given the process stack pointer
//!   ([`unwind_with_psp`]);
//! - an RTOS's task-exit trap ([`TASK_EXIT_TRAPS`]): the frame is a task's entry function, the
//!   outermost frame of its stack.
//!
//! The walk ends, and says why in [`UnwindEnd`], at pc 0, at a task's entry, at a pc outside
//! every function, at an exception frame it cannot read, at a repeated `(pc, sp)`, at the frame
//! limit, or at the first read error. It is bounded and never panics on target data.

use std::collections::HashSet;

use memlife_core::Memory;
use memlife_core::cortex_m::exception::Stack;
use memlife_core::cortex_m::{self, CoreRegisters, ExcReturn, ExceptionFrame};

use crate::Symbols;
use crate::cfi::Row;
pub use crate::cfi::Unwinder;
pub use crate::task_exit::TASK_EXIT_TRAPS;

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
    /// An exception interrupted this code (the frames before it are the handler's): `pc` is
    /// where it resumes, not a return address.
    pub interrupted: bool,
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
        if self.interrupted {
            write!(f, " [interrupted]")?;
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
    /// The return address is an RTOS's task-exit trap ([`TASK_EXIT_TRAPS`]): the last frame
    /// is a task's entry function, the outermost frame of the task's stack.
    TaskEntry {
        /// The trap's address.
        exit: u64,
    },
    /// The return address is an `EXC_RETURN` value whose exception frame the walk cannot read:
    /// it is on the process stack and no process stack pointer was given, or it does not parse.
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
    /// The registers of the code the first exception frame crossed had interrupted.
    pub interrupted: Option<Interrupted>,
}

/// The registers of code an exception interrupted, recovered from its exception frame.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Interrupted {
    /// The `EXC_RETURN` value the handler returns with.
    pub exc_return: u32,
    /// r0..r15: r0..r3, r12, lr and pc as stacked, sp above the frame, r4..r11 as the walk
    /// recovered them through the handler's frames (`None`: not known).
    pub regs: [Option<u32>; 16],
    /// The stacked xPSR, without the padding flag.
    pub xpsr: u32,
}

/// A register value in an unwound frame: known, or not recoverable.
type Regs = [Option<u32>; 16];

impl Symbols {
    /// Walks the stack of a halted core; see [`backtrace`].
    pub fn backtrace(
        &self,
        mem: &mut dyn memlife_core::Memory,
        regs: &memlife_core::cortex_m::CoreRegisters,
        max_frames: usize,
    ) -> Vec<Frame> {
        backtrace(self, mem, regs, max_frames)
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
    unwind_with_psp(symbols, mem, regs, None, max_frames)
}

/// [`unwind`] for a core whose process stack pointer is `psp` (a probe reads it; `sp` in
/// handler mode is the main stack pointer): an exception frame on the process stack (a task
/// an interrupt stopped) is crossed too. Without it such a walk ends at the frame
/// ([`UnwindEnd::ExceptionFrame`]).
pub fn unwind_with_psp(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    regs: &CoreRegisters,
    psp: Option<u32>,
    max_frames: usize,
) -> Backtrace {
    let mut frames = Vec::new();
    let mut interrupted = None;
    let mut cur = Cursor {
        regs: regs.r.map(Some),
        pc: u64::from(regs.pc() & !1),
        sp: u64::from(regs.sp()),
        exact: true,
        fallback_used: false,
    };
    let mut resumed = false;
    let mut seen = HashSet::new();
    let end = loop {
        if frames.len() >= max_frames {
            break UnwindEnd::Limit;
        }
        if !seen.insert((cur.pc, cur.sp)) {
            break UnwindEnd::Loop;
        }
        // For callers, look up the call instruction rather than the return address.
        let lookup = if cur.exact {
            cur.pc
        } else {
            cur.pc.saturating_sub(2)
        };
        let in_function = symbols.function_at(lookup).is_some();
        let pushed = frames.len();
        push_frames(symbols, &mut frames, cur.pc, cur.sp, lookup, max_frames);
        for f in frames.iter_mut().skip(pushed) {
            f.interrupted = resumed;
        }
        if !in_function && !cur.exact {
            break UnwindEnd::NotInFunction { pc: cur.pc };
        }
        let (next, next_sp) = match caller(symbols, &mut cur, lookup, mem) {
            Ok(x) => x,
            Err(end) => break end,
        };
        let Some(ra) = next[PC] else {
            break UnwindEnd::Outermost;
        };
        // The reset value of lr: the reset handler was not called by anything.
        if ra == cortex_m::LR_AT_RESET {
            break UnwindEnd::Outermost;
        }
        if let Some(exc) = ExcReturn::from_lr(ra) {
            match cross(exc, next_sp, &next, psp, mem) {
                Ok(crossed) => {
                    interrupted.get_or_insert_with(|| crossed.interrupted.clone());
                    cur = crossed.cursor;
                    resumed = true;
                    continue;
                }
                Err(end) => break end,
            }
        }
        if ra & !1 == 0 {
            break UnwindEnd::Outermost;
        }
        if symbols.task_exit_traps().contains(&u64::from(ra & !1)) {
            break UnwindEnd::TaskEntry {
                exit: u64::from(ra & !1),
            };
        }
        cur.regs = next;
        // `lr` was spent as the return address; the caller's own `lr` is not recoverable.
        cur.regs[LR] = None;
        cur.regs[SP] = u32::try_from(next_sp).ok();
        cur.pc = u64::from(ra & !1);
        cur.sp = next_sp;
        cur.exact = false;
        resumed = false;
    };
    Backtrace {
        frames,
        end,
        interrupted,
    }
}

/// Where a walk stands: the registers of the frame being unwound.
struct Cursor {
    regs: Regs,
    pc: u64,
    sp: u64,
    /// `pc` is where the code stopped or resumes (frame 0, code an exception interrupted), not a
    /// return address: it is looked up as it is.
    exact: bool,
    /// The one "caller pc = lr" guess for code without CFI is used up (once per stack context).
    fallback_used: bool,
}

/// The caller's registers (`next[PC]` = the return address) and sp, by the CFI row at `lookup`,
/// or by "caller pc = lr" once where no CFI covers it.
fn caller(
    symbols: &Symbols,
    cur: &mut Cursor,
    lookup: u64,
    mem: &mut dyn Memory,
) -> Result<(Regs, u64), UnwindEnd> {
    let row = match symbols.unwinder().map(|u| u.row(lookup)) {
        Some(Ok(row)) => row,
        Some(Err(e)) => {
            return Err(UnwindEnd::BadCfi {
                reason: e.to_string(),
            });
        }
        None => None,
    };
    if let Some(row) = row {
        return step(&row, &cur.regs, mem);
    }
    // A leaf without CFI: it has not touched sp or lr (the best guess there is).
    if cur.fallback_used || cur.regs[LR].is_none() {
        return Err(UnwindEnd::NoUnwindInfo { pc: cur.pc });
    }
    cur.fallback_used = true;
    let mut next = cur.regs;
    next[PC] = cur.regs[LR];
    for r in [0, 1, 2, 3, 12] {
        next[r] = None;
    }
    Ok((next, cur.sp))
}

/// An exception frame crossed: where the interrupted code stands.
struct Crossed {
    cursor: Cursor,
    interrupted: Interrupted,
}

/// Crosses the exception frame an `EXC_RETURN` return address stands for. The frame is at the
/// handler's CFA (`cfa`) on the main stack, or at `psp` on the process stack. The interrupted
/// code's registers are the stacked ones, r4..r11 as unwound so far (the core does not stack
/// them; ARMv8-M's additional state context does), and the sp above the frame.
fn cross(
    exc: ExcReturn,
    cfa: u64,
    regs: &Regs,
    psp: Option<u32>,
    mem: &mut dyn Memory,
) -> Result<Crossed, UnwindEnd> {
    let unreadable = UnwindEnd::ExceptionFrame {
        exc_return: exc.value(),
    };
    let at = match exc.stack() {
        Stack::Main => u32::try_from(cfa).ok(),
        Stack::Process => psp,
    }
    .ok_or_else(|| unreadable.clone())?;
    let frame = ExceptionFrame::read(mem, exc, at)
        .map_err(|e| UnwindEnd::ReadError {
            addr: u64::from(at),
            reason: e.to_string(),
        })?
        .ok_or_else(|| unreadable.clone())?;
    // The stacked registers, sp above the frame and xPSR without its padding flag; r4..r11
    // are the additional state context's, or else not stacked (zeros here, not taken).
    let stacked = frame
        .interrupted(&CoreRegisters::default())
        .ok_or(unreadable)?;
    let mut next = *regs;
    let taken: &[usize] = if frame.r4_r11.is_some() {
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, SP, LR, PC]
    } else {
        &[0, 1, 2, 3, 12, SP, LR, PC]
    };
    for &i in taken {
        next[i] = Some(stacked.r[i]);
    }
    let interrupted = Interrupted {
        exc_return: exc.value(),
        regs: next,
        xpsr: stacked.xpsr,
    };
    Ok(Crossed {
        cursor: Cursor {
            regs: next,
            pc: u64::from(stacked.pc() & !1),
            sp: u64::from(stacked.sp()),
            exact: true,
            fallback_used: false,
        },
        interrupted,
    })
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
            interrupted: false,
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
            interrupted: false,
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

    /// Stacks built by hand over the RTOS firmware's own CFI (no QEMU): the task-exit trap and
    /// exception frames.
    mod rtos {
        use super::*;

        /// Where the synthetic stacks live.
        const RAM: u64 = 0x2000_0000;
        const RAM_LEN: usize = 0x1000;
        /// The stack pointer frame 0 starts with.
        const TOP: u32 = 0x2000_0800;

        struct Fw {
            symbols: Symbols,
            ram: Vec<u8>,
        }

        impl Fw {
            fn new(board: &str) -> Fw {
                let elf = memlife_testkit::firmware::elf("rtos", &format!("{board}-healthy"));
                Fw {
                    symbols: Symbols::load(&elf).unwrap(),
                    ram: vec![0x5a; RAM_LEN],
                }
            }

            fn start(&self, function: &str) -> u32 {
                self.symbols.function(function).unwrap().entry as u32
            }

            /// An address in the middle of `function`'s body (where its frame is set up).
            fn middle(&self, function: &str) -> u32 {
                let f = self.symbols.function(function).unwrap();
                (f.entry + f.size / 2) as u32 & !1
            }

            fn put(&mut self, addr: u32, value: u32) {
                let off = (u64::from(addr) - RAM) as usize;
                self.ram[off..off + 4].copy_from_slice(&value.to_le_bytes());
            }

            /// Writes the frame of the code at `pc` (looked up at `lookup`) whose sp is `sp`,
            /// saving `ra` where its CFI says `lr` is saved; the caller's sp.
            fn frame(&mut self, lookup: u64, sp: u32, ra: u32) -> u32 {
                let row = self
                    .symbols
                    .unwinder()
                    .unwrap()
                    .row(lookup)
                    .unwrap()
                    .unwrap();
                assert_eq!(usize::from(row.cfa_register), SP, "{lookup:#x}");
                let cfa = (i64::from(sp) + row.cfa_offset) as u32;
                let lr = row.rules.iter().find_map(|(r, rule)| match rule {
                    gimli::RegisterRule::Offset(n) if usize::from(*r) == LR => Some(*n),
                    _ => None,
                });
                let at = lr.unwrap_or_else(|| panic!("{lookup:#x} saves no lr"));
                self.put((i64::from(cfa) + at) as u32, ra);
                cfa
            }

            fn memory(&self) -> Snapshot {
                let mut s = Snapshot::default();
                s.add_region(RAM, self.ram.clone()).unwrap();
                s
            }

            fn unwind(&self, regs: &CoreRegisters, psp: Option<u32>) -> Backtrace {
                unwind_with_psp(&self.symbols, &mut self.memory(), regs, psp, 32)
            }

            fn exit(&self) -> u32 {
                let traps = self.symbols.task_exit_traps();
                assert_eq!(traps.len(), 1);
                traps[0] as u32
            }
        }

        fn regs(pc: u32, lr: u32, sp: u32) -> CoreRegisters {
            let mut r = [0u32; 16];
            r[PC] = pc;
            r[LR] = lr;
            r[SP] = sp;
            CoreRegisters::new(r, 0x0100_0000)
        }

        fn names(bt: &Backtrace) -> Vec<&str> {
            bt.frames
                .iter()
                .map(|f| f.function.as_deref().unwrap_or("??"))
                .collect()
        }

        /// A task that never ran (its entry function's first instruction, `lr` the trap
        /// `pxPortInitialiseStack` put there) and a task in its body (the trap saved on its
        /// stack): both chains end at the entry function. Before, the trap was read as a call
        /// and the chain went on in the function the linker put before it (xPortPendSVHandler
        /// on the Cortex-M3 build).
        #[test]
        fn a_chain_ends_at_the_tasks_entry_function() {
            for board in ["mps2-an385", "netduinoplus2"] {
                let mut fw = Fw::new(board);
                let exit = fw.exit();
                let entry = fw.start("worker_task");
                let bt = fw.unwind(&regs(entry, exit | 1, TOP), None);
                assert_eq!(names(&bt), ["worker_task"], "{board}");
                assert_eq!(
                    bt.end,
                    UnwindEnd::TaskEntry {
                        exit: u64::from(exit)
                    }
                );

                // mem_alloc called from producer_task's body, which saved the trap as its
                // return address.
                let call = fw.middle("producer_task") | 1;
                fw.frame(u64::from(call & !1) - 2, TOP, exit | 1);
                let bt = fw.unwind(&regs(fw.start("mem_alloc"), call, TOP), None);
                let names = names(&bt);
                assert_eq!(names.last(), Some(&"producer_task"), "{board}: {names:?}");
                assert!(!names.contains(&"xPortPendSVHandler"), "{board}: {names:?}");
                assert_eq!(
                    bt.end,
                    UnwindEnd::TaskEntry {
                        exit: u64::from(exit)
                    }
                );
                assert_eq!(bt.interrupted, None);
            }
        }

        /// The eight words the core stacks on exception entry: r0..r3, r12, lr, pc, xPSR.
        fn stack_frame(fw: &mut Fw, at: u32, lr: u32, pc: u32, xpsr: u32) {
            for (i, v) in [0xA0, 0xA1, 0xA2, 0xA3, 0xAC, lr, pc, xpsr]
                .iter()
                .enumerate()
            {
                fw.put(at + 4 * i as u32, *v);
            }
        }

        /// The SysTick handler at its first instruction, `lr` an EXC_RETURN: the walk crosses
        /// the exception frame into the code it interrupted (a task's body), whose pc is where
        /// it resumes, and ends at the task's entry. On the main stack the frame is at the
        /// handler's sp; on the process stack at the given PSP; without a PSP the walk stops
        /// at the frame, as before.
        #[test]
        fn a_handlers_chain_goes_on_in_the_interrupted_task() {
            for board in ["mps2-an385", "netduinoplus2"] {
                let mut fw = Fw::new(board);
                let exit = fw.exit();
                let handler = fw.start("xPortSysTickHandler");
                let resume = fw.middle("producer_task");
                // The task's frame above the exception frame (and its padding word).
                let task_sp = TOP + 0x24;
                fw.frame(u64::from(resume), task_sp, exit | 1);
                stack_frame(&mut fw, TOP, 0x0800_0001, resume, 0x0100_0000 | 1 << 9);

                let bt = fw.unwind(&regs(handler, 0xFFFF_FFF9, TOP), None);
                assert_eq!(
                    names(&bt),
                    ["xPortSysTickHandler", "producer_task"],
                    "{board}"
                );
                assert!(!bt.frames[0].interrupted && bt.frames[1].interrupted);
                assert_eq!(bt.frames[1].pc, u64::from(resume));
                assert_eq!(bt.frames[1].sp, u64::from(task_sp), "padding word skipped");
                assert_eq!(
                    bt.end,
                    UnwindEnd::TaskEntry {
                        exit: u64::from(exit)
                    }
                );
                let i = bt.interrupted.as_ref().unwrap();
                assert_eq!(i.exc_return, 0xFFFF_FFF9);
                assert_eq!(i.regs[PC], Some(resume));
                assert_eq!(i.regs[SP], Some(task_sp));
                assert_eq!(
                    i.regs[..4],
                    [Some(0xA0), Some(0xA1), Some(0xA2), Some(0xA3)]
                );
                assert_eq!(i.xpsr, 0x0100_0000, "without the padding flag");

                // The same frame on the process stack: read at the PSP given, else not at all.
                let handler_sp = TOP - 0x100;
                let bt = fw.unwind(&regs(handler, 0xFFFF_FFFD, handler_sp), Some(TOP));
                assert_eq!(
                    names(&bt),
                    ["xPortSysTickHandler", "producer_task"],
                    "{board}"
                );
                assert_eq!(
                    bt.end,
                    UnwindEnd::TaskEntry {
                        exit: u64::from(exit)
                    }
                );
                let bt = fw.unwind(&regs(handler, 0xFFFF_FFFD, handler_sp), None);
                assert_eq!(names(&bt), ["xPortSysTickHandler"], "{board}");
                assert_eq!(
                    bt.end,
                    UnwindEnd::ExceptionFrame {
                        exc_return: 0xFFFF_FFFD
                    }
                );
            }
        }

        /// An extended frame (FP context: EXC_RETURN bit 4 clear) is 26 words: the task's sp
        /// is above all of them.
        #[test]
        fn an_extended_frame_moves_the_interrupted_sp_past_the_fp_registers() {
            let mut fw = Fw::new("netduinoplus2");
            let exit = fw.exit();
            let resume = fw.middle("producer_task");
            let task_sp = TOP + 26 * 4;
            fw.frame(u64::from(resume), task_sp, exit | 1);
            stack_frame(&mut fw, TOP, 0x0800_0001, resume, 0x0100_0000);
            let handler = fw.start("xPortSysTickHandler");
            let bt = fw.unwind(&regs(handler, 0xFFFF_FFE9, TOP), None);
            assert_eq!(names(&bt), ["xPortSysTickHandler", "producer_task"]);
            assert_eq!(bt.frames[1].sp, u64::from(task_sp));
            assert_eq!(
                bt.end,
                UnwindEnd::TaskEntry {
                    exit: u64::from(exit)
                }
            );
        }

        /// Exception frames that cannot be read or make no sense end the walk with a reason.
        #[test]
        fn an_unreadable_or_wrapping_exception_frame_ends_the_walk() {
            let fw = Fw::new("mps2-an385");
            let handler = fw.start("xPortSysTickHandler");
            // Outside the RAM: the read fails.
            let bt = fw.unwind(&regs(handler, 0xFFFF_FFF9, 0x3000_0000), None);
            assert!(
                matches!(
                    bt.end,
                    UnwindEnd::ReadError {
                        addr: 0x3000_0000,
                        ..
                    }
                ),
                "{:?}",
                bt.end
            );
            // A PSP at the top of the address space: the frame would wrap.
            let bt = fw.unwind(&regs(handler, 0xFFFF_FFFD, TOP), Some(u32::MAX - 8));
            assert!(
                matches!(
                    bt.end,
                    UnwindEnd::ReadError { .. } | UnwindEnd::ExceptionFrame { .. }
                ),
                "{:?}",
                bt.end
            );
            assert_eq!(bt.frames.len(), 1);
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
