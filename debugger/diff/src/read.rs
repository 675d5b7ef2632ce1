//! The audit JSON reports the diff compares, read as `memlife-report` reads them (fields a
//! report does not know are ignored, fields it lacks take defaults, so a report from an older or
//! newer memlife still reads), and refused with the file's name when there is nothing to
//! compare.

use memlife_report::AuditReport;

use crate::DiffError;

/// Reads a report; `which` names it in errors (`BASE.json`). A file that is not an audit
/// report, or the report of an audit that recorded no phase, is an error that says so.
pub fn parse(bytes: &[u8], which: &str) -> Result<AuditReport, DiffError> {
    let report = AuditReport::from_slice(bytes).map_err(|e| DiffError::NotAReport {
        which: which.to_string(),
        reason: e.to_string(),
    })?;
    require_phases(&report, which)?;
    Ok(report)
}

/// Refuses a report without phases (the audit stopped before the lifecycle ran): the diff
/// compares phases. `memlife audit --baseline` asks it of the report it just made.
pub fn require_phases(report: &AuditReport, which: &str) -> Result<(), DiffError> {
    if !report.phases.is_empty() {
        return Ok(());
    }
    let why = report.error.as_ref().map_or_else(
        || "no phase was recorded".to_string(),
        |e| e.message.clone(),
    );
    Err(DiffError::NoPhases {
        which: which.to_string(),
        reason: why,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn refuses_what_is_not_a_report_and_a_run_without_phases() {
        let e = parse(b"[1]", "BASE.json").unwrap_err().to_string();
        assert!(
            e.contains("BASE.json") && e.contains("not a JSON object"),
            "{e}"
        );
        let e = parse(br#"{"name": "x"}"#, "HEAD.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `run` field"), "{e}");
        let e = parse(
            br#"{"run": {}, "phases": [], "error": {"message": "cannot connect"}}"#,
            "HEAD.json",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("HEAD.json") && e.contains("cannot connect"),
            "{e}"
        );
    }

    /// A report written by memlife 0.1.0 before the report model was shared (main's binary,
    /// `memlife audit --config examples/healthy/memlife.toml scripts/lifecycle.rhai`, cut to
    /// its first cycle) reads, figure for figure.
    #[test]
    fn a_report_written_before_the_shared_model_reads() {
        let bytes = include_bytes!("../tests/fixtures/healthy-0.1.0.json");
        let r = parse(bytes, "healthy-0.1.0.json").unwrap();
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(r.phases.len(), v["phases"].as_array().unwrap().len());
        assert_eq!(r.events.len(), v["events"].as_array().unwrap().len());
        // Written back, the report is the JSON it was read from.
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }
}
