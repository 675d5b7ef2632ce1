//! The outputs area of the script API: checks (`check`, `warn`, `skip`), heap dumps (`dump`,
//! under the output directory only), the budgets of `memlife.toml` (`budget`) and `kib`. These
//! are free functions: they find their script's run through the engine's tag.
//!
//! ```rhai
//! check("no leak", lost == 0, `lost ${lost} B`);
//! warn("integrity", "this heap keeps no canaries");
//! dump(t.heap(), "after-release.json");
//! let limit = budget("inference_peak", 4096.0);
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use rhai::{Engine, NativeCallContext};

use super::handle::{RhaiResult, err, script_state};
use super::heap::HeapHandle;
use super::sandbox::output_path;
use crate::error::Chain;
use crate::model::{CheckResult, Verdict};

/// Registers the outputs area, with the audit's budgets.
pub(crate) fn register(engine: &mut Engine, budgets: &BTreeMap<String, f64>) {
    engine.register_fn(
        "check",
        |ctx: NativeCallContext, name: &str, ok: bool, message: &str| -> RhaiResult<bool> {
            record(&ctx, name, verdict(ok), message)?;
            Ok(ok)
        },
    );
    engine.register_fn(
        "check",
        |ctx: NativeCallContext, name: &str, ok: bool| -> RhaiResult<bool> {
            record(&ctx, name, verdict(ok), "")?;
            Ok(ok)
        },
    );
    engine.register_fn(
        "skip",
        |ctx: NativeCallContext, name: &str, reason: &str| -> RhaiResult<()> {
            record(&ctx, name, Verdict::Skip, reason)
        },
    );
    engine.register_fn(
        "warn",
        |ctx: NativeCallContext, name: &str, message: &str| -> RhaiResult<()> {
            record(&ctx, name, Verdict::Warn, message)
        },
    );
    engine.register_fn(
        "dump",
        |ctx: NativeCallContext, h: HeapHandle, path: &str| -> RhaiResult<String> {
            let state = script_state(&ctx)?;
            let root = state.0.borrow().out_dir.clone();
            let out = output_path(&root, path).map_err(|e| err(&ctx, e))?;
            let mut value = memlife_heap::render::json(&h.0, None);
            if let Some(tasks) = &h.1 {
                tasks.insert_json(&mut value, "trace");
            }
            let json = serde_json::to_vec_pretty(&value).map_err(|e| err(&ctx, Chain(&e)))?;
            memlife_core::output::write_under(&root, Path::new(path), &json)
                .map_err(|e| err(&ctx, Chain(&e)))?;
            state.0.borrow_mut().dumps.push(out.clone());
            Ok(out.display().to_string())
        },
    );
    engine.register_fn("kib", |n: i64| format!("{:.1} KiB", n as f64 / 1024.0));
    register_budgets(engine, budgets);
}

/// `budget(name)` (an error when unset) and `budget(name, default)`.
fn register_budgets(engine: &mut Engine, budgets: &BTreeMap<String, f64>) {
    let all = budgets.clone();
    engine.register_fn(
        "budget",
        move |ctx: NativeCallContext, name: &str| -> RhaiResult<f64> {
            let name = current_budget(name);
            all.get(name).copied().ok_or_else(|| {
                err(
                    &ctx,
                    format!("budget `{name}` is not set ([budgets] in memlife.toml)"),
                )
            })
        },
    );
    let all = budgets.clone();
    engine.register_fn("budget", move |name: &str, default: f64| -> f64 {
        all.get(current_budget(name)).copied().unwrap_or(default)
    });
}

fn verdict(ok: bool) -> Verdict {
    if ok { Verdict::Pass } else { Verdict::Fail }
}

/// Records a check in the run state of the script this call belongs to.
fn record(ctx: &NativeCallContext, name: &str, verdict: Verdict, message: &str) -> RhaiResult<()> {
    let state = script_state(ctx)?;
    let pos = ctx.call_position();
    state.0.borrow_mut().checks.push(CheckResult {
        name: name.to_string(),
        verdict,
        message: message.to_string(),
        line: pos.line(),
    });
    Ok(())
}

/// The current name of a budget a script asks for, with a warning when it used an old one.
fn current_budget(name: &str) -> &str {
    let current = crate::config::budget_name(name);
    if current != name {
        ::tracing::warn!("budget(\"{name}\") is deprecated: use budget(\"{current}\")");
    }
    current
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::testing::{Rig, one_load};
    use super::*;

    fn outputs(engine: &mut Engine) {
        let budgets = [("cycles".to_string(), 5.0)].into_iter().collect();
        register(engine, &budgets);
    }

    #[test]
    fn checks_are_recorded_with_their_line_and_budgets_read() {
        let mut rig = Rig::new(one_load(), &[super::super::heap::register, outputs]);
        rig.eval::<()>("check(\"a\", true);\nwarn(\"b\", \"careful\");")
            .unwrap();
        let checks = rig.checks();
        assert_eq!(
            (checks[0].verdict, checks[1].verdict, checks[1].line),
            (Verdict::Pass, Verdict::Warn, Some(2))
        );
        assert_eq!(rig.eval::<f64>(r#"budget("cycles")"#).unwrap(), 5.0);
        assert_eq!(rig.eval::<f64>(r#"budget("unset", 2.0)"#).unwrap(), 2.0);
        let e = rig.error(r#"budget("no_such_budget")"#);
        assert!(e.contains("budget `no_such_budget` is not set"), "{e}");
        assert_eq!(rig.eval::<String>("kib(1536)").unwrap(), "1.5 KiB");
    }

    #[test]
    fn a_dump_outside_the_output_directory_is_refused() {
        let mut rig = Rig::new(one_load(), &[super::super::heap::register, outputs]);
        let e = rig.error(r#"dump(t.heap(), "../x.json")"#);
        assert!(
            e.contains("only relative paths under the output directory"),
            "{e}"
        );
        let written: String = rig.eval(r#"dump(t.heap(), "heap.json")"#).unwrap();
        assert!(written.ends_with("heap.json"), "{written}");
        assert!(std::path::Path::new(&written).is_file());
    }
}
