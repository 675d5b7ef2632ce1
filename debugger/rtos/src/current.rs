//! Who runs now, read cheaply: for tagging each traced allocation with its task and the
//! firmware's tick count. In handler mode (IPSR != 0) only the tick count is read; otherwise
//! one pipelined request for `pxCurrentTCB`, `xSchedulerRunning` and `xTickCount`, then one
//! read of the task's name. The running task's stack margin (the 0xa5 fill left below its
//! deepest use) is one read more.

use memlife_core::Memory;

use crate::layout::{Global, read_uint};
use crate::mode::IPSR_MASK;
use crate::read::read_or_none;
use crate::task::{Now, Running};
use crate::walk::STACK_FILL;
use crate::{FreeRtos, RtosError};

impl FreeRtos {
    /// Who runs now, given the core's xPSR: an ISR in handler mode (no read), `main` before
    /// the scheduler starts, else the current task and its name (two round trips).
    pub fn running(&self, mem: &mut dyn Memory, xpsr: u32) -> Result<Running, RtosError> {
        Ok(now(self, mem, xpsr, false)?.running)
    }

    /// Who runs now and the tick count (`xTickCount`), given the core's xPSR: in handler mode
    /// one read (the tick count), otherwise two round trips (the globals together, then the
    /// running task's name).
    pub fn now(&self, mem: &mut dyn Memory, xpsr: u32) -> Result<Now, RtosError> {
        now(self, mem, xpsr, true)
    }

    /// The lowest address of the stack of the task whose TCB is at `tcb` (`pxStack`); `None`
    /// when the TCB cannot be read or holds none.
    pub fn stack_low(&self, mem: &mut dyn Memory, tcb: u64) -> Result<Option<u64>, RtosError> {
        stack_low(self, mem, tcb)
    }

    /// The bytes still holding the 0xa5 fill from `low` upward, reading at most `limit` bytes
    /// (and never more than [`MAX_STACK_BYTES`](crate::MAX_STACK_BYTES)): a stack's unused
    /// depth when `low` is its `pxStack`. `None` when the memory cannot be read.
    pub fn unused_stack(
        &self,
        mem: &mut dyn Memory,
        low: u64,
        limit: u64,
    ) -> Result<Option<u64>, RtosError> {
        unused_stack(mem, low, limit)
    }
}

/// See [`FreeRtos::now`] (`with_tick`) and [`FreeRtos::running`] (without: nothing is read in
/// handler mode).
pub(crate) fn now(
    kernel: &FreeRtos,
    mem: &mut dyn Memory,
    xpsr: u32,
    with_tick: bool,
) -> Result<Now, RtosError> {
    let l = &kernel.layout;
    let ipsr = (xpsr & IPSR_MASK) as u16;
    // The globals wanted, in this order: the tick count, then (thread mode) the current TCB and
    // whether the scheduler runs.
    let mut wanted: Vec<Option<Global>> = vec![l.tick_count.filter(|_| with_tick)];
    if ipsr == 0 {
        wanted.extend([Some(l.current_tcb), l.scheduler_running]);
    }
    let present: Vec<Global> = wanted.iter().flatten().copied().collect();
    let ranges: Vec<(u64, usize)> = present.iter().map(|g| (g.addr, g.size as usize)).collect();
    let got = if ranges.is_empty() {
        Vec::new()
    } else {
        mem.read_ranges(&ranges)?
    };
    // The value of the i-th wanted global, `None` when the build has no such global.
    let value = |i: usize| -> Option<u64> {
        let g = wanted.get(i).copied().flatten()?;
        let at = present.iter().position(|p| *p == g)?;
        got.get(at).and_then(|b| read_uint(b, 0, g.size))
    };
    let tick = value(0);
    if ipsr != 0 {
        return Ok(Now {
            running: Running::Isr(ipsr),
            tick,
        });
    }
    if l.scheduler_running.is_some() && value(2).unwrap_or(0) == 0 {
        return Ok(Now {
            running: Running::BeforeScheduler,
            tick,
        });
    }
    let tcb = value(1).unwrap_or(0);
    Ok(Now {
        running: current_task(kernel, mem, tcb)?,
        tick,
    })
}

/// The task whose TCB is at `tcb`, named from its `pcTaskName`.
fn current_task(kernel: &FreeRtos, mem: &mut dyn Memory, tcb: u64) -> Result<Running, RtosError> {
    if tcb == 0 || !tcb.is_multiple_of(4) {
        return Ok(Running::Unknown);
    }
    let name = &kernel.layout.tcb.name;
    let name_at = tcb.saturating_add(name.offset);
    let Some(bytes) = read_or_none(mem, name_at, name.size as usize)? else {
        return Ok(Running::Unknown);
    };
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    Ok(Running::Task {
        tcb,
        name: String::from_utf8_lossy(&bytes[..end]).into_owned(),
    })
}

/// See [`FreeRtos::stack_low`].
pub(crate) fn stack_low(
    kernel: &FreeRtos,
    mem: &mut dyn Memory,
    tcb: u64,
) -> Result<Option<u64>, RtosError> {
    let f = &kernel.layout.tcb.stack;
    let Some(bytes) = read_or_none(mem, tcb.saturating_add(f.offset), f.size as usize)? else {
        return Ok(None);
    };
    Ok(read_uint(&bytes, 0, f.size).filter(|low| *low != 0))
}

/// See [`FreeRtos::unused_stack`].
pub(crate) fn unused_stack(
    mem: &mut dyn Memory,
    low: u64,
    limit: u64,
) -> Result<Option<u64>, RtosError> {
    let len = usize::try_from(limit.min(crate::walk::MAX_STACK_BYTES)).unwrap_or(0);
    if len == 0 {
        return Ok(Some(0));
    }
    let Some(bytes) = read_or_none(mem, low, len)? else {
        return Ok(None);
    };
    Ok(Some(
        bytes.iter().take_while(|b| **b == STACK_FILL).count() as u64
    ))
}
