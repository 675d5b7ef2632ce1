//! Running a script: the engine built from the sandbox and every area of the API, the `Target`
//! handle over the debugger, and what the script recorded, with the debugger given back
//! whatever the script did.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use rhai::{Dynamic, Engine, EvalAltResult, Position};

use super::handle::{StateHandle, TargetHandle};
use super::sandbox::{too_large, too_many_operations};
use crate::debugger::Debugger;
use crate::model::CheckResult;

// Where an audit script failed: a report record too, kept in memlife-report.
pub use memlife_report::ScriptError;

/// What a script produced.
#[derive(Debug, Default)]
pub struct ScriptOutcome {
    /// Checks in the order recorded.
    pub checks: Vec<CheckResult>,
    /// Files written by `dump`.
    pub dumps: Vec<PathBuf>,
    /// The error that stopped the script, if any.
    pub error: Option<ScriptError>,
}

/// The sandboxed engine with every area of memlife's API registered.
fn engine(print: Rc<dyn Fn(&str)>, budgets: &BTreeMap<String, f64>) -> Engine {
    let mut engine = super::sandbox::engine(print);
    engine.register_type_with_name::<TargetHandle>("Target");
    super::heap::register(&mut engine);
    super::cycles::register(&mut engine);
    super::trace::register(&mut engine);
    super::spans::register(&mut engine);
    super::errors::register(&mut engine);
    super::target::register(&mut engine);
    super::tasks::register(&mut engine);
    super::outputs::register(&mut engine, budgets);
    super::arena::register(&mut engine);
    engine
}

fn position(pos: Position) -> (Option<usize>, Option<usize>) {
    (pos.line(), pos.position())
}

/// Runs a script against a debugger. The debugger comes back (for the report and cleanup) with
/// whatever the script recorded, also when it failed. It is `None` only if it could not be taken
/// back from the script's handles, which nothing a script can do brings about (the handles
/// share one slot that only this function empties); callers treat that as an internal error
/// instead of panicking.
pub fn run_script(
    debugger: Debugger,
    source: &str,
    out_dir: &Path,
    budgets: &BTreeMap<String, f64>,
    print: Rc<dyn Fn(&str)>,
) -> (Option<Debugger>, ScriptOutcome) {
    let dbg = Rc::new(RefCell::new(Some(debugger)));
    let state = StateHandle::new(out_dir.to_path_buf());
    if let Some(max) = budgets.get("max_cycles") {
        // A budget is a number; below 1 nothing could run, so it is taken as 1.
        state.0.borrow_mut().max_runs = (*max).max(1.0) as u64;
    }
    let mut engine = engine(print, budgets);
    engine.set_default_tag(Dynamic::from(state.clone()));
    let handle = TargetHandle {
        dbg: dbg.clone(),
        state: state.clone(),
    };
    engine.register_fn("target", move || handle.clone());
    let error = match engine.compile(source) {
        Err(e) => {
            let (line, column) = position(e.1);
            Some(ScriptError {
                message: e.0.to_string(),
                line,
                column,
            })
        }
        Ok(ast) => match plan_trace(&dbg, &ast).and_then(|()| engine.run_ast(&ast)) {
            Ok(()) => None,
            Err(e) => {
                let (line, column) = position(e.position());
                let message = match *e {
                    EvalAltResult::ErrorRuntime(ref v, _)
                    | EvalAltResult::ErrorTerminated(ref v, _) => v.to_string(),
                    // A value past the sandbox's size limits: say which limit, and the usual
                    // cause in an audit (every cycle held at once).
                    EvalAltResult::ErrorDataTooLarge(ref what, _) => too_large(what),
                    // The script's own loop, never ending: say which limit ended it.
                    EvalAltResult::ErrorTooManyOperations(_) => too_many_operations(),
                    ref other => other.to_string(),
                };
                // Rhai appends the position to some messages; ours carries it separately.
                let message = message
                    .split(" (line ")
                    .next()
                    .unwrap_or(&message)
                    .to_string();
                Some(ScriptError {
                    message,
                    line,
                    column,
                })
            }
        },
    };
    drop(engine);
    let outcome = {
        let mut s = state.0.borrow_mut();
        // Hooks may hold Target handles (closures capturing `t`): drop them with the engine.
        s.hooks.clear();
        ScriptOutcome {
            checks: std::mem::take(&mut s.checks),
            dumps: std::mem::take(&mut s.dumps),
            error,
        }
    };
    // Handles the script kept alive (a reference cycle) see an empty slot from now on.
    let mut debugger = dbg.borrow_mut().take();
    if let Some(d) = debugger.as_mut() {
        d.end_firmware_time();
    }
    (debugger, outcome)
}

/// What the script reads decides what the trace records ([`Debugger::plan_trace`]); an error
/// there (the allocator's entries gone from the ELF) is the script's first.
fn plan_trace(
    dbg: &Rc<RefCell<Option<Debugger>>>,
    ast: &rhai::AST,
) -> Result<(), Box<EvalAltResult>> {
    let reads = super::ScriptReads::of(ast);
    match dbg.borrow_mut().as_mut() {
        Some(d) => d.plan_trace(&reads).map_err(|e| {
            Box::new(EvalAltResult::ErrorRuntime(
                crate::error::Chain(&e).to_string().into(),
                Position::NONE,
            ))
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::testing::one_load;
    use super::*;
    use crate::model::Verdict;

    /// Runs `source` against a fake target whose firmware calls `model_load` once.
    fn run_with(
        source: &str,
        budgets: &BTreeMap<String, f64>,
    ) -> (Option<Debugger>, ScriptOutcome, String) {
        let (dbg, _) = crate::debugger::tests::fake::debugger(
            one_load(),
            crate::debugger::tests::fake::FREERTOS_LIKE,
            crate::config::PeakMethod::Trace,
        );
        let printed = Rc::new(RefCell::new(String::new()));
        let sink = Rc::clone(&printed);
        let print: Rc<dyn Fn(&str)> = Rc::new(move |s: &str| sink.borrow_mut().push_str(s));
        let out = std::env::temp_dir().join(format!("memlife-script-{}", std::process::id()));
        let (dbg, outcome) = run_script(dbg, source, &out, budgets, print);
        let printed = printed.borrow().clone();
        (dbg, outcome, printed)
    }

    fn run(source: &str) -> (Option<Debugger>, ScriptOutcome, String) {
        run_with(source, &BTreeMap::new())
    }

    #[test]
    fn a_reference_cycle_holding_the_target_does_not_keep_the_debugger() {
        // The script of the hardening issue: `m` holds the target and a closure capturing `m`.
        let (dbg, outcome, _) = run(r#"
            let t = target();
            let m = #{t: t};
            let f = || m;
            m.f = f;
            let load = t.phase("load");
            check("load", load.delta == 32, "grew by 32");
        "#);
        assert_eq!(outcome.error, None);
        let dbg = dbg.unwrap();
        assert_eq!(dbg.records().len(), 1);
        assert_eq!(outcome.checks.len(), 1);
        assert_eq!(outcome.checks[0].verdict, Verdict::Pass);
    }

    #[test]
    fn a_value_past_the_size_limits_names_the_limit_and_what_to_do() {
        let (_, outcome, _) = run(r#"
            let a = [];
            a.pad(100000, 0);
        "#);
        let e = outcome.error.expect("the array is too large");
        assert!(
            e.message.contains("larger than a script may hold") && e.message.contains("t.cycle()"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_hook_kept_in_a_cycle_and_a_failing_script_still_give_the_debugger_back() {
        let (dbg, outcome, printed) = run(r#"
            let t = target();
            let keep = [];
            t.on_break("pvPortMalloc", |t| { keep.push(t); print("malloc"); });
            keep.push(keep);
            t.phase("load");
            throw "stop here";
        "#);
        assert_eq!(printed, "malloc");
        assert!(outcome.error.unwrap().message.contains("stop here"));
        assert_eq!(dbg.unwrap().records().len(), 1);
    }

    #[test]
    fn a_loop_over_the_target_ends_at_max_cycles_and_a_scripts_own_at_the_operations_limit() {
        let budgets = [("max_cycles".to_string(), 3.0)].into_iter().collect();
        // Each run after the firmware's one load times out; the loop goes on until the limit.
        let (_, outcome, _) = run_with(
            r#"let t = target(); let n = 0;
               loop { try { n += 1; t.run_to("model_load"); }
                      catch (e) { if e.contains("max_cycles") { throw `${n}: ${e}`; } } }"#,
            &budgets,
        );
        let e = outcome.error.unwrap().message;
        assert!(
            e.starts_with("4: ") && e.contains("more than 3 runs of the target"),
            "{e}"
        );
        let (_, outcome, _) = run("loop { }");
        let e = outcome.error.unwrap().message;
        assert!(e.contains("operations, the limit for a script"), "{e}");
    }

    #[test]
    fn a_deprecated_budget_name_reads_the_current_one() {
        let budgets = [("cycles".to_string(), 5.0)].into_iter().collect();
        let (_, outcome, _) = run_with(
            r#"check("old", budget("iterations", 1.0) == 5.0 && budget("lifecycles") == 5.0);"#,
            &budgets,
        );
        assert_eq!(outcome.error, None);
        assert_eq!(outcome.checks[0].verdict, Verdict::Pass);
    }

    #[test]
    fn free_functions_find_their_run_through_the_engine_tag() {
        let (_, outcome, _) = run(r#"
            check("a", true, "");
            warn("b", "careful");
            check("c", false);
            skip("d", "no [phases] switch in memlife.toml");
        "#);
        let got: Vec<(&str, Verdict)> = outcome
            .checks
            .iter()
            .map(|c| (c.name.as_str(), c.verdict))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", Verdict::Pass),
                ("b", Verdict::Warn),
                ("c", Verdict::Fail),
                ("d", Verdict::Skip)
            ]
        );
        assert_eq!(outcome.checks[2].line, Some(4));
    }
}
