//! `[phases]` roles given as tables that limit them to some of their function's calls: those a
//! task makes, or those made from a caller function.
//!
//! ```toml
//! [phases]
//! load = "model_load"                                        # every call
//! run = { function = "inference_run", task = "Infer" }      # the calls task Infer makes
//! release = { function = "model_release", caller = "infer_cycle" }
//! ```

use std::collections::BTreeMap;

use memlife_audit::config::{Scope, nearest};
use serde::{Deserialize, Deserializer};

/// One `[phases]` value as serde reads it (the checks and messages are [`scopes`]'s).
#[derive(Deserialize)]
#[serde(untagged)]
enum Entry {
    Function(String),
    Scoped { function: String },
}

/// `[phases]` as role → function, whichever form each role takes.
pub(crate) fn functions<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let entries = BTreeMap::<String, Entry>::deserialize(d)?;
    Ok(entries
        .into_iter()
        .map(|(role, e)| match e {
            Entry::Function(f) | Entry::Scoped { function: f } => (role, f),
        })
        .collect())
}

/// The keys a role's table may have.
const KEYS: [&str; 3] = ["function", "task", "caller"];

/// The scopes `[phases]` gives, checked: a role's table has `function` and may have `task` and
/// `caller`, each a non-empty string. The error names the role and what is wrong.
pub(crate) fn scopes(file: &toml::Table) -> Result<BTreeMap<String, Scope>, String> {
    let mut out = BTreeMap::new();
    let Some(phases) = file.get("phases").and_then(toml::Value::as_table) else {
        return Ok(out);
    };
    for (role, value) in phases {
        let table = match value {
            toml::Value::String(_) => continue,
            toml::Value::Table(t) => t,
            other => {
                return Err(format!(
                    "[phases] {role}: a function name or a table {{ function = \"...\", task = \"...\" }}, not a {}",
                    other.type_str()
                ));
            }
        };
        if let Some(k) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!(
                "[phases] {role}: unknown key `{k}`{}",
                nearest(k, KEYS.iter().copied())
            ));
        }
        let text = |key: &str| -> Result<Option<String>, String> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(_) => Err(format!(
                    "[phases] {role}: `{key}` must be a non-empty string"
                )),
            }
        };
        if text("function")?.is_none() {
            return Err(format!(
                "[phases] {role}: the table needs `function`, the role's function"
            ));
        }
        let scope = Scope {
            task: text("task")?,
            caller: text("caller")?,
        };
        if scope != Scope::default() {
            out.insert(role.clone(), scope);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<String, Scope>, String> {
        scopes(&toml::from_str(text).unwrap())
    }

    #[test]
    fn a_role_is_a_function_or_a_table_limiting_it_to_a_task_or_a_caller() {
        let s = parse(
            "[phases]\nload = \"model_load\"\nrun = { function = \"inference_run\", task = \"Infer\" }\nrelease = { function = \"model_release\", caller = \"infer_cycle\" }\nswitch = { function = \"model_switch\" }",
        )
        .unwrap();
        assert_eq!(
            s.len(),
            2,
            "a plain function and a table without a scope have none"
        );
        assert_eq!(s["run"].describe(), "task Infer");
        assert_eq!(s["release"].describe(), "caller infer_cycle");
        #[derive(serde::Deserialize)]
        struct Phases {
            #[serde(deserialize_with = "functions")]
            phases: BTreeMap<String, String>,
        }
        let p: Phases = toml::from_str(
            "[phases]\nload = \"model_load\"\nrun = { function = \"inference_run\", task = \"Infer\" }",
        )
        .unwrap();
        assert_eq!(p.phases["run"], "inference_run");
        assert_eq!(p.phases["load"], "model_load");
    }

    #[test]
    fn a_wrong_table_is_named_with_its_role() {
        for (text, want) in [
            (
                "run = { function = \"f\", tsak = \"Infer\" }",
                "[phases] run: unknown key `tsak`; did you mean `task`?",
            ),
            (
                "run = { task = \"Infer\" }",
                "[phases] run: the table needs `function`",
            ),
            (
                "run = { function = \"f\", task = \"\" }",
                "[phases] run: `task` must be a non-empty string",
            ),
            (
                "run = { function = \"f\", caller = 3 }",
                "[phases] run: `caller` must be a non-empty string",
            ),
            ("run = 3", "[phases] run: a function name or a table"),
        ] {
            let e = parse(&format!("[phases]\n{text}")).unwrap_err();
            assert!(e.starts_with(want), "{text}: {e}");
        }
    }
}
