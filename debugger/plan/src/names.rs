//! The names the settings give, checked against the firmware before it runs: every function of
//! `[phases]`, `[spans]`, `[labels]`, `[components]` and `[trace] scope` must be in the ELF (by
//! linkage or C++ name) or be a role, every global of `[tensors]` and `[labels]` too, and every
//! role a role. The error ([`NameError`], in `crate::error`) names the first wrong one, where it was given, and the
//! nearest valid name.
//!
//! Only what the user wrote is checked: the bundled firmware's defaults
//! ([`crate::defaults`]) fill in what the user does not say, and a firmware without those
//! functions simply has no such phase.

use memlife_audit::composition::is_site_key;
use memlife_audit::config::{AuditConfig, ROLES, nearest};
use memlife_audit::observers::ModelKey;
use memlife_dwarf::{SymbolKind, Symbols};

pub use crate::error::{NameCheckError, NameError};

/// Checks `config`'s names against `symbols`; the error is the first wrong name with where it
/// was given.
pub fn check_against(config: &AuditConfig, symbols: &Symbols) -> Result<(), NameCheckError> {
    let functions = symbols
        .elf_symbols()
        .iter()
        .filter(|s| s.kind == SymbolKind::Function)
        .map(|s| s.name.as_str())
        .chain(symbols.demangled_functions())
        .collect::<Vec<_>>();
    check_functions(config, &functions, &|n| symbols.function(n).is_some())
        .map_err(NameCheckError::Function)?;
    check_globals(config, &|n| symbols.variable(n, &[]).is_some()).map_err(NameCheckError::Global)
}

/// Every `[phases]` and `[spans]` function must be `known` (the ELF has it), a `[spans]` or
/// `[labels]` key a role or a function; `functions` are the names suggested instead.
pub(crate) fn check_functions(
    config: &AuditConfig,
    functions: &[&str],
    known: &dyn Fn(&str) -> bool,
) -> Result<(), NameError> {
    let near = |name: &str| nearest(name, functions.iter().copied());
    for (role, function) in &config.phases {
        if !known(function) {
            return Err(NameError::NoFunction {
                place: format!("[phases] {role}"),
                name: function.clone(),
                hint: near(function),
            });
        }
    }
    check_scopes_and_halts(config, functions, known)?;
    let mut roles: Vec<&str> = ROLES.to_vec();
    roles.extend(config.phases.keys().map(String::as_str));
    let near_role_or_function =
        |name: &str| nearest(name, functions.iter().chain(roles.iter()).copied());
    for (key, function) in &config.spans {
        if !roles.contains(&key.as_str()) && !known(key) {
            return Err(NameError::NeitherRoleNorFunction {
                place: "[spans]",
                name: key.clone(),
                hint: near_role_or_function(key),
            });
        }
        if !known(function) {
            return Err(NameError::NoFunction {
                place: format!("[spans] {key}"),
                name: function.clone(),
                hint: near(function),
            });
        }
    }
    check_labels(config, &roles, functions, known)?;
    for (key, name) in &config.components {
        if !is_site_key(key) && !known(key) {
            return Err(NameError::UnknownComponentKey {
                name: key.clone(),
                hint: near(key),
            });
        }
        if name.trim().is_empty() {
            return Err(NameError::EmptyComponent { key: key.clone() });
        }
    }
    for name in config.trace.scope.names() {
        if !roles.contains(&name.as_str()) && !known(name) {
            return Err(NameError::NeitherRoleNorFunction {
                place: "[trace] scope:",
                name: name.clone(),
                hint: near_role_or_function(name),
            });
        }
    }
    check_lifecycle_roles(config, &roles)
}

/// `[lifecycle]`'s `cycle_starts` and `model` name roles of the configuration.
fn check_lifecycle_roles(config: &AuditConfig, roles: &[&str]) -> Result<(), NameError> {
    let not_a_role = |setting: &'static str, name: &str| NameError::NotARole {
        setting,
        name: name.to_owned(),
        hint: nearest(name, roles.iter().copied()),
    };
    if let Some(start) = &config.lifecycle.cycle_starts
        && !roles.contains(&start.as_str())
    {
        return Err(not_a_role("cycle_starts", start));
    }
    if let ModelKey::Arg { role, .. } = &config.lifecycle.model
        && !roles.contains(&role.as_str())
    {
        return Err(not_a_role("model", role));
    }
    Ok(())
}

/// A scoped role's caller and every `[target] halt_on` function must be `known`, and every
/// scope a role's.
fn check_scopes_and_halts(
    config: &AuditConfig,
    functions: &[&str],
    known: &dyn Fn(&str) -> bool,
) -> Result<(), NameError> {
    for (role, scope) in &config.scopes {
        if !config.phases.contains_key(role) {
            return Err(NameError::ScopeWithoutFunction { role: role.clone() });
        }
        if let Some(caller) = &scope.caller
            && !known(caller)
        {
            return Err(NameError::NoCaller {
                role: role.clone(),
                name: caller.clone(),
                hint: nearest(caller, functions.iter().copied()),
            });
        }
    }
    for function in &config.halt_on {
        if !known(function) {
            return Err(NameError::NoFunction {
                place: "[target] halt_on".into(),
                name: function.clone(),
                hint: nearest(function, functions.iter().copied()),
            });
        }
    }
    Ok(())
}

/// `[labels]`: keys are roles or functions, `string` and `names` exclude each other, and the
/// argument is one of the four memlife reads.
fn check_labels(
    config: &AuditConfig,
    roles: &[&str],
    functions: &[&str],
    known: &dyn Fn(&str) -> bool,
) -> Result<(), NameError> {
    for (key, l) in &config.labels {
        if !roles.contains(&key.as_str()) && !known(key) {
            return Err(NameError::UnknownLabelKey {
                name: key.clone(),
                hint: nearest(key, functions.iter().chain(roles.iter()).copied()),
            });
        }
        if l.string && l.names.is_some() {
            return Err(NameError::LabelStringAndNames { key: key.clone() });
        }
        if l.arg > 3 {
            return Err(NameError::LabelArgument {
                key: key.clone(),
                arg: l.arg,
            });
        }
    }
    Ok(())
}

/// The globals `[tensors]` and `[labels]` name exist (`known`); the error names the first that
/// does not.
pub(crate) fn check_globals(
    config: &AuditConfig,
    known: &dyn Fn(&str) -> bool,
) -> Result<(), NameError> {
    if let Some(t) = &config.tensors {
        for name in std::iter::once(&t.table).chain(t.count.as_ref()) {
            if !known(name) {
                return Err(NameError::NoGlobal {
                    place: "[tensors]".into(),
                    name: name.clone(),
                });
            }
        }
    }
    for (key, l) in &config.labels {
        if let Some(names) = &l.names
            && !known(names)
        {
            return Err(NameError::NoGlobal {
                place: format!("[labels.{key}] names"),
                name: names.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::file::ConfigFile;

    const FUNCS: [&str; 3] = ["nn_open", "nn_invoke", "layer_forward"];

    fn cfg(text: &str) -> AuditConfig {
        toml::from_str::<ConfigFile>(text).unwrap().audit_config()
    }

    fn functions(text: &str) -> Result<(), String> {
        check_functions(&cfg(text), &FUNCS, &|n| FUNCS.contains(&n)).map_err(|e| e.to_string())
    }

    #[test]
    fn unknown_roles_and_functions_name_the_nearest_valid_one() {
        assert_eq!(
            functions("[components]\nnn_opne = \"weights\"\n\"loader.c:12\" = \"file\"")
                .unwrap_err(),
            "[components] `nn_opne` is neither a function in the ELF nor a `file:line` site; did you mean `nn_open`?"
        );
        assert_eq!(
            functions("[components]\nnn_open = \"weights\"\n\"loader.c:12\" = \"file\""),
            Ok(())
        );
        assert_eq!(
            functions("[phases]\nload = \"nn_opne\"").unwrap_err(),
            "[phases] load: no function `nn_opne` in the ELF; did you mean `nn_open`?"
        );
        let e = functions("[phases]\nrun = \"nn_invoke\"\n[spans]\nrnu = \"layer_forward\"")
            .unwrap_err();
        assert!(e.starts_with("[spans] `rnu` is neither a role"), "{e}");
        assert!(e.ends_with("did you mean `run`?"), "{e}");
        assert_eq!(
            functions("[phases]\nrun = \"nn_invoke\"\n[spans]\nrun = \"layer_forward\""),
            Ok(())
        );
    }

    #[test]
    fn a_trace_scope_names_roles_or_functions_of_the_elf() {
        assert_eq!(
            functions("[trace]\nscope = [\"run\", \"nn_open\"]\nrequests = false"),
            Ok(())
        );
        assert_eq!(
            functions("[trace]\nscope = [\"nn_invok\"]").unwrap_err(),
            "[trace] scope: `nn_invok` is neither a role (load, build, run, switch, release or one in [phases]) nor a function in the ELF; did you mean `nn_invoke`?"
        );
        let c = cfg("[trace]\nallocations = true\nrequests = false\nscope = \"phases\"");
        assert_eq!(
            (
                c.trace.allocations,
                c.trace.requests,
                c.trace.scope.to_string()
            ),
            (Some(true), Some(false), "phases".to_string())
        );
        let absent = cfg("");
        assert_eq!(
            (
                absent.trace.allocations,
                absent.trace.requests,
                absent.trace.scope.to_string()
            ),
            (None, None, "everywhere".to_string())
        );
    }

    #[test]
    fn lifecycle_labels_and_tensors_are_checked_against_roles_and_the_elf() {
        let base =
            "[phases]\nload = \"nn_open\"\nrun = \"nn_invoke\"\n[spans]\nrun = \"layer_forward\"\n";
        let e = functions(&format!("{base}[lifecycle]\ncycle_starts = \"lod\"")).unwrap_err();
        assert!(e.contains("cycle_starts: `lod` is not a role"), "{e}");
        assert!(e.ends_with("did you mean `load`?"), "{e}");
        // [lifecycle] model: a role's argument, the role one of the configuration's.
        let e = functions(&format!("{base}[lifecycle]\nmodel = \"laod:1\"")).unwrap_err();
        assert!(
            e.contains("model: `laod` is not a role") && e.ends_with("did you mean `load`?"),
            "{e}"
        );
        let e = toml::from_str::<ConfigFile>(&format!("{base}[lifecycle]\nmodel = \"load:7\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 to 3"), "{e}");
        for ok in ["auto", "none", "load", "run:2"] {
            assert_eq!(
                functions(&format!("{base}[lifecycle]\nmodel = \"{ok}\"")),
                Ok(()),
                "{ok}"
            );
        }
        assert_eq!(
            cfg(&format!("{base}[lifecycle]\nmodel = \"run:2\""))
                .lifecycle
                .model,
            ModelKey::Arg {
                role: "run".into(),
                arg: 2
            }
        );
        assert_eq!(cfg(base).lifecycle.model, ModelKey::Auto);
        let ok = format!(
            "{base}[lifecycle]\ncycle_starts = \"run\"\n[labels.run]\narg = 0\nnames = \"layer_names\"\n[labels.layer_forward]\nstring = true"
        );
        assert_eq!(functions(&ok), Ok(()));
        assert!(
            check_globals(&cfg(&ok), &|n| n != "layer_names")
                .unwrap_err()
                .to_string()
                .contains("[labels.run] names: no global `layer_names`")
        );
        let e = functions(&format!("{base}[labels.rnu]\narg = 0")).unwrap_err();
        assert!(e.starts_with("[labels] `rnu` is neither a role"), "{e}");
        let e =
            functions(&format!("{base}[labels.run]\nstring = true\nnames = \"x\"")).unwrap_err();
        assert!(e.contains("exclude each other"), "{e}");
        let e = functions(&format!("{base}[labels.run]\narg = 4")).unwrap_err();
        assert!(e.contains("first four arguments"), "{e}");
        assert_eq!(
            check_globals(
                &cfg("[tensors]\ntable = \"g_plan\"\ncount = \"g_n\""),
                &|n| n == "g_plan"
            )
            .unwrap_err()
            .to_string(),
            "[tensors]: no global `g_n` in the ELF"
        );
    }

    #[test]
    fn a_scoped_roles_caller_and_halt_on_are_functions_of_the_elf() {
        use memlife_audit::config::Scope;
        let by_caller = |caller: &str| {
            cfg("[target]\nhalt_on = [\"nn_open\"]").with_scoped_role(
                "run",
                "nn_invoke",
                Scope {
                    task: Some("Infer".into()),
                    caller: Some(caller.into()),
                },
            )
        };
        let check = |c: &AuditConfig| {
            check_functions(c, &FUNCS, &|n| FUNCS.contains(&n)).map_err(|e| e.to_string())
        };
        assert_eq!(check(&by_caller("nn_open")), Ok(()));
        assert_eq!(
            check(&by_caller("nn_opne")).unwrap_err(),
            "[phases] run: caller `nn_opne` is not a function in the ELF; did you mean `nn_open`?"
        );
        assert_eq!(
            functions("[target]\nhalt_on = [\"nn_invok\"]").unwrap_err(),
            "[target] halt_on: no function `nn_invok` in the ELF; did you mean `nn_invoke`?"
        );
    }
}
