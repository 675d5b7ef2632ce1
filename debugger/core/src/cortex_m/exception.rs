//! Exception entry as the core leaves it on the stack: the `EXC_RETURN` value in `lr` and the
//! exception frame, from which a fault handler's caller (the code that faulted) is recovered.
//!
//! The facts, from the ARMv6-M, ARMv7-M and ARMv8-M Architecture Reference Manuals (exception
//! entry and return, stack alignment on exception entry):
//! - On entry the core pushes the *basic frame* on the stack in use (MSP or PSP), eight words at
//!   increasing addresses from the new stack pointer: r0, r1, r2, r3, r12, lr, the return
//!   address, xPSR. r4..r11 are not stacked: they keep their values in the handler until it
//!   saves them itself.
//! - With the floating-point extension and an active FP context, the frame is *extended*: the
//!   eight words, then s0..s15, FPSCR and one reserved word (26 words). With lazy stacking the
//!   space is reserved and filled only if the handler uses the FPU, so those values may be stale.
//! - When the stack pointer was not 8-byte aligned at entry, the core inserts one padding word
//!   above the frame and sets bit 9 of the *stacked* xPSR; the interrupted code's sp is then
//!   4 bytes higher than frame + frame length.
//! - `lr` holds `EXC_RETURN` in the handler: `0xFFFFFFxx` (ARMv6-M and ARMv7-M: `F1` handler
//!   mode on MSP, `F9` thread mode on MSP, `FD` thread mode on PSP; `E1`/`E9`/`ED` the same with
//!   an extended frame). Bit 2 selects PSP, bit 3 thread mode, bit 4 clear means an extended
//!   frame. ARMv8-M keeps these bits and adds bit 5 (`DCRS`): clear, the core stacked an
//!   *additional state context* below the basic frame (an integrity signature, a reserved word,
//!   r4..r11: ten words), which happens only with the Security Extension.
//!
//! Not modelled: the extra s16..s31 an ARMv8-M core with the Security Extension stacks for a
//! Secure FP context (`FPCCR.TS`), which needs FPCCR to tell.

use super::CoreRegisters;
use crate::{Memory, Result};

/// `lr` values at or above this are `EXC_RETURN` values, not code addresses (the top of the
/// address map is never executable on M-profile cores).
pub const EXC_RETURN_MIN: u32 = 0xFFFF_FF00;

/// Bytes of the basic frame (eight words).
const BASIC: u32 = 8 * 4;
/// Bytes the FP extension adds (s0..s15, FPSCR, a reserved word).
const FP_EXTENSION: u32 = 18 * 4;
/// Bytes of ARMv8-M's additional state context (signature, reserved, r4..r11).
const ADDITIONAL_STATE: u32 = 10 * 4;
/// Bit of the stacked xPSR that says a padding word was inserted for alignment.
const XPSR_PADDED: u32 = 1 << 9;

/// Which stack pointer an exception frame is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    /// The main stack (MSP): handler mode and bare-metal code.
    Main,
    /// The process stack (PSP): RTOS threads.
    Process,
}

/// An `EXC_RETURN` value (the `lr` of an exception handler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExcReturn(u32);

impl ExcReturn {
    /// `lr` as an `EXC_RETURN` value, if it is one.
    pub fn from_lr(lr: u32) -> Option<ExcReturn> {
        (lr >= EXC_RETURN_MIN).then_some(ExcReturn(lr))
    }

    /// The raw value.
    pub fn value(self) -> u32 {
        self.0
    }

    /// The stack the frame was pushed on (bit 2).
    pub fn stack(self) -> Stack {
        if self.0 & (1 << 2) != 0 {
            Stack::Process
        } else {
            Stack::Main
        }
    }

    /// The exception interrupted thread mode (bit 3), not another handler.
    pub fn from_thread_mode(self) -> bool {
        self.0 & (1 << 3) != 0
    }

    /// The frame carries the FP context (bit 4 clear).
    pub fn fp_extended(self) -> bool {
        self.0 & (1 << 4) == 0
    }

    /// ARMv8-M's additional state context sits below the basic frame (bit 5 clear).
    pub fn additional_state(self) -> bool {
        self.0 & (1 << 5) == 0
    }

    /// Bytes of context at the stack pointer, before any padding word.
    pub fn frame_len(self) -> u32 {
        let mut len = BASIC;
        if self.fp_extended() {
            len += FP_EXTENSION;
        }
        if self.additional_state() {
            len += ADDITIONAL_STATE;
        }
        len
    }
}

/// The context an exception entry stacked, as read at the handler's stack pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceptionFrame {
    /// How the handler will return (which stack, which frame layout).
    pub exc_return: ExcReturn,
    /// Address of the frame (the stack pointer in the handler, before it pushed anything).
    pub sp: u32,
    /// Stacked r0..r3.
    pub r0_r3: [u32; 4],
    /// Stacked r12.
    pub r12: u32,
    /// Stacked lr: the interrupted code's return address.
    pub lr: u32,
    /// The return address: where the interrupted code resumes (the faulting instruction for a
    /// synchronous fault).
    pub pc: u32,
    /// Stacked xPSR (bit 9: a padding word was inserted above the frame).
    pub xpsr: u32,
    /// r4..r11 from ARMv8-M's additional state context, when the core stacked one.
    pub r4_r11: Option<[u32; 8]>,
}

impl ExceptionFrame {
    /// Parses the frame from the bytes at `sp` (at least [`ExcReturn::frame_len`] of them).
    pub fn parse(exc_return: ExcReturn, sp: u32, bytes: &[u8]) -> Option<ExceptionFrame> {
        let word = |i: usize| -> Option<u32> {
            let b = bytes.get(4 * i..4 * i + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (base, r4_r11) = if exc_return.additional_state() {
            let mut callee = [0u32; 8];
            for (i, slot) in callee.iter_mut().enumerate() {
                *slot = word(2 + i)?;
            }
            (10, Some(callee))
        } else {
            (0, None)
        };
        if bytes.len() < exc_return.frame_len() as usize {
            return None;
        }
        Some(ExceptionFrame {
            exc_return,
            sp,
            r0_r3: [
                word(base)?,
                word(base + 1)?,
                word(base + 2)?,
                word(base + 3)?,
            ],
            r12: word(base + 4)?,
            lr: word(base + 5)?,
            pc: word(base + 6)?,
            xpsr: word(base + 7)?,
            r4_r11,
        })
    }

    /// Reads the frame at `sp` (one read).
    pub fn read<M: Memory + ?Sized>(
        mem: &mut M,
        exc_return: ExcReturn,
        sp: u32,
    ) -> Result<Option<ExceptionFrame>> {
        let bytes = mem.read_vec(u64::from(sp), exc_return.frame_len() as usize)?;
        Ok(Self::parse(exc_return, sp, &bytes))
    }

    /// A padding word was inserted above the frame for alignment.
    pub fn padded(&self) -> bool {
        self.xpsr & XPSR_PADDED != 0
    }

    /// The interrupted code's stack pointer: above the frame and its padding word. `None` when
    /// that would wrap (a damaged frame).
    pub fn caller_sp(&self) -> Option<u32> {
        let pad = if self.padded() { 4 } else { 0 };
        self.sp
            .checked_add(self.exc_return.frame_len())?
            .checked_add(pad)
    }

    /// The interrupted code's registers: the stacked ones, r4..r11 from the additional state
    /// context or else from `handler` (the core does not stack them, so they hold the
    /// interrupted values until the handler saves them), the sp above the frame, and the xPSR
    /// without the padding flag.
    pub fn interrupted(&self, handler: &CoreRegisters) -> Option<CoreRegisters> {
        let mut r = handler.r;
        r[..4].copy_from_slice(&self.r0_r3);
        if let Some(callee) = self.r4_r11 {
            r[4..12].copy_from_slice(&callee);
        }
        r[12] = self.r12;
        r[super::SP] = self.caller_sp()?;
        r[super::LR] = self.lr;
        r[super::PC] = self.pc;
        Some(CoreRegisters::new(r, self.xpsr & !XPSR_PADDED))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// r0..r3, r12, lr, pc, xpsr of the interrupted code.
    const STACKED: [u32; 8] = [
        0xA0,
        0xA1,
        0xA2,
        0xA3,
        0xAC,
        0x0800_0235,
        0x0800_0410,
        0x6100_0000,
    ];

    fn handler() -> CoreRegisters {
        let mut r = [0u32; 16];
        for (i, v) in r.iter_mut().enumerate() {
            *v = 0x1000 + i as u32;
        }
        r[super::super::SP] = 0x2000_0fe0;
        r[super::super::LR] = 0xFFFF_FFF9;
        CoreRegisters::new(r, 0x0100_0003)
    }

    #[test]
    fn exc_return_values_decode() {
        assert_eq!(ExcReturn::from_lr(0x0800_0235), None);
        let thread_msp = ExcReturn::from_lr(0xFFFF_FFF9).unwrap();
        assert_eq!(thread_msp.stack(), Stack::Main);
        assert!(thread_msp.from_thread_mode() && !thread_msp.fp_extended());
        assert_eq!(thread_msp.frame_len(), 32);
        let thread_psp_fp = ExcReturn::from_lr(0xFFFF_FFED).unwrap();
        assert_eq!(thread_psp_fp.stack(), Stack::Process);
        assert!(thread_psp_fp.fp_extended());
        assert_eq!(thread_psp_fp.frame_len(), 104);
        let handler_msp = ExcReturn::from_lr(0xFFFF_FFF1).unwrap();
        assert!(!handler_msp.from_thread_mode());
        // ARMv8-M, Secure to Non-secure: DCRS clear adds r4..r11 below the frame.
        let v8 = ExcReturn::from_lr(0xFFFF_FFDC).unwrap();
        assert!(v8.additional_state() && !v8.fp_extended());
        assert_eq!(v8.frame_len(), 32 + 40);
        assert_eq!(
            ExcReturn::from_lr(0xFFFF_FFCC).unwrap().frame_len(),
            32 + 72 + 40
        );
    }

    #[test]
    fn a_basic_frame_gives_back_the_interrupted_registers() {
        let exc = ExcReturn::from_lr(0xFFFF_FFF9).unwrap();
        let f = ExceptionFrame::parse(exc, 0x2000_0fe0, &words(&STACKED)).unwrap();
        assert_eq!((f.pc, f.lr, f.r12), (0x0800_0410, 0x0800_0235, 0xAC));
        assert!(!f.padded());
        let r = f.interrupted(&handler()).unwrap();
        assert_eq!(r.r[..4], [0xA0, 0xA1, 0xA2, 0xA3]);
        assert_eq!(r.r[4..12], handler().r[4..12], "r4..r11 are not stacked");
        assert_eq!(
            (r.sp(), r.lr(), r.pc()),
            (0x2000_1000, 0x0800_0235, 0x0800_0410)
        );
        assert_eq!(r.xpsr, 0x6100_0000);
        // Too few bytes is no frame.
        assert_eq!(
            ExceptionFrame::parse(exc, 0x2000_0fe0, &words(&STACKED[..7])),
            None
        );
    }

    #[test]
    fn the_padding_word_and_the_fp_context_move_the_callers_sp() {
        let mut stacked = STACKED;
        stacked[7] |= XPSR_PADDED;
        let exc = ExcReturn::from_lr(0xFFFF_FFF9).unwrap();
        let f = ExceptionFrame::parse(exc, 0x2000_0fe0, &words(&stacked)).unwrap();
        assert!(f.padded());
        let r = f.interrupted(&handler()).unwrap();
        assert_eq!(r.sp(), 0x2000_0fe0 + 32 + 4);
        assert_eq!(r.xpsr, 0x6100_0000, "the padding flag is not the caller's");
        // Extended frame: the same eight words first, then 18 FP words.
        let mut fp = words(&stacked);
        fp.extend(words(&[0; 18]));
        let exc = ExcReturn::from_lr(0xFFFF_FFE9).unwrap();
        let f = ExceptionFrame::parse(exc, 0x2000_0f00, &fp).unwrap();
        assert_eq!(f.pc, 0x0800_0410);
        assert_eq!(f.caller_sp(), Some(0x2000_0f00 + 104 + 4));
        assert_eq!(ExceptionFrame::parse(exc, 0x2000_0f00, &fp[..100]), None);
        // A frame at the top of the address space does not wrap.
        let f = ExceptionFrame::parse(
            ExcReturn::from_lr(0xFFFF_FFF9).unwrap(),
            u32::MAX - 8,
            &words(&stacked),
        )
        .unwrap();
        assert_eq!(f.caller_sp(), None);
    }

    #[test]
    fn the_additional_state_context_holds_r4_to_r11() {
        let mut ctx = vec![0xFEFA_125B, 0];
        ctx.extend((4..12).map(|i| 0xC0 + i));
        ctx.extend(STACKED);
        ctx.extend([0; 18]);
        let exc = ExcReturn::from_lr(0xFFFF_FFCC).unwrap();
        assert!(exc.additional_state() && exc.fp_extended());
        let f = ExceptionFrame::parse(exc, 0x2000_0e00, &words(&ctx)).unwrap();
        let r = f.interrupted(&handler()).unwrap();
        assert_eq!(r.r[4], 0xC4);
        assert_eq!(r.r[11], 0xCB);
        assert_eq!(r.pc(), 0x0800_0410);
        assert_eq!(r.sp(), 0x2000_0e00 + 40 + 32 + 72);
    }

    #[test]
    fn reads_the_frame_in_one_read() {
        let mut snap = crate::Snapshot::default();
        let mut ram = vec![0u8; 0x40];
        ram[..32].copy_from_slice(&words(&STACKED));
        snap.add_region(0x2000_0fe0, ram).unwrap();
        let exc = ExcReturn::from_lr(0xFFFF_FFF9).unwrap();
        let f = ExceptionFrame::read(&mut snap, exc, 0x2000_0fe0)
            .unwrap()
            .unwrap();
        assert_eq!(f.pc, 0x0800_0410);
        assert!(ExceptionFrame::read(&mut snap, exc, 0x2000_1010).is_err());
    }
}
