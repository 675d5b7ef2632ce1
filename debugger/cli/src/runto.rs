//! Running the target to the N-th entry of a function.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use memlife_core::limits::Deadline;
use memlife_core::{BreakpointKind, StopReason, Target, TargetError, Wait, interrupt};
use memlife_dwarf::Symbols;

/// Runs until the `hit`-th entry of `function`, then leaves the core halted there. The breakpoint
/// is removed on every path; a target that never gets there is halted and reported.
pub fn run_to(
    target: &mut dyn Target,
    symbols: &Symbols,
    function: &str,
    hit: u32,
    timeout: Duration,
) -> Result<()> {
    let (addr, _) = symbols.function(function).with_context(|| {
        let why = symbols.function_lookup(function).ambiguity(function);
        format!("function `{function}` is not in the ELF's symbol table{why}")
    })?;
    target
        .breakpoints()
        .context(
            "this target cannot set breakpoints (an offline snapshot?): --at needs a live target",
        )?
        .add_breakpoint(addr, BreakpointKind::Software)
        .with_context(|| format!("setting a breakpoint at {function} ({addr:#010x})"))?;
    let outcome = wait_for_hits(target, addr, hit, timeout, function);
    if let Some(bps) = target.breakpoints() {
        let removed = bps.remove_breakpoint(addr, BreakpointKind::Software);
        if outcome.is_ok() {
            removed.with_context(|| format!("removing the breakpoint at {function}"))?;
        }
    }
    outcome
}

fn wait_for_hits(
    target: &mut dyn Target,
    addr: u64,
    hit: u32,
    timeout: Duration,
    function: &str,
) -> Result<()> {
    let deadline = Deadline::after(timeout);
    let mut hits = 0;
    while hits < hit {
        let control = target.control().context("this target has no run control")?;
        control.resume().context("resuming the target")?;
        let left = deadline.left_or_max();
        match interrupt::wait_for_stop_or_interrupt(control, left)
            .context("waiting for the target to stop")?
        {
            Wait::Interrupted => {
                let _ = control.halt();
                return Err(TargetError::Interrupted).with_context(|| {
                    format!("waiting for {function} (hit {} of {hit})", hits + 1)
                });
            }
            Wait::Stopped(StopReason::Breakpoint(pc)) if pc == addr => hits += 1,
            Wait::Stopped(StopReason::Exited(code)) => {
                bail!(
                    "the target exited with status {code} before reaching {function} (hit {} of {hit})",
                    hits + 1
                )
            }
            Wait::Stopped(StopReason::Terminated(sig)) => {
                bail!("the target was terminated (signal {sig}) before reaching {function}")
            }
            Wait::Stopped(other) => bail!(
                "the target stopped ({other:?}) before reaching {function} (hit {} of {hit})",
                hits + 1
            ),
            Wait::TimedOut => {
                let _ = control.halt();
                bail!(
                    "breakpoint at {function} ({addr:#010x}) not reached within {:.1} s (hit {} of {hit}); the target was halted",
                    timeout.as_secs_f64(),
                    hits + 1
                )
            }
        }
    }
    Ok(())
}

/// Halts a live target if it runs; offline targets are always "halted".
pub fn ensure_halted(target: &mut dyn Target) -> Result<()> {
    if let Some(control) = target.control()
        && !control.is_halted()
    {
        control.halt().context("halting the target")?;
    }
    Ok(())
}

/// `--at FUNCTION --hit N`: runs there; without `--at`, halts where the target is.
pub fn stop_where_asked(
    target: &mut dyn Target,
    symbols: &Symbols,
    stop: &crate::cli::StopArgs,
) -> Result<()> {
    match &stop.at {
        Some(function) => run_to(
            target,
            symbols,
            function,
            stop.hit,
            memlife_core::limits::timeout_secs(stop.timeout).map_err(anyhow::Error::msg)?,
        ),
        None => ensure_halted(target),
    }
}
