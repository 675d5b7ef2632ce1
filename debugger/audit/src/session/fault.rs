//! Faults: the Cortex-M fault handlers' entries (by their CMSIS names), where the engine puts a
//! breakpoint so that a firmware that faults ends the run at once with what happened, instead of
//! the run waiting for its timeout and reporting a breakpoint that was never reached; and the
//! decoding of such a stop. The message names the fault, the faulting pc with its function and
//! source line (from the exception frame the core stacked), when it happened (the caller says:
//! a phase, a wait), the fault status registers decoded, and the call chain unwound from the
//! interrupted code.

use std::fmt::Write as _;

use memlife_core::Target;
use memlife_core::cortex_m::{CoreRegisters, ExcReturn, ExceptionFrame};
use memlife_dwarf::Symbols;

use crate::error::AuditError;

/// Handler symbols and the fault each one stands for.
const HANDLERS: [(&str, &str); 4] = [
    ("HardFault_Handler", "HardFault"),
    ("MemManage_Handler", "MemManage"),
    ("BusFault_Handler", "BusFault"),
    ("UsageFault_Handler", "UsageFault"),
];

/// System control block fault registers (ARMv7-M).
const CFSR: u64 = 0xE000_ED28;
const HFSR: u64 = 0xE000_ED2C;
const MMFAR: u64 = 0xE000_ED34;
const BFAR: u64 = 0xE000_ED38;

/// CFSR bits, by name (MMFSR, BFSR, UFSR).
const CFSR_BITS: [(u32, &str); 16] = [
    (0, "IACCVIOL (instruction access violation)"),
    (1, "DACCVIOL (data access violation)"),
    (3, "MUNSTKERR"),
    (4, "MSTKERR"),
    (5, "MLSPERR"),
    (8, "IBUSERR (instruction bus error)"),
    (9, "PRECISERR (precise data bus error)"),
    (10, "IMPRECISERR (imprecise data bus error)"),
    (11, "UNSTKERR"),
    (12, "STKERR"),
    (13, "LSPERR"),
    (16, "UNDEFINSTR (undefined instruction)"),
    (17, "INVSTATE (invalid state, e.g. Thumb bit clear)"),
    (18, "INVPC (invalid exception return)"),
    (19, "NOCP (no coprocessor)"),
    (25, "DIVBYZERO (division by zero)"),
];
const CFSR_UNALIGNED: u32 = 24;
const CFSR_MMARVALID: u32 = 7;
const CFSR_BFARVALID: u32 = 15;
const HFSR_BITS: [(u32, &str); 3] = [
    (1, "VECTTBL (vector table read fault)"),
    (30, "FORCED (a configurable fault escalated)"),
    (31, "DEBUGEVT"),
];

/// The set bits of a register by name.
fn decode(value: u32, bits: &[(u32, &str)]) -> Vec<String> {
    bits.iter()
        .filter(|(b, _)| value & (1 << b) != 0)
        .map(|(_, n)| (*n).to_string())
        .collect()
}

/// `CFSR` decoded, with `MMFAR`/`BFAR` when they hold a valid address.
pub fn describe_status(cfsr: u32, hfsr: u32, mmfar: u32, bfar: u32) -> String {
    let mut cfsr_bits = decode(cfsr, &CFSR_BITS);
    if cfsr & (1 << CFSR_UNALIGNED) != 0 {
        cfsr_bits.push("UNALIGNED (unaligned access)".into());
    }
    if cfsr & (1 << CFSR_MMARVALID) != 0 {
        cfsr_bits.push(format!("MMFAR = {mmfar:#010x}"));
    }
    if cfsr & (1 << CFSR_BFARVALID) != 0 {
        cfsr_bits.push(format!("BFAR = {bfar:#010x}"));
    }
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    format!(
        "CFSR {cfsr:#010x}: {}; HFSR {hfsr:#010x}: {}",
        list(cfsr_bits),
        list(decode(hfsr, &HFSR_BITS))
    )
}

/// The fault handlers this ELF has: entry address and the fault each one stands for.
pub fn handlers(symbols: &Symbols) -> Vec<(u64, &'static str)> {
    HANDLERS
        .iter()
        .filter_map(|(symbol, fault)| symbols.function(symbol).map(|f| (f.entry, *fault)))
        .collect()
}

/// The error for a stop at a fault handler's entry: everything the core says about it.
/// `during` says when it happened (`phase graph_build`).
pub fn describe(
    target: &mut dyn Target,
    symbols: &Symbols,
    fault: &str,
    during: &str,
) -> AuditError {
    let handler = match CoreRegisters::read(target) {
        Ok(r) => r,
        Err(e) => return AuditError::Faulted(format!("{fault} (registers unreadable: {e})")),
    };
    let mut text = String::new();
    let frame = ExcReturn::from_lr(handler.lr()).and_then(|exc| {
        ExceptionFrame::read(target.as_memory(), exc, handler.sp())
            .ok()
            .flatten()
    });
    match &frame {
        Some(f) => {
            let pc = u64::from(f.pc & !1);
            let _ = write!(text, "{fault} at pc {pc:#010x}");
            if let Some(loc) = symbols.locate(pc).into_iter().next() {
                let function = loc.function.as_deref().unwrap_or("?");
                let _ = write!(text, " in {function}");
                if let (Some(file), Some(line)) = (&loc.file, loc.line) {
                    let _ = write!(text, " ({file}:{line})");
                }
            }
        }
        None => {
            let _ = write!(text, "{fault} (no exception frame readable)");
        }
    }
    let _ = write!(text, ", during {during}");
    let mut word = |addr: u64| target.as_memory().read_u32(addr).unwrap_or(0);
    let (cfsr, hfsr, mmfar, bfar) = (word(CFSR), word(HFSR), word(MMFAR), word(BFAR));
    let _ = write!(text, "; {}", describe_status(cfsr, hfsr, mmfar, bfar));
    if let Some(interrupted) = frame.as_ref().and_then(|f| f.interrupted(&handler)) {
        let frames = symbols.backtrace(target.as_memory(), &interrupted, 16);
        let chain = frame_names(&frames);
        if !chain.is_empty() {
            let _ = write!(text, "; call chain: {}", chain.join(" <- "));
        }
    }
    AuditError::Faulted(text)
}

/// A call chain's function names, innermost first (the pc where a frame has no name).
pub(super) fn frame_names(frames: &[memlife_dwarf::Frame]) -> Vec<String> {
    frames
        .iter()
        .map(|f| {
            f.function
                .clone()
                .unwrap_or_else(|| format!("{:#010x}", f.pc))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::describe_status;

    #[test]
    fn fault_status_registers_are_decoded() {
        let text = describe_status(1 << 16, 1 << 30, 0, 0);
        assert!(text.contains("UNDEFINSTR"), "{text}");
        assert!(text.contains("FORCED"), "{text}");
        let text = describe_status((1 << 9) | (1 << 15), 0, 0, 0x6000_0000);
        assert!(
            text.contains("PRECISERR") && text.contains("BFAR = 0x60000000"),
            "{text}"
        );
    }
}
