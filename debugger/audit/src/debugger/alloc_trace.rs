//! Allocation tracing: breakpoints on the allocator's traced entries, and every allocation and
//! release recorded with its block, its size, the bytes in use after it and its call site.
//!
//! The block of a user pointer and the header to prefetch come from the walker
//! ([`HeapWalker::block_of`](memlife_heap::HeapWalker::block_of),
//! [`header_range`](memlife_heap::HeapWalker::header_range)); a backtrace at every allocation is
//! read from one stack window fetched together with that header ([`crate::unwind`]).

use std::collections::{BTreeMap, HashMap};

use memlife_core::cortex_m::thumb;
use memlife_dwarf::Symbols;
use memlife_heap::{BlockRef, EntryRole};

use super::Debugger;
use super::breakpoints::{BreakRole, PendingAlloc, ReturnRole, ReturnWatch};
use super::run::Regs;
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::model::{EventKind, Site, TraceEvent};
use crate::unwind::{self, Prefetch};

/// A block the trace saw allocated and not yet freed.
#[derive(Debug, Clone)]
pub struct LiveAlloc {
    /// Block size.
    pub size: u64,
    /// Event sequence number.
    pub seq: u64,
    /// Allocation site.
    pub site: Site,
}

/// What the trace has recorded.
#[derive(Debug)]
pub(super) struct AllocationTrace {
    /// Whether the allocator's entries have breakpoints now.
    pub on: bool,
    /// Bytes in use as the trace counts them (resynchronised with a walk at every phase entry).
    pub used: u64,
    /// The next event's sequence number.
    pub seq: u64,
    /// Every event.
    pub events: Vec<TraceEvent>,
    /// Blocks allocated and not freed, by block address.
    pub live: BTreeMap<u64, LiveAlloc>,
    /// User pointer → block address of the live blocks.
    live_ptrs: HashMap<u64, u64>,
    /// Functions an allocation site looks past (the allocator's and the configured wrappers).
    skip: Vec<String>,
    /// The initial stack pointer from the linker script, bounding stack reads.
    stack_top: Option<u64>,
}

impl AllocationTrace {
    pub fn new(skip: Vec<String>, stack_top: Option<u64>) -> Self {
        AllocationTrace {
            on: false,
            used: 0,
            seq: 0,
            events: Vec::new(),
            live: BTreeMap::new(),
            live_ptrs: HashMap::new(),
            skip,
            stack_top,
        }
    }

    /// The functions an allocation site looks past.
    pub fn skip(&self) -> &[String] {
        &self.skip
    }

    /// Forgets the live blocks (the target was reset).
    pub fn forget_live(&mut self) {
        self.live.clear();
        self.live_ptrs.clear();
    }

    /// A block allocated at `ptr`.
    fn allocated(&mut self, ptr: u64, block: BlockRef, seq: u64, site: Site) {
        self.live.insert(
            block.addr,
            LiveAlloc {
                size: block.size,
                seq,
                site,
            },
        );
        self.live_ptrs.insert(ptr, block.addr);
    }

    /// The block of `ptr` when the trace saw it allocated (no header read needed).
    fn known(&self, ptr: u64) -> Option<BlockRef> {
        let addr = *self.live_ptrs.get(&ptr)?;
        let size = self.live.get(&addr)?.size;
        Some(BlockRef { addr, size })
    }

    /// A block freed through `ptr`.
    fn freed(&mut self, ptr: u64, block: BlockRef) {
        self.live.remove(&block.addr);
        self.live_ptrs.remove(&ptr);
    }
}

/// The allocation site of a backtrace: the first frame (inlined ones included) outside the
/// functions in `skip`, and the chain of callers from there. Frame 0 is the allocator's own pc;
/// the others are return addresses, looked up at the call instruction before them.
pub(super) fn site_of(symbols: &Symbols, skip: &[String], backtrace: &[u64]) -> Site {
    let mut site = Site::default();
    for &ret in backtrace.iter().skip(1) {
        for loc in symbols.locate(ret.saturating_sub(2)) {
            let name = loc.function.clone().unwrap_or_else(|| "??".into());
            // C++'s `operator new`/`delete` and Rust's `alloc`/`core` machinery (Box::new,
            // RawVec growth, inlined into the caller) wrap malloc/free: the site is their caller.
            if skip.contains(&name) || memlife_dwarf::demangle::is_allocation_glue(&name) {
                continue;
            }
            let file = loc
                .file
                .as_ref()
                .map(|f| f.rsplit('/').next().unwrap_or(f).to_string());
            site.chain.push(match (&file, loc.line) {
                (Some(f), Some(l)) => format!("{name} ({f}:{l})"),
                _ => name.clone(),
            });
            if site.function.is_none() {
                site.function = Some(name);
                site.file = file;
                site.line = loc.line;
            }
        }
    }
    site
}

impl Debugger {
    /// Turns allocation tracing on or off (trace method only). Off, the target runs between
    /// phase and span boundaries without stopping in the allocator: much faster, but peaks come
    /// from boundary samples and new allocations get no site.
    pub fn set_tracing(&mut self, on: bool) -> Result<(), AuditError> {
        if !on && !self.trace.on {
            // Already off (or never on: the sample and watermark methods): nothing to do, so a
            // script that turns tracing off runs under every method.
            return Ok(());
        }
        if self.method != PeakMethod::Trace {
            return Err(AuditError::Config(format!(
                "tracing is only available with the trace method (this audit uses {:?})",
                self.method
            )));
        }
        let entries = self.walker.entry_points();
        let mut roles: Vec<(u64, BreakRole)> = Vec::new();
        let mut found = false;
        for e in entries {
            let Some((addr, size)) = self.symbols.function(e.function) else {
                continue;
            };
            match e.role {
                EntryRole::Malloc { size_arg } => {
                    found = true;
                    // The block is in r0 at the allocator's return instructions: one stop per
                    // call. Without them, at the caller's return address.
                    let exits = self
                        .symbols
                        .code(addr, size as usize)
                        .map(|code| thumb::return_instructions(code, addr))
                        .unwrap_or_default();
                    if exits.is_empty() {
                        let size_arg = usize::from(size_arg);
                        roles.push((addr, BreakRole::Malloc { size_arg }));
                    } else {
                        // The entry too, for the requested size (r0 no longer holds it at the
                        // return): one more stop per call, and `events[].request` is known.
                        let size_arg = usize::from(size_arg);
                        roles.push((addr, BreakRole::MallocRequest { size_arg }));
                        roles.extend(exits.into_iter().map(|a| (a, BreakRole::MallocExit)));
                    }
                }
                EntryRole::Free { ptr_arg } => {
                    let ptr_arg = usize::from(ptr_arg);
                    roles.push((addr, BreakRole::Free { ptr_arg }));
                }
                EntryRole::OtherAlloc | EntryRole::OtherFree => {}
            }
        }
        if !found {
            return Err(AuditError::Config(format!(
                "tracing needs the allocator's malloc entry ({}) in the ELF; use --method sample",
                entries
                    .iter()
                    .filter(|e| matches!(e.role, EntryRole::Malloc { .. }))
                    .map(|e| e.function)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for (addr, role) in roles {
            if on {
                self.bps.add_entry(addr, role);
            } else {
                self.bps.remove_entry(addr, &role);
            }
        }
        if !on {
            self.bps.clear_malloc_returns();
        }
        if on && !self.trace.on {
            // Re-synchronise the running total: allocations made while off were not seen.
            let state = self.walk()?;
            self.trace.used = state.used;
        }
        self.trace.on = on;
        Ok(())
    }

    /// Whether allocations are being traced right now.
    pub fn tracing(&self) -> bool {
        self.trace.on
    }

    /// Bytes in use now: the traced count when tracing, else a walk.
    pub(super) fn current_used(&mut self) -> Result<u64, AuditError> {
        Ok(if self.method == PeakMethod::Trace && self.trace.on {
            self.trace.used
        } else {
            self.walk()?.used
        })
    }

    /// At an allocator's entry (no return instructions known): the request and the caller are
    /// read now, the block at the return address, matched by stack pointer.
    pub(super) fn malloc_entered(&mut self, regs: &Regs, size_arg: usize) {
        let backtrace = self.backtrace_with(regs, &[]);
        self.bps.watch_return(ReturnWatch {
            addr: regs.lr & !1,
            sp: regs.sp,
            role: ReturnRole::Malloc(PendingAlloc {
                request: regs.args.get(size_arg).copied().unwrap_or(0),
                backtrace,
            }),
        });
    }

    /// At an allocator's return instruction: the block is in r0, the caller in the backtrace.
    pub(super) fn malloc_exited(&mut self, ptr: u64, regs: &Regs) -> Result<(), AuditError> {
        let header: Vec<(u64, usize)> = self.walker.header_range(ptr).into_iter().collect();
        let backtrace = self.backtrace_with(regs, &header);
        let request = self.bps.pop_request(regs.sp);
        self.allocated(ptr, request, &backtrace)
    }

    /// At the caller's return address of a malloc whose entry was seen.
    pub(super) fn malloc_returned(
        &mut self,
        ptr: u64,
        pending: PendingAlloc,
    ) -> Result<(), AuditError> {
        if ptr == 0 {
            return Ok(());
        }
        self.allocated(ptr, Some(pending.request), &pending.backtrace)
    }

    fn allocated(
        &mut self,
        ptr: u64,
        request: Option<u64>,
        backtrace: &[u64],
    ) -> Result<(), AuditError> {
        // An allocator without block headers (linked_list_allocator) sizes the block from the
        // request instead.
        let block = match self.block_at(ptr)? {
            Some(b) => Some(b),
            None => request.and_then(|r| self.walker.block_from_request(ptr, r)),
        };
        let Some(block) = block else {
            ::tracing::warn!("malloc returned {ptr:#010x}, which has no valid block header");
            return Ok(());
        };
        // Block sizes come from target RAM: a sum of garbage saturates rather than overflow.
        self.trace.used = self.trace.used.saturating_add(block.size);
        let site = site_of(&self.symbols, &self.trace.skip, backtrace);
        let seq = self.record_event(EventKind::Alloc, block, request, site.clone());
        self.trace.allocated(ptr, block, seq, site);
        Ok(())
    }

    /// At the allocator's free entry.
    pub(super) fn freed(&mut self, ptr: u64, regs: &Regs) -> Result<(), AuditError> {
        let block = match self.trace.known(ptr) {
            Some(b) => Some(b),
            None => self.block_at(ptr)?,
        };
        let Some(block) = block else {
            ::tracing::warn!("free({ptr:#010x}) of something that is not an allocated block");
            return Ok(());
        };
        self.trace.used = self.trace.used.saturating_sub(block.size);
        self.trace.freed(ptr, block);
        let site = site_of(&self.symbols, &self.trace.skip, &[regs.pc, regs.lr & !1]);
        self.record_event(EventKind::Free, block, None, site);
        Ok(())
    }

    /// Records one event, raising the open phase's and spans' peaks; returns its number.
    fn record_event(
        &mut self,
        kind: EventKind,
        block: BlockRef,
        request: Option<u64>,
        site: Site,
    ) -> u64 {
        let seq = self.trace.seq;
        self.trace.seq += 1;
        self.progress.events += 1;
        let used = self.trace.used;
        let (phase, span) = self.phases.on_event(seq, used, kind, &site);
        self.trace.events.push(TraceEvent {
            seq,
            kind,
            addr: block.addr,
            size: block.size,
            request,
            used_after: used,
            phase,
            span,
            site,
        });
        seq
    }

    /// The block of a user pointer, reading through what this stop already read.
    fn block_at(&mut self, ptr: u64) -> Result<Option<BlockRef>, AuditError> {
        let cache = std::mem::take(&mut self.stop_cache);
        let mut mem = Prefetch::from_parts(self.target.as_memory(), cache);
        let block = self.walker.block_of(&mut mem, ptr);
        self.stop_cache = mem.into_ranges();
        Ok(block?)
    }

    /// Return addresses of the call chain at a stop inside the allocator (frame 0 is the
    /// allocator), from the stack window read with `extra` ranges in one request; what was
    /// read stays in the stop cache.
    pub(super) fn backtrace_with(&mut self, regs: &Regs, extra: &[(u64, usize)]) -> Vec<u64> {
        let depth = self.config.trace.backtrace.max(1);
        let fallback = vec![regs.pc, regs.lr & !1];
        let Some(core) = unwind::registers(self.target.as_mut()) else {
            return fallback;
        };
        // Never past the top of the stack: a read beyond RAM fails and costs retries.
        let window = self
            .trace
            .stack_top
            .filter(|top| *top > regs.sp)
            .map_or(unwind::STACK_WINDOW, |top| {
                unwind::STACK_WINDOW.min((top - regs.sp) as usize)
            });
        let mut ranges = vec![(regs.sp, window)];
        ranges.extend_from_slice(extra);
        let mut mem = Prefetch::load(self.target.as_memory(), &ranges);
        let mut frames = unwind::backtrace(&self.symbols, &core, &mut mem, depth + 1);
        if frames.len() < 2 {
            frames = fallback;
        }
        frames.truncate(depth + 1);
        self.stop_cache = mem.into_ranges();
        frames
    }
}
