//! Roles limited to some of their function's calls: those a task makes, or those made from a
//! caller function (memlife-plan reads them from `[phases]` tables with `task` or `caller`).

use super::AuditConfig;

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

impl AuditConfig {
    /// This configuration with `role` standing for `function`, limited to `scope` (an empty
    /// scope limits nothing).
    pub fn with_scoped_role(mut self, role: &str, function: &str, scope: Scope) -> Self {
        self.phases.insert(role.into(), function.into());
        if scope != Scope::default() {
            self.scopes.insert(role.into(), scope);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_describes_itself_and_an_empty_one_limits_nothing() {
        let both = Scope {
            task: Some("Infer".into()),
            caller: Some("infer_cycle".into()),
        };
        assert_eq!(both.describe(), "task Infer, caller infer_cycle");
        let cfg = AuditConfig::default()
            .with_scoped_role("run", "inference_run", both.clone())
            .with_scoped_role("load", "model_load", Scope::default());
        assert_eq!(cfg.scope_of("inference_run"), Some(("run", &both)));
        assert_eq!(cfg.scope_of("model_load"), None);
        assert_eq!(cfg.phase_function("load"), "model_load");
    }
}
