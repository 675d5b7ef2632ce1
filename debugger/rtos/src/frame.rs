//! The context a Cortex-M port of FreeRTOS saves on a task's stack when it switches the task
//! out (PendSV), decoded into the task's registers. `pxTopOfStack` points at the lowest saved
//! word; the layouts, from the ports' `xPortPendSVHandler` and `pxPortInitialiseStack`
//! (docs/rtos.md):
//!
//! - ARM_CM3 (no FPU context): r4..r11 at +0x00, then the hardware frame r0, r1,
//!   r2, r3, r12, lr, pc, xPSR at +0x20; 0x40 bytes.
//! - ARM_CM4F and ARM_CM7: r4..r11, then the `EXC_RETURN` the task was switched out with at
//!   +0x20. Bit 4 set: the basic hardware frame at +0x24; 0x44 bytes. Bit 4 clear (the task
//!   had used the FPU): s16..s31 at +0x24, the hardware frame at +0x64, then s0..s15, FPSCR
//!   and a reserved word at +0x84; 0xCC bytes.
//!
//! The task's stack pointer is `pxTopOfStack` plus the frame, plus 4 when the stacked xPSR's
//! bit 9 says the core inserted a padding word to align the hardware frame.

use memlife_core::cortex_m::exception::Stack;
use memlife_core::cortex_m::{CoreRegisters, ExcReturn, LR, PC, SP};

/// What the port's context switch saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextLayout {
    /// r4..r11 and the hardware frame (ARM_CM3).
    NoFpu,
    /// r4..r11, `EXC_RETURN`, and the FPU registers when the task used them (ARM_CM4F,
    /// ARM_CM7).
    Fpu,
}

/// Which of the three frames a task's saved context is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// ARM_CM3: 0x40 bytes.
    Basic,
    /// ARM_CM4F/CM7 without FPU context: 0x44 bytes.
    BasicWithExcReturn,
    /// ARM_CM4F/CM7 with FPU context: 0xCC bytes.
    Extended,
}

/// The largest frame: what a reader fetches at `pxTopOfStack` when it does not know the
/// shape yet.
pub const MAX_FRAME_LEN: u32 = 0xCC;

/// Where the hardware frame (r0..xPSR) starts in each frame, and where s16..s31 and s0..s15
/// are in the extended one.
const HW_BASIC: usize = 0x20;
const HW_WITH_EXC_RETURN: usize = 0x24;
const HW_EXTENDED: usize = 0x64;
const S16_EXTENDED: usize = 0x24;
const S0_EXTENDED: usize = 0x84;
const EXC_RETURN_AT: usize = 0x20;
/// xPSR bit 9: the core inserted a padding word above the hardware frame.
const XPSR_PADDED: u32 = 1 << 9;
/// xPSR bit 24: Thumb state, always set on a Cortex-M.
pub(crate) const XPSR_THUMB: u32 = 1 << 24;

impl FrameKind {
    /// Bytes of context at `pxTopOfStack`.
    pub fn size(self) -> u32 {
        match self {
            FrameKind::Basic => 0x40,
            FrameKind::BasicWithExcReturn => 0x44,
            FrameKind::Extended => 0xCC,
        }
    }

    /// The name the JSON and the table use.
    pub fn name(self) -> &'static str {
        match self {
            FrameKind::Basic => "basic-0x40",
            FrameKind::BasicWithExcReturn => "basic-0x44",
            FrameKind::Extended => "extended-0xcc",
        }
    }

    fn hardware_frame(self) -> usize {
        match self {
            FrameKind::Basic => HW_BASIC,
            FrameKind::BasicWithExcReturn => HW_WITH_EXC_RETURN,
            FrameKind::Extended => HW_EXTENDED,
        }
    }
}

/// The FPU registers of an extended frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FpRegisters {
    /// s0..s31.
    pub s: [u32; 32],
    /// FPSCR.
    pub fpscr: u32,
}

/// A switched-out task's registers, decoded from its stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedContext {
    /// The frame's shape.
    pub kind: FrameKind,
    /// r0..r15 and xPSR as the task will resume with them (sp above the frame and its padding
    /// word; xPSR without the padding flag).
    pub regs: CoreRegisters,
    /// The saved `EXC_RETURN` (ARM_CM4F/CM7 ports).
    pub exc_return: Option<u32>,
    /// s0..s31 and FPSCR, when the frame is extended.
    pub fp: Option<FpRegisters>,
}

/// Why a saved context could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Fewer bytes than the frame needs.
    #[error("saved context cut short: {need} bytes needed, {got} read")]
    Short {
        /// Bytes the frame needs.
        need: u32,
        /// Bytes there were.
        got: usize,
    },
    /// The word where the port saves `EXC_RETURN` is not a thread-mode, process-stack
    /// `EXC_RETURN` value.
    #[error("the word at +0x20 ({0:#010x}) is not the EXC_RETURN of a task (0xFFFFFFxD)")]
    NotExcReturn(u32),
    /// The frame's end wraps around the address space.
    #[error("the saved context at {0:#010x} runs past the end of the address space")]
    Wraps(u32),
}

/// Decodes the context saved at `top` (`pxTopOfStack`) from `bytes` (at least the frame's
/// length, read at `top`).
pub fn decode(layout: ContextLayout, top: u32, bytes: &[u8]) -> Result<SavedContext, FrameError> {
    let word = |off: usize| -> Option<u32> {
        let b = bytes.get(off..off.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let short = |need: u32| FrameError::Short {
        need,
        got: bytes.len(),
    };
    let (kind, exc_return) = match layout {
        ContextLayout::NoFpu => (FrameKind::Basic, None),
        ContextLayout::Fpu => {
            let raw = word(EXC_RETURN_AT).ok_or_else(|| short(FrameKind::Basic.size() + 4))?;
            let exc = ExcReturn::from_lr(raw)
                .filter(|e| e.from_thread_mode() && e.stack() == Stack::Process)
                .ok_or(FrameError::NotExcReturn(raw))?;
            let kind = if exc.fp_extended() {
                FrameKind::Extended
            } else {
                FrameKind::BasicWithExcReturn
            };
            (kind, Some(raw))
        }
    };
    if bytes.len() < kind.size() as usize {
        return Err(short(kind.size()));
    }
    let words = |base: usize, out: &mut [u32]| -> Result<(), FrameError> {
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = word(base + 4 * i).ok_or_else(|| short(kind.size()))?;
        }
        Ok(())
    };
    let mut r = [0u32; 16];
    words(0, &mut r[4..12])?;
    let mut hw = [0u32; 8];
    words(kind.hardware_frame(), &mut hw)?;
    r[..4].copy_from_slice(&hw[..4]);
    r[12] = hw[4];
    r[LR] = hw[5];
    r[PC] = hw[6];
    let xpsr = hw[7];
    let pad = if xpsr & XPSR_PADDED != 0 { 4 } else { 0 };
    r[SP] = top
        .checked_add(kind.size() + pad)
        .ok_or(FrameError::Wraps(top))?;
    let fp = if kind == FrameKind::Extended {
        let mut s = [0u32; 32];
        words(S0_EXTENDED, &mut s[..16])?;
        words(S16_EXTENDED, &mut s[16..])?;
        let mut fpscr = [0u32; 1];
        words(S0_EXTENDED + 16 * 4, &mut fpscr)?;
        Some(FpRegisters { s, fpscr: fpscr[0] })
    } else {
        None
    };
    Ok(SavedContext {
        kind,
        regs: CoreRegisters::new(r, xpsr & !XPSR_PADDED),
        exc_return,
        fp,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn bytes(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// r4..r11 = 0x44..0xBB, then the hardware frame r0..r3 = 0xA0..0xA3, r12, lr, pc, xPSR.
    fn callee() -> Vec<u32> {
        (4..12).map(|i| 0x11 * i).collect()
    }
    fn hardware(xpsr: u32) -> Vec<u32> {
        vec![0xA0, 0xA1, 0xA2, 0xA3, 0xAC, 0x0800_1235, 0x0800_2000, xpsr]
    }

    fn check_core(c: &SavedContext, top: u32, len: u32) {
        assert_eq!(c.regs.r[4], 0x44);
        assert_eq!(c.regs.r[11], 0xBB);
        assert_eq!(c.regs.r[..4], [0xA0, 0xA1, 0xA2, 0xA3]);
        assert_eq!(c.regs.r[12], 0xAC);
        assert_eq!((c.regs.lr(), c.regs.pc()), (0x0800_1235, 0x0800_2000));
        assert_eq!(c.regs.sp(), top + len);
        assert_eq!(c.regs.xpsr, XPSR_THUMB);
    }

    #[test]
    fn cortex_m3_frame_is_callee_saved_then_hardware() {
        let mut w = callee();
        w.extend(hardware(XPSR_THUMB));
        let c = decode(ContextLayout::NoFpu, 0x2000_1000, &bytes(&w)).unwrap();
        assert_eq!(c.kind, FrameKind::Basic);
        check_core(&c, 0x2000_1000, 0x40);
        assert_eq!((c.exc_return, c.fp), (None, None));
        // One word short is no frame.
        assert_eq!(
            decode(ContextLayout::NoFpu, 0x2000_1000, &bytes(&w[..15])),
            Err(FrameError::Short {
                need: 0x40,
                got: 60
            })
        );
    }

    #[test]
    fn cortex_m4f_basic_frame_has_exc_return_before_the_hardware_frame() {
        let mut w = callee();
        w.push(0xFFFF_FFFD);
        w.extend(hardware(XPSR_THUMB));
        let c = decode(ContextLayout::Fpu, 0x2000_1000, &bytes(&w)).unwrap();
        assert_eq!(c.kind, FrameKind::BasicWithExcReturn);
        check_core(&c, 0x2000_1000, 0x44);
        assert_eq!(c.exc_return, Some(0xFFFF_FFFD));
        assert_eq!(c.fp, None);
    }

    #[test]
    fn cortex_m4f_extended_frame_holds_every_fpu_register() {
        let mut w = callee();
        w.push(0xFFFF_FFED);
        w.extend((16..32).map(|i| 0xF000 + i)); // s16..s31
        w.extend(hardware(XPSR_THUMB | XPSR_PADDED));
        w.extend((0..16).map(|i| 0xF000 + i)); // s0..s15
        w.push(0x0300_0000); // FPSCR
        w.push(0xDEAD); // reserved
        assert_eq!(w.len() * 4, 0xCC);
        let c = decode(ContextLayout::Fpu, 0x2000_1000, &bytes(&w)).unwrap();
        assert_eq!(c.kind, FrameKind::Extended);
        // The padding word moves sp 4 bytes further; xPSR loses the flag.
        check_core(&c, 0x2000_1004, 0xCC);
        let fp = c.fp.unwrap();
        assert!(
            fp.s.iter()
                .enumerate()
                .all(|(i, s)| *s == 0xF000 + i as u32)
        );
        assert_eq!(fp.fpscr, 0x0300_0000);
        assert_eq!(
            decode(ContextLayout::Fpu, 0x2000_1000, &bytes(&w[..50])),
            Err(FrameError::Short {
                need: 0xCC,
                got: 200
            })
        );
    }

    #[test]
    fn garbage_where_exc_return_belongs_is_refused() {
        let mut w = callee();
        w.push(0x0800_0001);
        w.extend(hardware(XPSR_THUMB));
        assert_eq!(
            decode(ContextLayout::Fpu, 0x2000_1000, &bytes(&w)),
            Err(FrameError::NotExcReturn(0x0800_0001))
        );
        // An EXC_RETURN to handler mode or the main stack is not a task's.
        w[8] = 0xFFFF_FFF9;
        assert_eq!(
            decode(ContextLayout::Fpu, 0x2000_1000, &bytes(&w)),
            Err(FrameError::NotExcReturn(0xFFFF_FFF9))
        );
        assert!(matches!(
            decode(ContextLayout::Fpu, 0x2000_1000, &[]),
            Err(FrameError::Short { .. })
        ));
    }

    #[test]
    fn a_frame_at_the_top_of_memory_does_not_wrap() {
        let mut w = callee();
        w.extend(hardware(XPSR_THUMB));
        assert_eq!(
            decode(ContextLayout::NoFpu, u32::MAX - 0x10, &bytes(&w)),
            Err(FrameError::Wraps(u32::MAX - 0x10))
        );
    }
}
