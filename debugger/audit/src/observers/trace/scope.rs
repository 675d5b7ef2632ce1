//! Where the allocation trace arms its breakpoints (`[trace] scope` in memlife.toml, read by
//! memlife-plan): whenever tracing is on (`"everywhere"`, the default), only while a phase is
//! open (`"phases"`), or only while a phase of the roles or functions listed is open
//! (`["run"]`). Outside, the
//! allocator runs without a stop, so a real-time firmware's other work (tasks, timers) between
//! phases is not held up. A phase's figures lose nothing: the bytes in use are taken from the
//! walk at its entry; blocks allocated outside get no allocation site.

/// Where the trace's breakpoints are armed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TraceScope {
    /// Whenever tracing is on.
    #[default]
    Everywhere,
    /// While a phase is open.
    Phases,
    /// While a phase of one of these roles or functions is open.
    Only(Vec<String>),
}

impl TraceScope {
    /// Whether the trace is armed with `open` the open phase's function, if any;
    /// `stands_for(name, function)` tells whether a name of the list (a role or a function)
    /// stands for that function.
    pub fn admits(&self, open: Option<&str>, stands_for: impl Fn(&str, &str) -> bool) -> bool {
        match (self, open) {
            (TraceScope::Everywhere, _) => true,
            (_, None) => false,
            (TraceScope::Phases, Some(_)) => true,
            (TraceScope::Only(names), Some(f)) => names.iter().any(|n| stands_for(n, f)),
        }
    }

    /// The phases named, for checking them against the firmware.
    pub fn names(&self) -> &[String] {
        match self {
            TraceScope::Only(names) => names,
            _ => &[],
        }
    }
}

impl std::fmt::Display for TraceScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceScope::Everywhere => f.write_str("everywhere"),
            TraceScope::Phases => f.write_str("phases"),
            TraceScope::Only(names) => f.write_str(&names.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_is_armed_inside_the_phases_named_by_role_or_function() {
        let roles = |n: &str, f: &str| n == f || (n == "run" && f == "inference_run");
        let only = TraceScope::Only(vec!["run".into()]);
        assert!(only.admits(Some("inference_run"), roles));
        assert!(!only.admits(Some("model_load"), roles));
        assert!(!only.admits(None, roles));
        assert!(TraceScope::Phases.admits(Some("model_load"), roles));
        assert!(!TraceScope::Phases.admits(None, roles));
        assert!(TraceScope::Everywhere.admits(None, roles));
        assert_eq!(only.to_string(), "run");
    }
}
