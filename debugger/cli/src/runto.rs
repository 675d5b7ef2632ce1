//! Running the target to the N-th time it reaches a location: a function's entry, a source
//! line or an address.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use memlife_core::limits::Deadline;
use memlife_core::{BreakpointKind, StopReason, Target, TargetError, Wait, interrupt};
use memlife_dwarf::Symbols;

/// Runs until the `hit`-th time the core reaches `location` (a function, `FILE:LINE` or
/// `*ADDR`; a line may have code in several places, each is a breakpoint), then leaves the core
/// halted there. The breakpoints are removed on every path; a target that never gets there is
/// halted and reported with where it was instead.
pub fn run_to(
    target: &mut dyn Target,
    symbols: &Symbols,
    location: &str,
    hit: u32,
    timeout: Duration,
) -> Result<()> {
    let places = symbols.resolve_location(location)?;
    let addrs: Vec<u64> = places.iter().map(|p| p.address).collect();
    if addrs.len() > 1 {
        let names: Vec<String> = places
            .iter()
            .map(|p| match &p.function {
                Some(f) => {
                    let shown = memlife_dwarf::demangle_name(f).unwrap_or_else(|| f.clone());
                    format!("{shown} ({:#010x})", p.address)
                }
                None => format!("{:#010x}", p.address),
            })
            .collect();
        tracing::info!(
            "{location} has code in {} places: {}",
            addrs.len(),
            names.join(", ")
        );
    }
    let bps = target.breakpoints().context(
        "this target cannot set breakpoints (an offline snapshot?): --at needs a live target",
    )?;
    let mut inserted = Vec::new();
    let mut outcome = Ok(());
    for &addr in &addrs {
        match bps.add_breakpoint(addr, BreakpointKind::Software) {
            Ok(()) => inserted.push(addr),
            Err(e) => {
                outcome = Err(anyhow::Error::new(e)
                    .context(format!("setting a breakpoint at {location} ({addr:#010x})")));
                break;
            }
        }
    }
    if outcome.is_ok() {
        outcome = wait_for_hits(target, symbols, &addrs, hit, timeout, location);
    }
    if let Some(bps) = target.breakpoints() {
        for addr in inserted {
            let removed = bps.remove_breakpoint(addr, BreakpointKind::Software);
            if outcome.is_ok() {
                removed.with_context(|| format!("removing the breakpoint at {location}"))?;
            }
        }
    }
    outcome
}

/// Where a halted core is, for messages: `pc 0x... in FUNCTION (file:line)`.
fn where_halted(target: &mut dyn Target, symbols: &Symbols) -> String {
    let Ok(pc) = target.read_register(memlife_core::Register::ProgramCounter) else {
        return String::new();
    };
    let frames = symbols.locate(pc & !1);
    match frames.last() {
        Some(outer) => format!(" at pc {pc:#010x} in {outer}"),
        None => format!(" at pc {pc:#010x}"),
    }
}

fn wait_for_hits(
    target: &mut dyn Target,
    symbols: &Symbols,
    addrs: &[u64],
    hit: u32,
    timeout: Duration,
    location: &str,
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
                    format!("waiting for {location} (hit {} of {hit})", hits + 1)
                });
            }
            Wait::Stopped(StopReason::Breakpoint(pc)) if addrs.contains(&pc) => hits += 1,
            Wait::Stopped(StopReason::Exited(code)) => {
                bail!(
                    "the target exited with status {code} before reaching {location} (hit {} of {hit})",
                    hits + 1
                )
            }
            Wait::Stopped(StopReason::Terminated(sig)) => {
                bail!("the target was terminated (signal {sig}) before reaching {location}")
            }
            Wait::Stopped(other) => bail!(
                "the target stopped ({other:?}) before reaching {location} (hit {} of {hit})",
                hits + 1
            ),
            Wait::TimedOut => {
                let _ = control.halt();
                let at = where_halted(target, symbols);
                let first = addrs.first().copied().unwrap_or(0);
                bail!(
                    "breakpoint at {location} ({first:#010x}) not reached within {:.1} s (hit {} of {hit}); the target was halted{at}",
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

/// `--at LOCATION --hit N` (a function, `FILE:LINE` or `*ADDR`): runs there; without `--at`, halts where the target is.
pub fn stop_where_asked(
    target: &mut dyn Target,
    symbols: &Symbols,
    stop: &crate::cli::StopArgs,
) -> Result<()> {
    match &stop.at {
        Some(location) => run_to(
            target,
            symbols,
            location,
            stop.hit,
            memlife_core::limits::timeout_secs(stop.timeout).map_err(anyhow::Error::msg)?,
        ),
        None => ensure_halted(target),
    }
}
