//! Running the target to the N-th time it reaches a location: a function's entry, a source
//! line or an address. A firmware that asserts on the way (its assert handler, `vAssertCalled`
//! and the others memlife knows, is a breakpoint too) or parks in a loop it never leaves (the
//! audit's park watch: the core sampled every 250 ms) ends the wait at once, saying where.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use memlife_audit::observers::asserts::{self, HandlerStop};
use memlife_audit::session::park::{self, ParkWatch};
use memlife_core::cortex_m::GDB_XPSR;
use memlife_core::limits::Deadline;
use memlife_core::{BreakpointKind, Register, StopReason, Target, TargetError, Wait, interrupt};
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
    // The firmware's assert handlers, unless the location is one of them.
    let handlers: Vec<(u64, String)> = asserts::handlers(symbols, &[])
        .into_iter()
        .filter(|(a, _)| !addrs.contains(a))
        .collect();
    let bps = target.breakpoints().context(
        "this target cannot set breakpoints (an offline snapshot?): --at needs a live target",
    )?;
    let mut inserted = Vec::new();
    let mut outcome = Ok(());
    let all = addrs.iter().copied().chain(handlers.iter().map(|h| h.0));
    for addr in all {
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
        let wait = Wait4 {
            symbols,
            addrs: &addrs,
            handlers: &handlers,
            location,
            hit,
            timeout,
        };
        outcome = wait.run(target);
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

/// Where a halted core is, for messages: `pc 0x... in FUNCTION (file:line), call chain: ...`.
fn where_halted(target: &mut dyn Target, symbols: &Symbols) -> String {
    match target.read_register(Register::ProgramCounter) {
        Ok(pc) => format!(" at {}", park::parked_at(target, symbols, pc & !1)),
        Err(_) => String::new(),
    }
}

/// What a wait for `location` looks for.
struct Wait4<'a> {
    symbols: &'a Symbols,
    addrs: &'a [u64],
    handlers: &'a [(u64, String)],
    location: &'a str,
    hit: u32,
    timeout: Duration,
}

/// What the target did, seen by the wait.
enum Seen {
    /// Reached the location once more.
    Hit,
    /// Keeps running (a sample found it working).
    Running,
}

impl Wait4<'_> {
    fn run(&self, target: &mut dyn Target) -> Result<()> {
        let deadline = Deadline::after(self.timeout);
        let mut hits = 0;
        while hits < self.hit {
            let control = target.control().context("this target has no run control")?;
            control.resume().context("resuming the target")?;
            let mut watch = ParkWatch::default();
            loop {
                match self.wait_slice(target, deadline, &mut watch, hits + 1)? {
                    Seen::Hit => break,
                    Seen::Running => {}
                }
            }
            hits += 1;
        }
        Ok(())
    }

    /// Waits one poll interval: a stop, the deadline, or a sample of where the core is.
    fn wait_slice(
        &self,
        target: &mut dyn Target,
        deadline: Deadline,
        watch: &mut ParkWatch,
        nth: u32,
    ) -> Result<Seen> {
        let (location, hit) = (self.location, self.hit);
        let control = target.control().context("this target has no run control")?;
        let slice = deadline.left_or_max().min(park::POLL);
        match interrupt::wait_for_stop_or_interrupt(control, slice)
            .context("waiting for the target to stop")?
        {
            Wait::Interrupted => {
                let _ = control.halt();
                Err(TargetError::Interrupted)
                    .with_context(|| format!("waiting for {location} (hit {nth} of {hit})"))
            }
            Wait::Stopped(stop) => self.stopped(target, stop, nth),
            Wait::TimedOut if deadline.passed() => {
                let _ = control.halt();
                let at = where_halted(target, self.symbols);
                let first = self.addrs.first().copied().unwrap_or(0);
                bail!(
                    "breakpoint at {location} ({first:#010x}) not reached within {:.1} s (hit {nth} of {hit}); the target was halted{at}",
                    self.timeout.as_secs_f64()
                )
            }
            Wait::TimedOut => self.sample(target, watch, nth),
        }
    }

    /// The core stopped by itself: at the location, at an assert handler, or otherwise.
    fn stopped(&self, target: &mut dyn Target, stop: StopReason, nth: u32) -> Result<Seen> {
        let (location, hit) = (self.location, self.hit);
        match stop {
            StopReason::Breakpoint(pc) if self.addrs.contains(&pc) => Ok(Seen::Hit),
            StopReason::Exited(code) => bail!(
                "the target exited with status {code} before reaching {location} (hit {nth} of {hit})"
            ),
            StopReason::Terminated(sig) => {
                bail!("the target was terminated (signal {sig}) before reaching {location}")
            }
            other => {
                let pc = pc_of(target, other);
                if self.handler_at(pc).is_some() {
                    bail!(
                        "{location} not reached (hit {nth} of {hit}): the firmware asserted at {}; the target was halted in its assert handler",
                        self.assert_place(target, pc)
                    )
                }
                let at = where_halted(target, self.symbols);
                bail!(
                    "the target stopped ({other:?}) before reaching {location} (hit {nth} of {hit}){at}"
                )
            }
        }
    }

    /// A sample of the park watch: halts the core, looks where it is, and resumes it unless it
    /// is parked (an error), reached the location or an assert handler just then.
    fn sample(&self, target: &mut dyn Target, watch: &mut ParkWatch, nth: u32) -> Result<Seen> {
        let control = target.control().context("this target has no run control")?;
        match control.halt().context("halting the target")? {
            StopReason::Halted | StopReason::Signal(2) => {}
            other => return self.stopped(target, other, nth),
        }
        let pc = target.read_register(Register::ProgramCounter)? & !1;
        let sp = target.read_register(Register::StackPointer)?;
        if self.addrs.contains(&pc) {
            return Ok(Seen::Hit);
        }
        if self.handler_at(pc).is_some() {
            return self.stopped(target, StopReason::Breakpoint(pc), nth);
        }
        if watch.sample(pc, sp) {
            let at = park::parked_at(target, self.symbols, pc);
            bail!(
                "{} not reached (hit {nth} of {}): the firmware is parked at {at} ({} polls {} ms apart); the target was halted",
                self.location,
                self.hit,
                park::POLLS,
                park::POLL.as_millis()
            );
        }
        target
            .control()
            .context("this target has no run control")?
            .resume()
            .context("resuming the target")?;
        Ok(Seen::Running)
    }

    /// The assert handler whose entry is `pc`.
    fn handler_at(&self, pc: u64) -> Option<&str> {
        self.handlers
            .iter()
            .find(|(a, _)| *a == pc)
            .map(|(_, n)| n.as_str())
    }

    /// Where the firmware asserted, from the handler's arguments and the core.
    fn assert_place(&self, target: &mut dyn Target, pc: u64) -> String {
        let mut args = [0u64; 4];
        for (i, a) in (0u8..).zip(args.iter_mut()) {
            *a = target.read_register(Register::Argument(i)).unwrap_or(0);
        }
        let lr = target.read_register(Register::ReturnAddress).unwrap_or(0);
        let xpsr = target
            .read_register(Register::Numbered(GDB_XPSR))
            .map_or(0, |x| u32::try_from(x & 0xffff_ffff).unwrap_or(0));
        let kernel = memlife_rtos::FreeRtos::from_symbols(self.symbols).ok();
        let stop = HandlerStop {
            handler: self.handler_at(pc).unwrap_or("?"),
            args,
            lr,
            xpsr,
        };
        asserts::describe(target.as_memory(), self.symbols, kernel.as_ref(), &stop)
    }
}

/// The pc a stop happened at: the breakpoint's, else the core's.
fn pc_of(target: &mut dyn Target, stop: StopReason) -> u64 {
    match stop {
        StopReason::Breakpoint(pc) => pc,
        _ => target
            .read_register(Register::ProgramCounter)
            .map_or(0, |pc| pc & !1),
    }
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
