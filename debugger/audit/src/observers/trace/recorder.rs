//! The allocation trace: whether the allocator's entries have breakpoints, the bytes in use as
//! the trace counts them, every event recorded, and the blocks still live.
//!
//! At an allocator stop it turns what the registers say into a [`HeapEvent`] (numbered, with
//! the block, the bytes in use after it and its site); the engine passes the event through the
//! spans, the open phase and the added observers, then hands it back to [`AllocationTrace::keep`].

use std::collections::BTreeMap;

use memlife_heap::BlockRef;

use super::arming::{Arming, Change};
use super::live::{LiveAlloc, LiveBlocks};
use super::requests::Requests;
use super::sites::Sites;
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::events::{AuditSession, Awaited, HeapEvent, PendingAlloc, Tags};
use crate::model::{EventKind, TraceEvent};
use crate::session::Regs;

/// What the trace has recorded.
#[derive(Debug)]
pub struct AllocationTrace {
    /// Whether the allocator's breakpoints are asked for and in.
    arming: Arming,
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
            arming: Arming::default(),
            used: 0,
            seq: 0,
            events: Vec::new(),
            tags: BTreeMap::new(),
            live: LiveBlocks::default(),
            requests: Requests::default(),
            sites,
        }
    }

    /// Asks for allocation tracing, or stops it (trace method only). Off, the target runs
    /// between phase and span boundaries without stopping in the allocator: much faster, but
    /// peaks come from boundary samples and new allocations get no site. Asked for, the
    /// breakpoints are armed when `in_scope` (the scope allows it now; see [`Self::rescope`]).
    pub fn set_on(
        &mut self,
        session: &mut AuditSession,
        on: bool,
        method: PeakMethod,
        in_scope: bool,
    ) -> Result<(), AuditError> {
        let change = self
            .arming
            .set_wanted(session, on, method, in_scope, None)?;
        self.apply(session, change)
    }

    /// Arms the breakpoints when tracing is asked for and the scope allows it now
    /// (`in_scope`), else disarms them. `used`: the bytes in use when a walk just gave them
    /// (at a phase entry); otherwise arming walks the heap for them.
    pub fn rescope(
        &mut self,
        session: &mut AuditSession,
        in_scope: bool,
        used: Option<u64>,
    ) -> Result<(), AuditError> {
        let change = self.arming.rescope(session, in_scope, used)?;
        self.apply(session, change)
    }

    /// Reads each allocation's requested size at the allocator's entry (a second stop per
    /// allocation), or not (one stop, at its return; `request` unknown).
    pub fn set_requests(
        &mut self,
        session: &mut AuditSession,
        read: bool,
    ) -> Result<(), AuditError> {
        if self.arming.set_requests(session, read)? {
            // Sizes asked at entries under the other arming are never matched.
            self.requests.clear();
        }
        Ok(())
    }

    /// What arming or disarming means for the trace's state.
    fn apply(&mut self, session: &mut AuditSession, change: Change) -> Result<(), AuditError> {
        match change {
            Change::None => {}
            // Re-synchronise the running total: allocations made while off were not seen.
            Change::Armed { used: Some(used) } => self.used = used,
            Change::Armed { used: None } => self.used = session.walk()?.used,
            Change::Disarmed => self.requests.clear(),
        }
        Ok(())
    }

    /// Whether allocations are being traced right now.
    pub fn is_on(&self) -> bool {
        self.arming.is_on()
    }

    /// Whether tracing is asked for (armed or kept out of scope).
    pub fn is_wanted(&self) -> bool {
        self.arming.is_wanted()
    }

    /// Its arming: asked for, armed, requested sizes, what the report says.
    pub fn arming(&self) -> &Arming {
        &self.arming
    }

    /// Its arming, to record what decided it.
    pub fn arming_mut(&mut self) -> &mut Arming {
        &mut self.arming
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
        Ok(if self.is_on() {
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
            // The observers' tags (`task`, `tick`) become fields when the report is assembled.
            task: None,
            tick: None,
        });
    }
}
