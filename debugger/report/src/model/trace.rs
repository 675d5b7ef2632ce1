//! The allocation trace: every allocator call the audit traced, and where it was made.

use serde::{Deserialize, Serialize};

/// Where an allocation was made: the first frame outside the allocator and its wrappers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[serde(default)]
pub struct Site {
    /// Function.
    pub function: Option<String>,
    /// Source file (base name).
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
    /// The chain of callers, innermost first, as `function (file:line)`.
    pub chain: Vec<String>,
}

impl std::fmt::Display for Site {
    /// `build_graph (engine.c:51)`, or the function alone when the line is unknown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.function.as_deref().unwrap_or("??"))?;
        if let (Some(file), Some(line)) = (&self.file, self.line) {
            write!(f, " ({file}:{line})")?;
        }
        Ok(())
    }
}

impl Site {
    /// `engine.c:51`, or the function when the line is unknown.
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            _ => self.function.clone().unwrap_or_else(|| "??".into()),
        }
    }

    /// The call chain's functions without their locations: what stays the same when a line
    /// moves.
    pub fn chain_functions(&self) -> Vec<&str> {
        self.chain
            .iter()
            .map(|c| c.rsplit_once(" (").map_or(c.as_str(), |(f, _)| f))
            .collect()
    }
}

/// What a traced allocator call did.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A block was allocated (`"alloc"` in the JSON).
    Alloc,
    /// A block was freed (`"free"` in the JSON).
    Free,
}

impl EventKind {
    /// The name the JSON report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
        }
    }
}

/// One traced allocator call. Read back, every field but `kind` may be missing (it takes its
/// default): an event that does not say what it did is not one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceEvent {
    /// Sequence number (0-based, over the whole audit).
    #[serde(default)]
    pub seq: u64,
    /// Allocation or release.
    pub kind: EventKind,
    /// Block address.
    #[serde(default)]
    pub addr: u64,
    /// Block size in the allocator's accounting.
    #[serde(default)]
    pub size: u64,
    /// Requested size (allocations).
    #[serde(default)]
    pub request: Option<u64>,
    /// Used bytes after the event.
    #[serde(default)]
    pub used_after: u64,
    /// The phase running (function), if any.
    #[serde(default)]
    pub phase: Option<String>,
    /// The innermost span running, as `function#call`.
    #[serde(default)]
    pub span: Option<String>,
    /// Where it was called from.
    #[serde(default)]
    pub site: Site,
    /// Who made it, on a FreeRTOS firmware: the running task's name, `ISR n` in exception
    /// handler n, `main` before the scheduler started, `?` when the kernel could not say.
    /// Absent without an RTOS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The firmware's own clock when it was made: the kernel's tick count (`xTickCount`), where
    /// the firmware has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<u64>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn event_kinds_serialise_as_the_json_report_always_named_them() {
        for (kind, name) in [(EventKind::Alloc, "alloc"), (EventKind::Free, "free")] {
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
            assert_eq!(kind.as_str(), name);
        }
    }

    #[test]
    fn sites_keep_their_chain_functions_without_lines() {
        let s = Site {
            function: Some("build_graph".into()),
            file: Some("engine.c".into()),
            line: Some(51),
            chain: vec![
                "build_graph (engine.c:51)".into(),
                "graph_build (engine.c:118)".into(),
            ],
        };
        assert_eq!(s.chain_functions(), ["build_graph", "graph_build"]);
        assert_eq!(s.to_string(), "build_graph (engine.c:51)");
        assert_eq!(s.location(), "engine.c:51");
    }
}
