//! The allocation trace: whether the allocator's entries have breakpoints, the bytes in use as
//! the trace counts them, every event recorded, and the blocks still live.
//!
//! At an allocator stop it turns what the registers say into a [`HeapEvent`] (numbered, with
//! the block, the bytes in use after it and its site); the engine passes the event through the
//! spans, the open phase and the added observers, then hands it back to [`AllocationTrace::keep`].

use std::collections::BTreeMap;

use memlife_heap::BlockRef;

use super::entries::tracing_roles;
use super::live::{LiveAlloc, LiveBlocks};
use super::requests::Requests;
use super::sites::Sites;
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::events::{AuditSession, Awaited, HeapEvent, PendingAlloc, Role, Tags};
use crate::model::{EventKind, TraceEvent};
use crate::session::Regs;

/// What the trace has recorded.
#[derive(Debug)]
pub struct AllocationTrace {
    /// Whether the allocator's entries have breakpoints now.
    on: bool,
    /// Bytes in use as the trace counts them (resynchronised with a walk at every phase entry).
    used: u64,
    /// The next event's sequence number.
    seq: u64,
    /// Every event kept (those of folded cycles are folded away, see `crate::history`).
    events: Vec<TraceEvent>,
    /// What observers added to events, by event number (only events with tags).
    tags: BTreeMap<u64, Tags>,
    /// Blocks allocated and not freed.
    live: LiveBlocks,
    /// Sizes asked at entries whose return instruction is still to come.
    requests: Requests,
    /// How sites are found.
    sites: Sites,
}

impl AllocationTrace {
    /// An empty trace, off.
    pub fn new(sites: Sites) -> Self {
        AllocationTrace {
            on: false,
            used: 0,
            seq: 0,
            events: Vec::new(),
            tags: BTreeMap::new(),
            live: LiveBlocks::default(),
            requests: Requests::default(),
            sites,
        }
    }

    /// Turns allocation tracing on or off (trace method only). Off, the target runs between
    /// phase and span boundaries without stopping in the allocator: much faster, but peaks come
    /// from boundary samples and new allocations get no site.
    pub fn set_on(
        &mut self,
        session: &mut AuditSession,
        on: bool,
        method: PeakMethod,
    ) -> Result<(), AuditError> {
        if !on && !self.on {
            // Already off (or never on: the sample and watermark methods): nothing to do, so a
            // script that turns tracing off runs under every method.
            return Ok(());
        }
        if method != PeakMethod::Trace {
            return Err(AuditError::Config(format!(
                "tracing is only available with the trace method (this audit uses {method:?})"
            )));
        }
        for (addr, role) in tracing_roles(session.walker(), session.symbols())? {
            let role = Role::Trace(role);
            if on {
                session.add_entry(addr, role);
            } else {
                session.remove_entry(addr, &role);
            }
        }
        if !on {
            // The mallocs in flight and their return addresses are forgotten.
            session
                .breakpoints_mut()
                .forget_returns(|r| matches!(r, Awaited::Alloc(_)), true);
            self.requests.clear();
        }
        if on && !self.on {
            // Re-synchronise the running total: allocations made while off were not seen.
            self.used = session.walk()?.used;
        }
        self.on = on;
        Ok(())
    }

    /// Whether allocations are being traced right now.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Bytes in use as the trace counts them.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Sets the running total from a walk.
    pub fn set_used(&mut self, used: u64) {
        self.used = used;
    }

    /// Bytes in use now: the traced count when tracing, else a walk.
    pub fn current_used(&self, session: &mut AuditSession) -> Result<u64, AuditError> {
        Ok(if self.on {
            self.used
        } else {
            session.walk()?.used
        })
    }

    /// The next event's sequence number.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// The events kept.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// The events kept, for the history to fold; the tags of events folded away go with them.
    pub fn fold(&mut self, fold: impl FnOnce(&mut Vec<TraceEvent>)) {
        fold(&mut self.events);
        if !self.tags.is_empty() {
            let events = &self.events;
            self.tags
                .retain(|seq, _| events.binary_search_by_key(seq, |e| e.seq).is_ok());
        }
    }

    /// What observers added to event `seq`.
    pub fn tags(&self, seq: u64) -> Option<&Tags> {
        self.tags.get(&seq)
    }

    /// Blocks allocated and not freed, by block address.
    pub fn live(&self) -> &BTreeMap<u64, LiveAlloc> {
        self.live.map()
    }

    /// The live blocks, with their damage lookup.
    pub fn live_blocks(&self) -> &LiveBlocks {
        &self.live
    }

    /// How sites are found.
    pub fn sites(&self) -> &Sites {
        &self.sites
    }

    /// The target was reset: no block is live, no call in flight.
    pub fn on_reset(&mut self) {
        self.live.forget();
        self.requests.clear();
    }

    /// At an allocator's entry (no return instructions known): the request and the caller are
    /// read now, the block at the return address, matched by stack pointer.
    pub fn malloc_entered(&mut self, session: &mut AuditSession, regs: &Regs, size_arg: usize) {
        let backtrace = self.sites.backtrace(session, regs, &[]);
        session.watch_return(
            regs.return_address(),
            regs.sp,
            Awaited::Alloc(PendingAlloc {
                request: regs.arg(size_arg),
                backtrace,
            }),
        );
    }

    /// At an allocator's entry whose block is read at its return instructions: the size asked.
    pub fn request_entered(&mut self, regs: &Regs, size_arg: usize) {
        self.requests.push(regs.sp, regs.arg(size_arg));
    }

    /// At an allocator's return instruction with r0 = 0: the request is spent.
    pub fn request_failed(&mut self, sp: u64) {
        self.requests.pop(sp);
    }

    /// At an allocator's return instruction: the block is in r0, the caller in the backtrace.
    pub fn malloc_exited(
        &mut self,
        session: &mut AuditSession,
        regs: &Regs,
    ) -> Result<Option<HeapEvent>, AuditError> {
        let ptr = regs.args[0];
        let header: Vec<(u64, usize)> = session
            .walker()
            .header_range(ptr)
            .map(|h| (h.addr, h.len))
            .into_iter()
            .collect();
        let backtrace = self.sites.backtrace(session, regs, &header);
        let request = self.requests.pop(regs.sp);
        self.allocated(session, ptr, request, &backtrace)
    }

    /// At the caller's return address of a malloc whose entry was seen.
    pub fn malloc_returned(
        &mut self,
        session: &mut AuditSession,
        ptr: u64,
        pending: PendingAlloc,
    ) -> Result<Option<HeapEvent>, AuditError> {
        if ptr == 0 {
            return Ok(None);
        }
        self.allocated(session, ptr, Some(pending.request), &pending.backtrace)
    }

    fn allocated(
        &mut self,
        session: &mut AuditSession,
        ptr: u64,
        request: Option<u64>,
        backtrace: &[u64],
    ) -> Result<Option<HeapEvent>, AuditError> {
        // An allocator without block headers (linked_list_allocator) sizes the block from the
        // request instead.
        let block = match session.block_of(ptr)? {
            Some(b) => Some(b),
            None => request.and_then(|r| session.walker().block_from_request(ptr, r)),
        };
        let Some(block) = block else {
            ::tracing::warn!("malloc returned {ptr:#010x}, which has no valid block header");
            return Ok(None);
        };
        // Block sizes come from target RAM: a sum of garbage saturates rather than overflow.
        self.used = self.used.saturating_add(block.size);
        let site = self.sites.site_of(session.symbols(), backtrace);
        let event = self.event(EventKind::Alloc, block, request, site);
        self.live
            .allocated(ptr, block, event.seq, event.site.clone());
        Ok(Some(event))
    }

    /// At the allocator's free entry, `ptr` not null.
    pub fn freed(
        &mut self,
        session: &mut AuditSession,
        regs: &Regs,
        ptr: u64,
    ) -> Result<Option<HeapEvent>, AuditError> {
        let block = match self.live.known(ptr) {
            Some(b) => Some(b),
            None => session.block_of(ptr)?,
        };
        let Some(block) = block else {
            ::tracing::warn!("free({ptr:#010x}) of something that is not an allocated block");
            return Ok(None);
        };
        self.used = self.used.saturating_sub(block.size);
        self.live.freed(ptr, block);
        let site = self
            .sites
            .site_of(session.symbols(), &[regs.pc, regs.return_address()]);
        Ok(Some(self.event(EventKind::Free, block, None, site)))
    }

    /// A new event, numbered.
    fn event(
        &mut self,
        kind: EventKind,
        block: BlockRef,
        request: Option<u64>,
        site: crate::model::Site,
    ) -> HeapEvent {
        let seq = self.seq;
        self.seq += 1;
        HeapEvent {
            seq,
            kind,
            block,
            request,
            used_after: self.used,
            site,
            tags: Tags::new(),
        }
    }

    /// Keeps an event, filed under the phase and span running when it was made.
    pub fn keep(&mut self, event: HeapEvent, phase: Option<String>, span: Option<String>) {
        if !event.tags.is_empty() {
            self.tags.insert(event.seq, event.tags);
        }
        self.events.push(TraceEvent {
            seq: event.seq,
            kind: event.kind,
            addr: event.block.addr,
            size: event.block.size,
            request: event.request,
            used_after: event.used_after,
            phase,
            span,
            site: event.site,
        });
    }
}
