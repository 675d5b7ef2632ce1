//! Roles limited to a task or a caller (`[phases] run = { function = "inference_run", task =
//! "Infer" }`): which entries of a scoped function count, and which allocations and releases
//! count while its phase is open: those made by the task that made the call.

use std::collections::BTreeMap;

use memlife_dwarf::Symbols;

use crate::config::{AuditConfig, Scope};

/// The scoped functions, and who entered each.
#[derive(Debug, Default)]
pub struct Scopes {
    /// Scoped function → (role, scope).
    by_function: BTreeMap<String, (String, Scope)>,
    /// Scoped function → the task (label) that made its last admitted call.
    entered_by: BTreeMap<String, String>,
}

impl Scopes {
    /// The scopes `config` gives, by function.
    pub fn of(config: &AuditConfig) -> Self {
        let by_function = config
            .scopes
            .iter()
            .filter_map(|(role, scope)| {
                let function = config.phases.get(role)?;
                Some((function.clone(), (role.clone(), scope.clone())))
            })
            .collect();
        Scopes {
            by_function,
            entered_by: BTreeMap::new(),
        }
    }

    /// Whether no role is scoped.
    pub fn is_empty(&self) -> bool {
        self.by_function.is_empty()
    }

    /// Whether some role is limited to a task (and a kernel must say who runs).
    pub fn needs_tasks(&self) -> bool {
        self.by_function.values().any(|(_, s)| s.task.is_some())
    }

    /// The scope of `function`'s calls, with its role.
    pub fn of_function(&self, function: &str) -> Option<&(String, Scope)> {
        self.by_function.get(function)
    }

    /// Whether the entry of `function` counts, made by `running` from a return address whose
    /// functions (inlined ones included) `callers` lists. A scoped entry that counts is
    /// remembered with its task.
    pub fn admit_entry(&mut self, function: &str, running: &str, callers: &[String]) -> bool {
        let Some((_, scope)) = self.by_function.get(function) else {
            return true;
        };
        let task_ok = scope.task.as_ref().is_none_or(|t| t == running);
        let caller_ok = scope
            .caller
            .as_ref()
            .is_none_or(|c| callers.iter().any(|f| f == c));
        if task_ok && caller_ok {
            self.entered_by
                .insert(function.to_string(), running.to_string());
        }
        task_ok && caller_ok
    }

    /// Whether an allocation or release by `running` counts while `open` (a phase function)
    /// is open: in a scoped phase, only those of the task that made the call.
    pub fn admit_event(&self, open: Option<&str>, running: &str) -> bool {
        match open.and_then(|f| self.entered_by.get(f)) {
            Some(task) if self.by_function.contains_key(open.unwrap_or_default()) => {
                task == running
            }
            _ => true,
        }
    }

    /// Whether admitting an event in `open` needs to know who runs.
    pub fn scoped(&self, open: Option<&str>) -> bool {
        open.is_some_and(|f| self.by_function.contains_key(f))
    }
}

/// The functions at a return address (the caller, and the functions inlined there), from
/// `lr` at a function's entry.
pub fn callers(symbols: &Symbols, lr: u64) -> Vec<String> {
    let ret = lr & !1;
    symbols
        .locate(ret.saturating_sub(2))
        .into_iter()
        .filter_map(|l| l.function)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(task: Option<&str>, caller: Option<&str>) -> Scope {
        Scope {
            task: task.map(Into::into),
            caller: caller.map(Into::into),
        }
    }

    #[test]
    fn a_scoped_role_counts_its_tasks_calls_and_their_allocations_only() {
        let mut s = Scopes::of(
            &AuditConfig::default()
                .with_scoped_role("run", "inference_run", scope(Some("Infer"), None))
                .with_scoped_role("release", "model_release", scope(None, Some("infer_cycle")))
                .with_scoped_role("load", "model_load", Scope::default()),
        );
        assert!(s.needs_tasks());
        assert!(s.admit_entry("model_load", "Logger", &[]), "not scoped");
        assert!(!s.admit_entry("inference_run", "Logger", &[]));
        assert!(s.admit_entry("inference_run", "Infer", &[]));
        assert!(s.scoped(Some("inference_run")) && !s.scoped(Some("model_load")));
        assert!(s.admit_event(Some("inference_run"), "Infer"));
        assert!(!s.admit_event(Some("inference_run"), "Logger"));
        assert!(!s.admit_event(Some("inference_run"), "ISR 15"));
        assert!(s.admit_event(Some("model_load"), "Logger"), "not scoped");
        assert!(s.admit_event(None, "Logger"), "between phases");
        // By caller: any task, from that caller (or a function inlined there).
        assert!(!s.admit_entry("model_release", "Infer", &["main".into()]));
        assert!(s.admit_entry(
            "model_release",
            "Infer",
            &["release_inline".into(), "infer_cycle".into()]
        ));
        assert!(s.admit_event(Some("model_release"), "Infer"));
        assert!(!s.admit_event(Some("model_release"), "Logger"));
    }
}
