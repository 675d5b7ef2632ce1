//! What a run waits for ([`Goal`]) and how it ended ([`Outcome`]).

/// What a run ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The goal was reached.
    Reached,
    /// A script hook's breakpoint was hit (the goal is still pending: call `run` again).
    Hook(String),
}

/// What a run waits for.
#[derive(Debug, Clone)]
pub enum Goal {
    /// The `remaining`-th next entry of the function at `addr`.
    Entry {
        /// Function name.
        function: String,
        /// Entry address.
        addr: u64,
        /// Entries still to see.
        remaining: u32,
    },
    /// The return of the open phase.
    PhaseReturn,
    /// The next entry of any lifecycle role's function outside a phase (their breakpoints are
    /// the cycle run's): `hit` is the function entered.
    Role {
        /// The functions, for messages.
        functions: Vec<String>,
        /// The function whose entry was reached.
        hit: Option<String>,
    },
}

impl Goal {
    /// The lifecycle function a role goal reached, taken out of it (empty for other goals).
    pub fn take_hit(&mut self) -> String {
        match self {
            Goal::Role { hit, .. } => hit.take().unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// What the goal is, for messages (`open` is the open phase's function).
    pub fn describe(&self, open: Option<&str>) -> String {
        match self {
            Goal::Entry { function, .. } => format!("breakpoint at {function}"),
            Goal::PhaseReturn => format!("return of {}", open.unwrap_or("the phase")),
            Goal::Role { functions, .. } => {
                format!(
                    "next call of a lifecycle function ({})",
                    functions.join(", ")
                )
            }
        }
    }
}
