//! `[trace] scope` as memlife.toml writes it: `"everywhere"`, `"phases"`, or a list of phases
//! (roles or functions), read into the engine's [`TraceScope`]. The names of a list are checked
//! against the firmware with the file's other names ([`crate::names`]).

use memlife_audit::config::TraceScope;
use serde::Deserializer;
use serde::de::{self, SeqAccess, Visitor};

/// Reads `scope` (absent: everywhere).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<TraceScope, D::Error> {
    d.deserialize_any(ScopeVisitor)
}

/// `"everywhere"`, `"phases"` or a non-empty list of names.
struct ScopeVisitor;

impl<'de> Visitor<'de> for ScopeVisitor {
    type Value = TraceScope;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "\"everywhere\", \"phases\" or a list of phases (roles or functions), e.g. [\"run\"]",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<TraceScope, E> {
        match v {
            "everywhere" => Ok(TraceScope::Everywhere),
            "phases" => Ok(TraceScope::Phases),
            other => Err(E::custom(format!(
                "scope = \"{other}\": \"everywhere\", \"phases\", or a list of phases such as [\"{other}\"]"
            ))),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TraceScope, A::Error> {
        let mut names = Vec::new();
        while let Some(name) = seq.next_element::<String>()? {
            let name = name.trim().to_string();
            if name.is_empty() {
                return Err(de::Error::custom("scope: an empty phase name"));
            }
            names.push(name);
        }
        if names.is_empty() {
            return Err(de::Error::custom(
                "scope = []: name at least one phase, or say \"phases\" or \"everywhere\"",
            ));
        }
        Ok(TraceScope::Only(names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct T {
        #[serde(deserialize_with = "deserialize")]
        scope: TraceScope,
    }

    fn parse(text: &str) -> Result<TraceScope, String> {
        toml::from_str::<T>(text)
            .map(|t| t.scope)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_scope_is_a_word_or_a_list_of_phases() {
        assert_eq!(parse("scope = \"phases\""), Ok(TraceScope::Phases));
        assert_eq!(parse("scope = \"everywhere\""), Ok(TraceScope::Everywhere));
        assert_eq!(
            parse("scope = [\"run\", \"model_load\"]"),
            Ok(TraceScope::Only(vec!["run".into(), "model_load".into()]))
        );
        for bad in [
            "scope = \"run\"",
            "scope = []",
            "scope = 3",
            "scope = [\" \"]",
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(e.contains("scope") || e.contains("phases"), "{bad}: {e}");
        }
        assert!(parse("scope = \"run\"").is_err_and(|e| e.contains("[\"run\"]")));
    }
}
