//! What the session asks of the engine's roles: when an entry breakpoint is armed on a target
//! with few breakpoints ([`EntryRole::arm`], [`Arm`]), and which awaited returns nest and which
//! stay armed ([`ReturnRole`]). The roles themselves are the engine's (`crate::events`).

/// When an entry breakpoint is armed on a target with too few breakpoints (lean).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// Always: what a run waits for, script hooks.
    Always,
    /// Always, unless the target catches faults by vector catch: fault handlers.
    Fault,
    /// Between phases only: the lifecycle roles' entries.
    Between,
    /// Inside a phase only: the allocator's entries, span entries.
    Inside,
    /// Never when lean: the allocator's return instructions (its caller's return reads the
    /// block instead).
    NotLean,
    /// Only when lean, inside a phase: the allocator's entry when its block is read at its
    /// return instructions and no one reads the size asked (lean, those are not armed, and the
    /// entry awaits the caller's return instead).
    Lean,
}

impl Arm {
    /// Whether a role armed this way is wanted when lean, inside a phase or between phases.
    pub fn needed(self, in_phase: bool) -> bool {
        match self {
            Arm::Always | Arm::Fault => true,
            Arm::Between => !in_phase,
            Arm::Inside | Arm::Lean => in_phase,
            Arm::NotLean => false,
        }
    }
}

/// What the budget needs to know about an entry breakpoint's role.
pub trait EntryRole: Clone + PartialEq + std::fmt::Debug {
    /// When it is armed on a target with too few breakpoints.
    fn arm(&self) -> Arm;
}

/// What the budget needs to know about an awaited return's role.
pub trait ReturnRole: Clone + std::fmt::Debug {
    /// Returns of one group nest (a phase's, a span's, an allocation's): when lean, only the
    /// innermost of each group is armed.
    fn group(&self) -> u32;
    /// Its address stays armed after it fired, for the next call from the same site.
    fn sticky(&self) -> bool;
}

/// A return awaited at `addr` with the stack pointer back at `sp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnWatch<R> {
    /// The return address.
    pub addr: u64,
    /// The stack pointer at the call: after the return it has this value again, which tells
    /// this return from a nested or recursive call's return to the same address.
    pub sp: u64,
    /// What it closes.
    pub role: R,
}
