//! The bundled firmware's lifecycle (this repository's C engine in `firmware/`), filled in where
//! the user's settings say nothing: its phases by their function names, the spans of its graph
//! build and inference, its tensor table and its operator names. A firmware without these
//! functions or globals simply has no such phase or table; the user's own names are the ones
//! checked against the ELF ([`crate::names`]).

use std::time::Duration;

use memlife_audit::config::{
    AuditConfig, EngineSettings, EngineTuning, PeakMethod, SpanLabels, TensorTable,
};
use memlife_audit::history::DEFAULT_KEEP_CYCLES;
use memlife_heap::LinkState;

/// How long `monitor audit` waits for any one breakpoint.
const MONITOR_AUDIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The bundled C engine's tensor table (`g_tensors`, `g_tensor_count`).
fn bundled_tensors() -> TensorTable {
    TensorTable {
        table: "g_tensors".into(),
        count: Some("g_tensor_count".into()),
        name: Some("name".into()),
        addr: "addr".into(),
        size: "size".into(),
        first: "producer".into(),
        last: "last_consumer".into(),
        bundled: true,
    }
}

/// `config` with the bundled firmware's names wherever it says nothing.
pub fn with_bundled_defaults(mut config: AuditConfig) -> AuditConfig {
    for (alias, func) in [
        ("load", "model_load"),
        ("build", "graph_build"),
        ("run", "inference_run"),
        ("release", "model_release"),
        ("switch", "model_switch"),
    ] {
        config
            .phases
            .entry(alias.into())
            .or_insert_with(|| func.into());
    }
    for (phase, span) in [("graph_build", "op_init"), ("inference_run", "op_invoke")] {
        config
            .spans
            .entry(phase.into())
            .or_insert_with(|| span.into());
    }
    config.tensors.get_or_insert_with(bundled_tensors);
    for f in ["op_init", "op_invoke"] {
        config.labels.entry(f.into()).or_insert_with(|| SpanLabels {
            arg: 1,
            string: false,
            names: Some("g_ops".into()),
            field: Some("name".into()),
        });
    }
    config
}

/// What `memlife serve`'s `monitor audit` runs with: the bundled firmware's names, the trace
/// method, 30 s per breakpoint, and the walk choices and tuning the server was given.
pub fn monitor_audit(link: LinkState, tuning: EngineTuning) -> EngineSettings {
    EngineSettings {
        config: with_bundled_defaults(AuditConfig::default()),
        method: PeakMethod::Trace,
        timeout: MONITOR_AUDIT_TIMEOUT,
        keep_cycles: Some(DEFAULT_KEEP_CYCLES),
        link,
        tuning,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_bundled_defaults_fill_in_only_what_the_settings_do_not_say() {
        let d = with_bundled_defaults(AuditConfig::default());
        assert!(d.tensors.as_ref().unwrap().bundled);
        assert_eq!(d.labels["op_invoke"].names.as_deref(), Some("g_ops"));
        assert_eq!(d.span_of("graph_build"), Some("op_init"));
        assert_eq!(d.phase_function("release"), "model_release");
        let mine = AuditConfig {
            phases: [("run".to_string(), "nn_invoke".to_string())]
                .into_iter()
                .collect(),
            spans: [("run".to_string(), "layer_forward".to_string())]
                .into_iter()
                .collect(),
            ..AuditConfig::default()
        };
        let d = with_bundled_defaults(mine);
        // A role key names the spans of the function the role stands for, over the defaults.
        assert_eq!(d.phase_function("run"), "nn_invoke");
        assert_eq!(d.span_of("nn_invoke"), Some("layer_forward"));
        assert_eq!(d.span_of("graph_build"), Some("op_init"));
        assert_eq!(d.span_of("model_load"), None);
    }
}
