//! Facts about the run itself: what was audited, on what, how long it took, what the target's
//! breakpoints allowed, what the allocation trace recorded and what the halts cost the
//! firmware, and the allocations memlife made fail.

use serde::{Deserialize, Serialize};

use super::Site;
use super::firmware_time::FirmwareTime;

/// The breakpoints an audit used, for the report (`run.breakpoints`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BreakpointUse {
    /// The most breakpoints the target had at once.
    pub max_armed: usize,
    /// Hardware breakpoints the target has; `None`: no limit (a simulator's gdbstub).
    pub capacity: Option<usize>,
    /// The count estimated before observing cycles (`None` when no cycle was observed).
    pub planned: Option<usize>,
}

/// Facts about the run.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RunFacts {
    /// memlife version.
    pub memlife: String,
    /// When the audit started (RFC 3339, UTC).
    pub date: String,
    /// Firmware ELF.
    pub elf: String,
    /// Allocator walked.
    pub allocator: String,
    /// Target description.
    pub target: String,
    /// Board or machine.
    pub board: Option<String>,
    /// The script.
    pub script: String,
    /// Heap capacity in bytes.
    pub heap_size: u64,
    /// Seconds the audit took.
    pub seconds: f64,
    /// Breakpoint stops handled.
    pub stops: u64,
    /// Resumes from a breakpoint done by executing its instruction on the host.
    pub emulated: u64,
    /// Resumes from a breakpoint that needed a single step.
    pub stepped: u64,
    /// Breakpoints armed at most, the target's limit, and the estimate before the run.
    pub breakpoints: BreakpointUse,
    /// What the allocation trace recorded, and what decided it.
    pub trace: TraceFacts,
    /// How long the firmware ran and how long it was held halted; `None` when the audit never
    /// resumed it.
    pub firmware_time: Option<FirmwareTime>,
    /// Where the serial output of the QEMU memlife started went (a file), when it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
}

/// What the allocation trace recorded over an audit (`run.trace`), and what decided it: the
/// script's text, the outputs asked for, or `[trace]` in memlife.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceFacts {
    /// Allocations were traced at some point (breakpoints in the allocator).
    pub allocations: bool,
    /// Why they were, or were not.
    pub allocations_why: String,
    /// Each allocation's requested size was read: a stop at the allocator's entry as well as
    /// at its return. Without it an allocation is one stop and `events[].request` is null.
    pub requests: bool,
    /// Why they were, or were not.
    pub requests_why: String,
    /// Where the allocator's breakpoints were armed: `everywhere`, `phases`, or the phases
    /// named (roles or functions).
    pub scope: String,
}

/// An allocation memlife made fail (`t.fail_alloc`), with what the phase returned.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct InjectedFailure {
    /// Its site.
    pub site: Site,
    /// The size asked for.
    pub request: u64,
    /// The phase running, if any (its function).
    pub phase: Option<String>,
    /// The trace event number the next event will have: the events from here on came after
    /// the failure.
    pub seq: u64,
    /// What the phase call returned (`-12`, `NULL`, `ST_NOMEM (-12)`, `void`), read at its
    /// return by the function's DWARF return type; `None` until it returned (or when it never
    /// did).
    pub returned: Option<String>,
}
