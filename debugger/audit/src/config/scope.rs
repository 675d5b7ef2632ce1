//! Roles limited to some of their function's calls: those a task makes, or those made from a
//! caller function (memlife-plan reads them from `[phases]` tables with `task` or `caller`).

/// What a role is limited to; both given, a call must satisfy both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// The task (its FreeRTOS name) whose calls count.
    pub task: Option<String>,
    /// The function the calls must come from (the entry's return address is in it, or in a
    /// function inlined there).
    pub caller: Option<String>,
}

impl Scope {
    /// `task Infer`, `caller infer_cycle`, or both.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = [("task", &self.task), ("caller", &self.caller)]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
            .collect();
        parts.join(", ")
    }
}
