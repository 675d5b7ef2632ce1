//! Whether the trace's breakpoints are in the allocator: tracing asked for or not (the plan,
//! `t.trace`), armed or kept out while the scope excludes the moment (`[trace] scope`), with or
//! without the stop at the allocator's entry for the size asked; and what the report says was
//! traced, and why ([`TraceFacts`]).

use super::entries::tracing_roles;
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::events::{AuditSession, Awaited, Role, TraceRole};
use crate::model::TraceFacts;

/// What a change of arming means for the trace's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing changed.
    None,
    /// The breakpoints went in; the bytes in use when a walk just gave them.
    Armed {
        /// Bytes in use, when known.
        used: Option<u64>,
    },
    /// The breakpoints went out: the mallocs in flight are forgotten.
    Disarmed,
}

/// The trace's arming.
#[derive(Debug)]
pub struct Arming {
    /// Tracing is asked for: the breakpoints are armed wherever the scope allows.
    wanted: bool,
    /// The allocator's breakpoints are in now.
    on: bool,
    /// An allocation also stops at the allocator's entry, for the size asked.
    read_requests: bool,
    /// What was traced, and why.
    facts: TraceFacts,
}

impl Default for Arming {
    /// Not asked for; requested sizes read (what an audit without a plan does).
    fn default() -> Self {
        Arming {
            wanted: false,
            on: false,
            read_requests: true,
            facts: TraceFacts {
                requests: true,
                scope: "everywhere".into(),
                ..TraceFacts::default()
            },
        }
    }
}

/// Whether these breakpoints stop at the allocator's entry for the size asked: with requested
/// sizes read, or where the allocator's return instructions were not found.
fn reads_at_entry(roles: &[(u64, TraceRole)]) -> bool {
    roles.iter().any(|(_, r)| {
        matches!(
            r,
            TraceRole::Malloc { .. } | TraceRole::MallocRequest { .. }
        )
    })
}

fn set_roles(session: &mut AuditSession, roles: &[(u64, TraceRole)], on: bool) {
    for (addr, role) in roles {
        let role = Role::Trace(role.clone());
        if on {
            session.add_entry(*addr, role);
        } else {
            session.remove_entry(*addr, &role);
        }
    }
}

impl Arming {
    /// Asks for tracing, or stops it (trace method only); armed now when `in_scope`.
    pub fn set_wanted(
        &mut self,
        session: &mut AuditSession,
        on: bool,
        method: PeakMethod,
        in_scope: bool,
        used: Option<u64>,
    ) -> Result<Change, AuditError> {
        if !on && !self.wanted {
            // Already off (or never on: the sample and watermark methods): nothing to do, so a
            // script that turns tracing off runs under every method.
            return Ok(Change::None);
        }
        if method != PeakMethod::Trace {
            return Err(AuditError::Config(format!(
                "tracing is only available with the trace method (this audit uses {method:?})"
            )));
        }
        self.wanted = on;
        self.arm(session, on && in_scope, used)
    }

    /// Armed when asked for and `in_scope`, else disarmed.
    pub fn rescope(
        &mut self,
        session: &mut AuditSession,
        in_scope: bool,
        used: Option<u64>,
    ) -> Result<Change, AuditError> {
        self.arm(session, self.wanted && in_scope, used)
    }

    fn arm(
        &mut self,
        session: &mut AuditSession,
        on: bool,
        used: Option<u64>,
    ) -> Result<Change, AuditError> {
        if on == self.on {
            return Ok(Change::None);
        }
        let roles = tracing_roles(session.walker(), session.symbols(), self.read_requests)?;
        set_roles(session, &roles, on);
        self.on = on;
        if on {
            self.facts.allocations = true;
            self.facts.requests |= reads_at_entry(&roles);
            return Ok(Change::Armed { used });
        }
        // The mallocs in flight and their return addresses are forgotten.
        session
            .breakpoints_mut()
            .forget_returns(|r| matches!(r, Awaited::Alloc(_)), true);
        Ok(Change::Disarmed)
    }

    /// Reads requested sizes at the allocator's entry, or not; `true` when the breakpoints
    /// in changed.
    pub fn set_requests(
        &mut self,
        session: &mut AuditSession,
        read: bool,
    ) -> Result<bool, AuditError> {
        if read == self.read_requests {
            return Ok(false);
        }
        let swapped = self.on;
        if swapped {
            let (walker, symbols) = (session.walker(), session.symbols());
            let old = tracing_roles(walker, symbols, self.read_requests)?;
            let new = tracing_roles(walker, symbols, read)?;
            set_roles(session, &old, false);
            set_roles(session, &new, true);
            self.facts.requests |= reads_at_entry(&new);
        }
        self.read_requests = read;
        Ok(swapped)
    }

    /// The breakpoints the trace would arm inside a phase, when it is asked for but its scope
    /// keeps it disarmed now (for the breakpoint plan); none otherwise.
    pub fn pending_roles(
        &self,
        session: &AuditSession,
    ) -> Result<Vec<(u64, TraceRole)>, AuditError> {
        if !self.wanted || self.on {
            return Ok(Vec::new());
        }
        tracing_roles(session.walker(), session.symbols(), self.read_requests)
    }

    /// The breakpoints are in now.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Tracing is asked for (armed, or kept out of scope now).
    pub fn is_wanted(&self) -> bool {
        self.wanted
    }

    /// Requested sizes are read.
    pub fn reads_requests(&self) -> bool {
        self.read_requests
    }

    /// What was traced, and why. Without a trace no requested size is read, whatever would
    /// have asked for them (an output such as --json names itself otherwise, beside `false`).
    pub fn facts(&self) -> TraceFacts {
        if self.facts.allocations {
            return self.facts.clone();
        }
        TraceFacts {
            requests: false,
            requests_why: "no allocation is traced".into(),
            ..self.facts.clone()
        }
    }

    /// Records why allocations and requested sizes are traced or not, and where, once the
    /// plan is applied (before the target first runs): what was armed before is not counted.
    pub fn set_reasons(
        &mut self,
        session: &AuditSession,
        allocations_why: String,
        requests_why: String,
        scope: String,
    ) -> Result<(), AuditError> {
        let requests = self.on
            && reads_at_entry(&tracing_roles(
                session.walker(),
                session.symbols(),
                self.read_requests,
            )?);
        self.facts = TraceFacts {
            allocations: self.on,
            allocations_why,
            requests,
            requests_why,
            scope,
        };
        Ok(())
    }
}
