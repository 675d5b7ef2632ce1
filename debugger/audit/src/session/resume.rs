//! Host-side resume: leaving a breakpoint without a single step.
//!
//! Resuming from a breakpoint normally means "step one instruction, then continue": two trips
//! over the link, and on QEMU a flush of its whole translation cache each time single-stepping
//! is switched on or off. When the core is halted on one of memlife's breakpoints, the
//! instruction there is executed on the host ([`memlife_core::cortex_m::thumb`]) and its
//! register and memory writes go out with the continue. Anything the decoder does not know
//! is left to the backend, which steps off the breakpoint itself.

use memlife_core::cortex_m::{self, CoreRegisters, thumb};
use memlife_core::{Memory, Register, Target};
use memlife_dwarf::Symbols;

use crate::error::AuditError;
use crate::unwind::Prefetch;

/// Whether breakpoint instructions are executed here, and how often that worked.
#[derive(Debug, Clone, Copy)]
pub struct HostResume {
    enabled: bool,
    /// Resumes done by executing the breakpoint's instruction here.
    pub emulated: u64,
    /// Resumes left to the backend's single step.
    pub stepped: u64,
}

impl HostResume {
    /// On unless disabled ([`crate::config::EngineTuning::host_resume`], or a core that is not
    /// Thumb).
    pub fn new(enabled: bool) -> Self {
        HostResume {
            enabled,
            emulated: 0,
            stepped: 0,
        }
    }

    /// Prepares the core for a continue: when it is halted on one of our breakpoints (an
    /// address `inserted` says has one), executes that instruction here. `stop_cache` is the
    /// memory already read at this stop.
    pub fn before_resume(
        &mut self,
        target: &mut dyn Target,
        symbols: &Symbols,
        inserted: &dyn Fn(u64) -> bool,
        stop_cache: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), AuditError> {
        if !self.enabled {
            return Ok(());
        }
        let Ok(pc) = target.read_register(Register::ProgramCounter) else {
            return Ok(());
        };
        if !inserted(pc) {
            return Ok(());
        }
        let Some(code) = symbols.code(pc, 4).or_else(|| symbols.code(pc, 2)) else {
            self.stepped += 1;
            return Ok(());
        };
        let mut before = CoreRegisters::read_r0_to_r15(target)?;
        // A server whose description has no xPSR cannot have its flags emulated: step.
        let Ok(xpsr) = target.read_register(Register::Numbered(cortex_m::GDB_XPSR)) else {
            self.stepped += 1;
            return Ok(());
        };
        before.xpsr = xpsr as u32;
        let mut core = before;
        let mut mem = Prefetch::from_parts(target.as_memory(), std::mem::take(stop_cache));
        let mut stack = |a: u32| -> Option<u32> {
            let mut b = [0u8; 4];
            mem.read(u64::from(a), &mut b).ok()?;
            Some(u32::from_le_bytes(b))
        };
        let effect = thumb::execute(&mut core, code, &mut stack);
        *stop_cache = mem.into_ranges();
        let Some(effect) = effect else {
            self.stepped += 1;
            return Ok(());
        };
        if !effect.writes.is_empty() {
            let w = target
                .memory_write()
                .ok_or_else(|| AuditError::NeedsLiveTarget("memory writes".into()))?;
            for (addr, bytes) in &effect.writes {
                w.write(u64::from(*addr), bytes)?;
            }
        }
        core.write_changed(target, &before)?;
        self.emulated += 1;
        Ok(())
    }
}
