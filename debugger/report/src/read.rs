//! Reading an audit JSON report back ([`AuditReport::from_slice`]): what `memlife diff` and
//! `memlife audit --baseline` read. Defensive: a file that is not a report is refused with the
//! reason; fields the report does not know are ignored and fields it lacks take their defaults
//! (see [`crate::model`]), so a report from an older or newer memlife still reads.

use crate::AuditReport;

/// Why bytes are not an audit report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// An object without a key every report has.
    #[error(
        "no `{0}` field: not a memlife audit JSON report (`memlife audit --json FILE` writes one)"
    )]
    Missing(&'static str),
    /// A report whose content does not fit the model (a string where a number goes...).
    #[error("unexpected content: {0}")]
    Content(serde_json::Error),
}

/// The keys every audit report has, whatever its version.
const REQUIRED: [&str; 2] = ["run", "phases"];

impl AuditReport {
    /// Reads a report from its JSON bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ReadError> {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(ReadError::NotJson)?;
        Self::from_value(value)
    }

    /// Reads a report from a JSON value.
    pub fn from_value(value: serde_json::Value) -> Result<Self, ReadError> {
        let obj = value.as_object().ok_or(ReadError::NotAnObject)?;
        if let Some(key) = REQUIRED.into_iter().find(|k| !obj.contains_key(*k)) {
            return Err(ReadError::Missing(key));
        }
        serde_json::from_value(value).map_err(ReadError::Content)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_a_minimal_report_and_ignores_unknown_fields() {
        let r = AuditReport::from_slice(
            br#"{"run": {"elf": "a.elf", "new_field": 1}, "phases": [{"function": "model_load", "alias": "load", "peak_above_before": 10, "lifecycle": {"x": 1}}]}"#,
        )
        .unwrap();
        assert_eq!(r.phases[0].peak_above_before, 10);
        assert_eq!(r.role_of(&r.phases[0]), "load");
        assert!(r.heap_map.is_none());
        assert_eq!(r.run.elf, "a.elf");
    }

    #[test]
    fn refuses_what_is_not_a_report_and_says_why() {
        let e = AuditReport::from_slice(b"[1]").unwrap_err().to_string();
        assert_eq!(e, "not a JSON object");
        let e = AuditReport::from_slice(br#"{"name": "x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `run` field"), "{e}");
        let e = AuditReport::from_slice(b"{").unwrap_err().to_string();
        assert!(e.starts_with("not JSON"), "{e}");
        let e = AuditReport::from_slice(br#"{"run": {}, "phases": [{"call": "one"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("unexpected content"), "{e}");
    }

    #[test]
    fn an_event_must_say_what_it_did() {
        let e = AuditReport::from_slice(br#"{"run": {}, "phases": [], "events": [{"seq": 1}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `kind`"), "{e}");
    }
}
