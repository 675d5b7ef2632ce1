//! Who runs now, read cheaply: for tagging each traced allocation with its task. In handler
//! mode (IPSR != 0) nothing is read; otherwise one pipelined request for `pxCurrentTCB` and
//! `xSchedulerRunning`, then one read of the task's name.

use memlife_core::Memory;

use crate::read::read_or_none;
use crate::task::Running;
use crate::{FreeRtos, RtosError};

/// IPSR: the exception number in the low 9 bits of xPSR; 0 in thread mode.
pub(crate) const IPSR_MASK: u32 = 0x1ff;

impl FreeRtos {
    /// Who runs now, given the core's xPSR: an ISR in handler mode (no read), `main` before
    /// the scheduler starts, else the current task and its name (two round trips).
    pub fn running(&self, mem: &mut dyn Memory, xpsr: u32) -> Result<Running, RtosError> {
        running(self, mem, xpsr)
    }
}

/// See [`FreeRtos::running`].
pub(crate) fn running(
    kernel: &FreeRtos,
    mem: &mut dyn Memory,
    xpsr: u32,
) -> Result<Running, RtosError> {
    let ipsr = (xpsr & IPSR_MASK) as u16;
    if ipsr != 0 {
        return Ok(Running::Isr(ipsr));
    }
    let l = &kernel.layout;
    let mut ranges = vec![(l.current_tcb.addr, l.current_tcb.size as usize)];
    if let Some(g) = l.scheduler_running {
        ranges.push((g.addr, g.size as usize));
    }
    let got = mem.read_ranges(&ranges)?;
    let word = |i: usize, size: u64| {
        got.get(i)
            .and_then(|b| crate::layout::read_uint(b, 0, size))
    };
    let started = l
        .scheduler_running
        .map(|g| word(1, g.size).unwrap_or(0) != 0);
    if started == Some(false) {
        return Ok(Running::BeforeScheduler);
    }
    let tcb = word(0, l.current_tcb.size).unwrap_or(0);
    if tcb == 0 || !tcb.is_multiple_of(4) {
        return Ok(Running::Unknown);
    }
    let name_at = tcb.saturating_add(l.tcb.name.offset);
    let Some(bytes) = read_or_none(mem, name_at, l.tcb.name.size as usize)? else {
        return Ok(Running::Unknown);
    };
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    Ok(Running::Task {
        tcb,
        name: String::from_utf8_lossy(&bytes[..end]).into_owned(),
    })
}
