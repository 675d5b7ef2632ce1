//! The engine's settings: plain values, resolved and validated before the engine sees them.
//!
//! memlife-plan builds them from `memlife.toml` and the command line (and gives the bundled
//! firmware's names where the user gives none); `memlife serve` builds them for `monitor audit`.
//! Nothing here reads a file, a flag or the environment.
//!
//! - [`EngineSettings`]: everything one audit runs with: the names ([`AuditConfig`]), the peak
//!   method, the timeout, how many cycles are kept, how heap walks read the link, and the
//!   [`EngineTuning`] switches.
//! - [`AuditConfig`]: what the firmware's functions and globals mean: phases, spans, span
//!   labels, the tensor table, components, the lifecycle, trace settings and budgets, the
//!   roles limited to a task or a caller ([`Scope`]) and the functions that end an audit at
//!   once (`halt_on`).

use std::collections::BTreeMap;
use std::time::Duration;

use memlife_heap::LinkState;

mod scope;
pub use crate::observers::trace::TraceScope;
pub use scope::Scope;

// How the peak inside a phase is found: a report record, kept with the others in memlife-report.
pub use memlife_report::PeakMethod;

/// Tracing settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceConfig {
    /// Functions skipped when naming an allocation site (allocation wrappers).
    pub skip: Vec<String>,
    /// Frames kept per allocation backtrace.
    pub backtrace: usize,
    /// Trace allocations (`true`), or not unless the script turns it on (`false`); `None`:
    /// when the script reads them (see `crate::debugger::Debugger::plan_trace`).
    pub allocations: Option<bool>,
    /// Read each allocation's requested size at the allocator's entry, a second stop per
    /// allocation (`true`), or stop once, at its return (`false`); `None`: when the script or
    /// an output reads them.
    pub requests: Option<bool>,
    /// Where the allocator's breakpoints are armed while tracing.
    pub scope: TraceScope,
    /// The outputs of the run that show requested sizes (`--json`, ...): they read them as a
    /// script does.
    pub requests_shown_by: Vec<String>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            skip: Vec::new(),
            backtrace: 8,
            allocations: None,
            requests: None,
            scope: TraceScope::Everywhere,
            requests_shown_by: Vec::new(),
        }
    }
}

/// How calls of the role functions group into cycles (`t.cycles(n)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LifecycleConfig {
    /// The role whose every call begins a cycle; `None`: the first of load, build, run, switch,
    /// release the firmware has, else the first role of `[phases]`.
    pub cycle_starts: Option<String>,
    /// What tells the models apart where the firmware alternates between them (`[lifecycle]
    /// model`: see [`crate::observers::models`]).
    pub model: crate::observers::ModelKey,
}

/// The firmware's tensor table: a global array of structs, one per tensor, and the fields that
/// describe each, for the overlap check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorTable {
    /// The global array.
    pub table: String,
    /// A global holding how many entries are in use; the whole array when absent.
    pub count: Option<String>,
    /// The field with the tensor's name (`char *` or `char[]`), if any.
    pub name: Option<String>,
    /// The field with its address.
    pub addr: String,
    /// The field with its size in bytes.
    pub size: String,
    /// The field with the first layer (span index) that uses it.
    pub first: String,
    /// The field with the last layer that uses it.
    pub last: String,
    /// memlife's default (this repository's C engine), not the user's: a firmware whose global
    /// of that name has another shape simply has no table.
    pub bundled: bool,
}

/// How the spans of one function are named: by an index argument looked up in a global name
/// table, or by a string argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanLabels {
    /// The argument (0-based) that tells the spans apart: an index, or with `string` the name.
    pub arg: usize,
    /// The argument is a `char *` name, read from target memory.
    pub string: bool,
    /// A global array indexed by the argument: its element (or the element's `field`) names
    /// the span.
    pub names: Option<String>,
    /// The struct field of `names`' elements that holds the name.
    pub field: Option<String>,
}

/// What the firmware's functions and globals mean to an audit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditConfig {
    /// Phase aliases (`load` → `model_load`).
    pub phases: BTreeMap<String, String>,
    /// Roles limited to a task's calls or a caller's, by role (each a key of `phases`).
    pub scopes: BTreeMap<String, Scope>,
    /// Spans per phase, by role or phase function (`graph_build` → `op_init`).
    pub spans: BTreeMap<String, String>,
    /// Budgets scripts read with `budget(name)`, by their current names.
    pub budgets: BTreeMap<String, f64>,
    /// Cycles.
    pub lifecycle: LifecycleConfig,
    /// The firmware's tensor table, if it keeps one.
    pub tensors: Option<TensorTable>,
    /// How spans are named, by role or span function.
    pub labels: BTreeMap<String, SpanLabels>,
    /// Components of the peaks: a function or `file:line` site → a name (`weights`).
    pub components: BTreeMap<String, String>,
    /// Tracing.
    pub trace: TraceConfig,
    /// Functions that end an audit at once when the firmware calls them (its own assert or
    /// panic handlers), besides the ones memlife knows (`vAssertCalled`, `assert_failed`,
    /// `__assert_func`).
    pub halt_on: Vec<String>,
}

/// How the engine uses the target's debug hardware. Both are on unless a comparison turns
/// them off (the command line's `MEMLIFE_NO_EMULATION` and `MEMLIFE_NO_VECTOR_CATCH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineTuning {
    /// Resume from a breakpoint by executing its instruction on the host (Thumb cores only),
    /// instead of a single step on the target.
    pub host_resume: bool,
    /// Catch faults by the core's vector catch where the target offers it, instead of
    /// breakpoints on the fault handlers.
    pub vector_catch: bool,
}

impl Default for EngineTuning {
    fn default() -> Self {
        EngineTuning {
            host_resume: true,
            vector_catch: true,
        }
    }
}

/// Everything one audit runs with: the engine's part of an audit plan.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSettings {
    /// What the firmware's functions and globals mean.
    pub config: AuditConfig,
    /// How peaks are found.
    pub method: PeakMethod,
    /// How long to wait for any one breakpoint.
    pub timeout: Duration,
    /// Observed cycles kept in full at each end of the run (`None`: every cycle; see
    /// `crate::history`).
    pub keep_cycles: Option<u64>,
    /// How heap walks read the target, and the link's model once known.
    pub link: LinkState,
    /// Host-side resume and vector catch.
    pub tuning: EngineTuning,
}

/// Budget names earlier scripts used, and the one name each stands for now. `cycles` is how
/// many lifecycles a script runs, whatever the script; `more_cycles` the untraced ones after
/// them (leak.rhai).
pub const DEPRECATED_BUDGETS: &[(&str, &str)] = &[
    ("iterations", "cycles"),
    ("lifecycles", "cycles"),
    ("switches", "more_cycles"),
];

/// The current name of a budget (itself unless deprecated).
pub fn budget_name(name: &str) -> &str {
    DEPRECATED_BUDGETS
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new)
}

/// The roles memlife knows by name; `[phases]` may add any other.
pub const ROLES: [&str; 5] = ["load", "build", "run", "switch", "release"];

/// `; did you mean `X`?` for the candidate nearest to `name`, or nothing when none is near.
pub fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let best = candidates
        .map(|c| (strsim::levenshtein(name, c), c))
        .filter(|(d, c)| *d <= (name.len().max(c.len()) / 2).max(2))
        .min();
    best.map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}

impl AuditConfig {
    /// The span function recorded inside `function`: `[spans]` keyed by a role that stands for
    /// it (`run = "layer_forward"`), else by the function itself (`inference_run = "op_invoke"`).
    pub fn span_of(&self, function: &str) -> Option<&str> {
        self.phases
            .iter()
            .filter(|(_, f)| f.as_str() == function)
            .find_map(|(role, _)| self.spans.get(role))
            .or_else(|| self.spans.get(function))
            .map(String::as_str)
    }

    /// Every role this configuration names, known ones first in lifecycle order (load, build,
    /// run, switch, release), then the others of `[phases]` by name, with their functions.
    pub fn roles(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = ROLES
            .iter()
            .filter_map(|r| self.phases.get_key_value(*r))
            .map(|(r, f)| (r.as_str(), f.as_str()))
            .collect();
        out.extend(
            self.phases
                .iter()
                .filter(|(r, _)| !ROLES.contains(&r.as_str()))
                .map(|(r, f)| (r.as_str(), f.as_str())),
        );
        out
    }

    /// How the spans of `span_fn` are named: `[labels]` keyed by the span function itself, else
    /// by a role whose phase records it (`[spans] run = "layer_forward"`, `[labels.run]`).
    pub fn labels_of(&self, span_fn: &str) -> Option<&SpanLabels> {
        self.labels.get(span_fn).or_else(|| {
            self.phases
                .iter()
                .filter(|(_, f)| self.span_of(f) == Some(span_fn))
                .find_map(|(role, _)| self.labels.get(role))
        })
    }

    /// What the calls of `function` are limited to, when a role that stands for it is scoped.
    pub fn scope_of(&self, function: &str) -> Option<(&str, &Scope)> {
        self.phases
            .iter()
            .filter(|(_, f)| f.as_str() == function)
            .find_map(|(role, _)| self.scopes.get_key_value(role))
            .map(|(role, scope)| (role.as_str(), scope))
    }

    /// The function a phase name stands for (an alias or the function itself).
    pub fn phase_function<'a>(&'a self, name: &'a str) -> &'a str {
        self.phases.get(name).map_or(name, String::as_str)
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
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> BTreeMap<String, String> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn spans_labels_and_roles_are_found_by_role_or_function() {
        let labels = |arg| SpanLabels {
            arg,
            string: false,
            names: None,
            field: None,
        };
        let cfg = AuditConfig {
            phases: pairs(&[("warmup", "w"), ("run", "nn_invoke"), ("load", "nn_open")]),
            spans: pairs(&[("run", "layer_forward"), ("graph_build", "op_init")]),
            labels: [("run".to_string(), labels(0))].into_iter().collect(),
            ..AuditConfig::default()
        };
        // A role key names the spans of the function the role stands for.
        assert_eq!(cfg.span_of("nn_invoke"), Some("layer_forward"));
        assert_eq!(cfg.span_of("graph_build"), Some("op_init"));
        assert_eq!(cfg.span_of("nn_open"), None);
        assert_eq!(cfg.labels_of("layer_forward").unwrap().arg, 0);
        assert!(cfg.labels_of("op_init").is_none());
        assert_eq!(cfg.phase_function("load"), "nn_open");
        assert_eq!(cfg.phase_function("graph_build"), "graph_build");
        // Roles in lifecycle order, then the user's own.
        assert_eq!(
            cfg.roles(),
            [("load", "nn_open"), ("run", "nn_invoke"), ("warmup", "w")]
        );
    }

    #[test]
    fn deprecated_budget_names_stand_for_the_current_ones() {
        assert_eq!(budget_name("iterations"), "cycles");
        assert_eq!(budget_name("switches"), "more_cycles");
        assert_eq!(budget_name("lifecycles"), "cycles");
        assert_eq!(budget_name("build_step"), "build_step");
    }

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
