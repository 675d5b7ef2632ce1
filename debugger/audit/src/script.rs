//! The Rhai API: what an audit script can do, and the sandbox it runs in.
//!
//! ```rhai
//! let t = target();                        // connected, halted
//! let base = t.heap();                     // free, used, largest_free, ratio, blocks, ...
//! let load = t.phase("load");              // one call of model_load: before, after, peak, spans
//! check("load-peak", load.peak_above < 0.6 * base.size, `load peak ${load.peak_above} B`);
//! t.on_break("model_release", |t| dump(t.heap(), "release.json"));
//! let tensors = t.var("g_tensors");        // typed read through DWARF
//! ```
//!
//! Sandbox: operation, call-depth, expression-depth and size limits; no `eval`; no modules from
//! disk; files are written only under the output directory, atomically.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use rhai::{Array, Dynamic, Engine, EvalAltResult, FnPtr, Map, NativeCallContext, Position};

use crate::debugger::{Debugger, Goal, Outcome};
use crate::error::{AuditError, Chain};
use crate::model::{CheckResult, Verdict};
use crate::values::{HeapHandle, int, phase_map};

// Where an audit script failed: a report record too, kept in memlife-report.
pub use memlife_report::ScriptError;

type RhaiResult<T> = Result<T, Box<EvalAltResult>>;

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

struct RunState {
    checks: Vec<CheckResult>,
    dumps: Vec<PathBuf>,
    hooks: HashMap<String, FnPtr>,
    in_hook: bool,
    out_dir: PathBuf,
    /// Whether the script was told once that `t.phase` is deprecated.
    warned_phase: bool,
}

/// The `Target` object of scripts. The debugger is held in an `Option` that [`run_script`]
/// empties at the end: a handle a script managed to keep (in a reference cycle, say) then only
/// fails, and the debugger goes back to the caller whatever the script did.
#[derive(Clone)]
pub struct TargetHandle {
    dbg: Rc<RefCell<Option<Debugger>>>,
    state: StateHandle,
}

/// The run state of one script, shared by its `Target` handles and, through the engine's tag,
/// by the free functions (`check`, `warn`, `dump`) that have no `Target` argument.
#[derive(Clone)]
struct StateHandle(Rc<RefCell<RunState>>);

fn err(ctx: &NativeCallContext, e: impl std::fmt::Display) -> Box<EvalAltResult> {
    Box::new(EvalAltResult::ErrorRuntime(
        e.to_string().into(),
        ctx.call_position(),
    ))
}

impl TargetHandle {
    /// Runs `f` on the debugger; an error, never a panic, when the audit is over (a handle kept
    /// past the script's end) or the debugger is already in use.
    fn with<T>(
        &self,
        ctx: &NativeCallContext,
        f: impl FnOnce(&mut Debugger) -> T,
    ) -> RhaiResult<T> {
        let mut slot = self
            .dbg
            .try_borrow_mut()
            .map_err(|_| err(ctx, "the target is in use"))?;
        let d = slot
            .as_mut()
            .ok_or_else(|| err(ctx, "the audit is over: this Target can no longer be used"))?;
        Ok(f(d))
    }

    fn no_run_control_in_hooks(&self, ctx: &NativeCallContext) -> RhaiResult<()> {
        if self.state.0.borrow().in_hook {
            return Err(err(
                ctx,
                "run control (phase, run_to, reset) is not allowed inside on_break",
            ));
        }
        Ok(())
    }

    /// Runs `step` until it completes, calling script hooks whenever one fires.
    fn drive(
        &self,
        ctx: &NativeCallContext,
        mut step: impl FnMut(&mut Debugger) -> Result<Option<Outcome>, AuditError>,
    ) -> RhaiResult<()> {
        loop {
            let r = self.with(ctx, &mut step)?;
            match r.map_err(|e| err(ctx, Chain(&e)))? {
                None | Some(Outcome::Reached) => return Ok(()),
                Some(Outcome::Hook(symbol)) => {
                    let hook = self.state.0.borrow().hooks.get(&symbol).cloned();
                    if let Some(f) = hook {
                        self.state.0.borrow_mut().in_hook = true;
                        let result = f.call_within_context::<Dynamic>(ctx, (self.clone(),));
                        self.state.0.borrow_mut().in_hook = false;
                        let _ = result?;
                    }
                }
            }
        }
    }
}

/// A path under the output directory; anything that could escape it is refused.
fn output_path(out_dir: &Path, rel: &str) -> Result<PathBuf, String> {
    let p = Path::new(rel);
    if rel.is_empty()
        || p.is_absolute()
        || p.components().any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(format!(
            "`{rel}`: scripts write only relative paths under the output directory"
        ));
    }
    Ok(out_dir.join(p))
}

/// Longest string a script may build (bytes).
pub const MAX_STRING: usize = 1 << 20;
/// Most elements of one array. Rhai re-measures an array after each change, so filling one
/// costs the square of its length: this bound keeps the worst case at a second or two.
pub const MAX_ARRAY: usize = 1 << 16;
/// Most entries of one object map.
pub const MAX_MAP: usize = 1 << 16;
/// Most memory a script may add to memlife's (resident bytes, checked as the script runs).
pub const MAX_MEMORY: u64 = 512 << 20;
/// Operations between two looks at the memory.
const MEMORY_CHECK_EVERY: u64 = 4096;

/// memlife's resident memory in bytes (Linux `/proc/self/statm`); `None` elsewhere.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages.saturating_mul(4096))
}

/// Builds the sandboxed engine with memlife's API.
fn engine(print: Rc<dyn Fn(&str)>) -> Engine {
    let mut engine = Engine::new();
    engine
        .set_max_operations(50_000_000)
        .set_max_call_levels(32)
        .set_max_expr_depths(64, 32)
        .set_max_string_size(MAX_STRING)
        .set_max_array_size(MAX_ARRAY)
        .set_max_map_size(MAX_MAP)
        .set_module_resolver(rhai::module_resolvers::DummyModuleResolver::new());
    engine.disable_symbol("eval");
    // Ctrl-C also ends a script busy with its own loops, not only one waiting on the target.
    // The whole script's memory: Rhai bounds each value, not their sum (60,000 map entries of
    // 512 KB each are each within bounds), so the process's resident memory is looked at every
    // few thousand operations.
    let baseline = resident_bytes().unwrap_or(0);
    engine.on_progress(move |ops| {
        if memlife_core::interrupt::requested() {
            return Some(Dynamic::from("interrupted by the user"));
        }
        if ops % MEMORY_CHECK_EVERY == 0
            && resident_bytes().is_some_and(|now| now.saturating_sub(baseline) > MAX_MEMORY)
        {
            return Some(Dynamic::from(format!(
                "the script uses more than {} MiB of memory (the limit for a script)",
                MAX_MEMORY >> 20
            )));
        }
        None
    });
    // `var` is reserved in Rhai, but `t.var("g_tensors")` is the name gdb users expect for a typed
    // read: let the tokenizer hand it over as an identifier (a `var x = ...` still fails to parse).
    #[allow(deprecated)] // Rhai marks the token-mapper API volatile, not deprecated
    engine.on_parse_token(|token, _, _| match token {
        rhai::Token::Reserved(s) if s.as_str() == "var" => rhai::Token::Identifier(s),
        other => other,
    });
    let p = print.clone();
    engine.on_print(move |s| p(s));
    engine.on_debug(move |s, _, pos| print(&format!("[debug {pos}] {s}")));

    engine.register_type_with_name::<TargetHandle>("Target");
    crate::values::register_heap(&mut engine);

    // Target control.
    engine.register_fn(
        "heap",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<HeapHandle> {
            let state = t.with(&ctx, Debugger::walk)?;
            Ok(HeapHandle(Rc::new(
                state.map_err(|e| err(&ctx, Chain(&e)))?,
            )))
        },
    );
    // `t.heap_caps_free_size(caps)` and friends: a walk, then the ESP-IDF figure.
    for (name, f) in crate::values::HEAP_CAPS {
        fn on_target(
            ctx: &NativeCallContext,
            t: &mut TargetHandle,
            f: crate::values::CapsFn,
            caps: Result<u32, String>,
        ) -> RhaiResult<Dynamic> {
            let state = t
                .with(ctx, Debugger::walk)?
                .map_err(|e| err(ctx, Chain(&e)))?;
            crate::values::heap_caps(ctx, &state, f, caps)
        }
        engine.register_fn(
            name,
            move |ctx: NativeCallContext, t: &mut TargetHandle, caps: &str| {
                use crate::values::CapsArg;
                on_target(&ctx, t, f, caps.parse_caps_arg())
            },
        );
        engine.register_fn(
            name,
            move |ctx: NativeCallContext, t: &mut TargetHandle, caps: i64| {
                use crate::values::CapsArg;
                on_target(&ctx, t, f, caps.parse_caps_arg())
            },
        );
    }
    engine.register_fn(
        "phase",
        |ctx: NativeCallContext, t: &mut TargetHandle, name: &str| -> RhaiResult<Map> {
            t.no_run_control_in_hooks(&ctx)?;
            if !std::mem::replace(&mut t.state.0.borrow_mut().warned_phase, true) {
                ::tracing::warn!(
                    "t.phase(\"{name}\") is deprecated: observe the lifecycle with t.cycles(n), which records every call of every role in the firmware's order (t.phase still works)"
                );
            }
            let mut run = t
                .with(&ctx, |d| d.phase_begin(name))?
                .map_err(|e| err(&ctx, Chain(&e)))?;
            t.drive(&ctx, |d| d.phase_step(&mut run))?;
            let (rec, before, after) = t
                .with(&ctx, Debugger::phase_finish)?
                .map_err(|e| err(&ctx, Chain(&e)))?;
            Ok(phase_map(&rec, before, after))
        },
    );
    fn one_cycle(ctx: &NativeCallContext, t: &TargetHandle) -> RhaiResult<Map> {
        t.no_run_control_in_hooks(ctx)?;
        let mut run = t
            .with(ctx, Debugger::cycle_begin)?
            .map_err(|e| err(ctx, Chain(&e)))?;
        let driven = t.drive(ctx, |d| d.cycle_step(&mut run));
        // The cycle's breakpoints go, also when it failed.
        let cycle = t.with(ctx, |d| d.cycle_finish(run))?;
        driven?;
        let cycle = cycle.ok_or_else(|| err(ctx, "the cycle did not complete"))?;
        Ok(crate::values::cycle_map(&cycle))
    }
    engine.register_fn("cycle", |ctx: NativeCallContext, t: &mut TargetHandle| {
        one_cycle(&ctx, t)
    });
    engine.register_fn(
        "cycles",
        |ctx: NativeCallContext, t: &mut TargetHandle, n: i64| -> RhaiResult<Array> {
            if !(0..=crate::script::MAX_ARRAY as i64).contains(&n) {
                return Err(err(
                    &ctx,
                    format!("cycles({n}): the count must be 0 to {MAX_ARRAY}"),
                ));
            }
            (0..n)
                .map(|_| one_cycle(&ctx, t).map(Dynamic::from_map))
                .collect()
        },
    );
    engine.register_fn("phases", |cycle: &mut Map, role: &str| {
        crate::values::cycle_phases(cycle, role)
    });
    engine.register_fn("roles", |ctx: NativeCallContext, t: &mut TargetHandle| {
        // The roles this firmware has, in lifecycle order.
        t.with(&ctx, |d| {
            d.present_roles()
                .into_iter()
                .map(|(r, _)| Dynamic::from(r))
                .collect::<Array>()
        })
    });
    engine.register_fn(
        "cycle_start",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<String> {
            // The role whose calls begin cycles.
            t.with(&ctx, |d| d.cycle_start_role())?
                .map_err(|e| err(&ctx, Chain(&e)))
        },
    );
    fn run_to(
        ctx: &NativeCallContext,
        t: &TargetHandle,
        function: &str,
        hits: i64,
    ) -> RhaiResult<()> {
        t.no_run_control_in_hooks(ctx)?;
        let remaining = u32::try_from(hits)
            .ok()
            .filter(|h| *h > 0)
            .ok_or_else(|| err(ctx, "the hit count must be at least 1"))?;
        let (addr, _) = t
            .with(ctx, |d| d.function(function))?
            .map_err(|e| err(ctx, Chain(&e)))?;
        let mut goal = Goal::Entry {
            function: function.to_string(),
            addr,
            remaining,
        };
        t.drive(ctx, |d| d.run(&mut goal).map(Some))
    }
    engine.register_fn(
        "run_to",
        |ctx: NativeCallContext, t: &mut TargetHandle, f: &str| run_to(&ctx, t, f, 1),
    );
    engine.register_fn(
        "run_to",
        |ctx: NativeCallContext, t: &mut TargetHandle, f: &str, n: i64| run_to(&ctx, t, f, n),
    );
    engine.register_fn(
        "reset",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<()> {
            t.no_run_control_in_hooks(&ctx)?;
            t.with(&ctx, Debugger::reset)?
                .map_err(|e| err(&ctx, Chain(&e)))
        },
    );
    engine.register_fn(
        "trace",
        |ctx: NativeCallContext, t: &mut TargetHandle, on: bool| -> RhaiResult<()> {
            t.with(&ctx, |d| d.set_tracing(on))?
                .map_err(|e| err(&ctx, Chain(&e)))
        },
    );
    fn fail_alloc(
        ctx: &NativeCallContext,
        t: &TargetHandle,
        choice: crate::debugger::FailChoice,
    ) -> RhaiResult<()> {
        t.with(ctx, |d| d.fail_alloc(choice))?
            .map_err(|e| err(ctx, Chain(&e)))
    }
    engine.register_fn(
        "fail_alloc",
        |ctx: NativeCallContext, t: &mut TargetHandle, site: &str| -> RhaiResult<()> {
            let choice = crate::debugger::FailChoice {
                site: Some(site.to_string()),
                phase: None,
                nth: 1,
            };
            fail_alloc(&ctx, t, choice)
        },
    );
    engine.register_fn(
        "fail_alloc",
        |ctx: NativeCallContext, t: &mut TargetHandle, site: &str, nth: i64| -> RhaiResult<()> {
            let choice = crate::debugger::FailChoice {
                site: Some(site.to_string()),
                phase: None,
                nth: u64::try_from(nth).unwrap_or(0),
            };
            fail_alloc(&ctx, t, choice)
        },
    );
    engine.register_fn(
        "fail_alloc",
        |ctx: NativeCallContext, t: &mut TargetHandle, choice: Map| -> RhaiResult<()> {
            let choice = crate::values::fail_choice(&choice).map_err(|e| err(&ctx, e))?;
            fail_alloc(&ctx, t, choice)
        },
    );
    engine.register_fn(
        "alloc_sites",
        |ctx: NativeCallContext, t: &mut TargetHandle, phase: &str| -> RhaiResult<Array> {
            t.with(&ctx, |d| d.alloc_sites(phase))?
                .map(|sites| sites.iter().map(crate::values::alloc_site_map).collect())
                .map_err(|e| err(&ctx, Chain(&e)))
        },
    );
    engine.register_fn(
        "after_failure",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Map> {
            t.no_run_control_in_hooks(&ctx)?;
            let mut wait = t
                .with(&ctx, Debugger::failure_begin)?
                .map_err(|e| err(&ctx, Chain(&e)))?;
            let driven = t.drive(&ctx, |d| d.failure_step(&mut wait));
            // Its breakpoints go, also when it failed.
            let done = t.with(&ctx, |d| d.failure_finish(wait))?;
            driven?;
            let done = done.ok_or_else(|| err(&ctx, "after_failure did not end"))?;
            Ok(crate::values::failure_map(&done))
        },
    );
    engine.register_fn(
        "injected",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            t.with(&ctx, |d| {
                d.injected()
                    .iter()
                    .map(crate::values::injected_map)
                    .collect()
            })
        },
    );
    engine.register_fn(
        "has_role",
        |ctx: NativeCallContext, t: &mut TargetHandle, role: &str| {
            // A role the configuration maps (or the bundled firmware's default) to a function
            // this ELF has.
            t.with(&ctx, |d| {
                d.function(d.config().phase_function(role)).is_ok()
            })
        },
    );
    engine.register_fn(
        "has_var",
        |ctx: NativeCallContext, t: &mut TargetHandle, name: &str| {
            t.with(&ctx, |d| d.symbols().variable(name, &[]).is_some())
        },
    );
    engine.register_fn(
        "span_function",
        |ctx: NativeCallContext, t: &mut TargetHandle, role: &str| {
            // The span function recorded inside a role's phase ("" when none is configured).
            t.with(&ctx, |d| {
                let c = d.config();
                c.span_of(c.phase_function(role))
                    .unwrap_or_default()
                    .to_string()
            })
        },
    );
    engine.register_fn(
        "phase_function",
        |ctx: NativeCallContext, t: &mut TargetHandle, alias: &str| {
            t.with(&ctx, |d| d.config().phase_function(alias).to_string())
        },
    );
    engine.register_fn(
        "tensors",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Dynamic> {
            // The firmware's tensor table now ([tensors] in memlife.toml), `()` when none.
            let table = t
                .with(&ctx, crate::buffers::read_tensors)?
                .map_err(|e| err(&ctx, e))?;
            Ok(table.map_or(Dynamic::UNIT, |v| crate::values::tensors_array(&v).into()))
        },
    );
    engine.register_fn("tensor_overlaps", |tensors: Array| -> RhaiResult<Array> {
        // Pairs of a tensor table's entries that share memory while both are in use.
        let parsed: Vec<crate::buffers::Tensor> = tensors
            .iter()
            .map(|d| {
                let m = d.read_lock::<Map>();
                let get = |k: &str| {
                    m.as_ref()
                        .and_then(|m| m.get(k))
                        .and_then(|v| v.as_int().ok())
                        .unwrap_or(0)
                };
                crate::buffers::Tensor {
                    name: None,
                    addr: get("addr") as u64,
                    size: get("size") as u64,
                    first: get("first"),
                    last: get("last"),
                }
            })
            .collect();
        Ok(crate::values::overlaps_array(
            &tensors,
            &crate::buffers::tensor_overlaps(&parsed),
        ))
    });
    engine.register_fn("buffers", |ctx: NativeCallContext, t: &mut TargetHandle| {
        // Every traced allocation so far with its lifetime.
        t.with(&ctx, |d| {
            let (buffers, _) = crate::buffers::traced_buffers(d.events());
            buffers
                .iter()
                .map(crate::values::buffer_map)
                .collect::<Array>()
        })
    });
    engine.register_fn(
        "buffer_overlaps",
        |ctx: NativeCallContext, t: &mut TargetHandle| {
            // Traced buffers whose memory intersected while both were allocated.
            t.with(&ctx, |d| {
                let (buffers, pairs) = crate::buffers::traced_buffers(d.events());
                let items: Array = buffers.iter().map(crate::values::buffer_map).collect();
                crate::values::overlaps_array(&items, &pairs)
            })
        },
    );
    engine.register_fn("events", |ctx: NativeCallContext, t: &mut TargetHandle| {
        t.with(&ctx, |d| int(d.totals().events))
    });
    engine.register_fn(
        "calls",
        |ctx: NativeCallContext, t: &mut TargetHandle, f: &str| t.with(&ctx, |d| int(d.calls(f))),
    );
    engine.register_fn(
        "on_break",
        |ctx: NativeCallContext, t: &mut TargetHandle, symbol: &str, f: FnPtr| -> RhaiResult<()> {
            t.with(&ctx, |d| d.add_hook(symbol))?
                .map_err(|e| err(&ctx, Chain(&e)))?;
            t.state.0.borrow_mut().hooks.insert(symbol.to_string(), f);
            Ok(())
        },
    );
    engine.register_fn(
        "var",
        |ctx: NativeCallContext, t: &mut TargetHandle, name: &str| -> RhaiResult<Dynamic> {
            t.with(&ctx, |d| crate::values::read_var(d, name))?
                .map_err(|e| err(&ctx, e))
        },
    );
    engine.register_fn(
        "string",
        |ctx: NativeCallContext, t: &mut TargetHandle, addr: i64| -> RhaiResult<String> {
            t.with(&ctx, |d| crate::values::read_string(d, addr as u64))?
                .map_err(|e| err(&ctx, e))
        },
    );
    engine.register_fn(
        "read_u32",
        |ctx: NativeCallContext, t: &mut TargetHandle, addr: i64| -> RhaiResult<i64> {
            t.with(&ctx, |d| d.target().as_memory().read_u32(addr as u64))?
                .map(i64::from)
                .map_err(|e| err(&ctx, Chain(&e)))
        },
    );
    engine.register_fn(
        "leaks",
        |ctx: NativeCallContext,
         t: &mut TargetHandle,
         before: HeapHandle,
         after: HeapHandle|
         -> RhaiResult<Array> {
            t.with(&ctx, |d| crate::values::leaks(d, &before.0, &after.0))
        },
    );
    engine.register_fn(
        "deferred",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            t.with(&ctx, |d| {
                d.deferred()
                    .0
                    .iter()
                    .map(crate::values::deferred_map)
                    .collect()
            })
        },
    );
    engine.register_fn(
        "deferred_total",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<i64> {
            t.with(&ctx, |d| {
                let (listed, unlisted) = d.deferred();
                int(listed.len() as u64 + unlisted)
            })
        },
    );
    engine.register_fn(
        "damage",
        |ctx: NativeCallContext, t: &mut TargetHandle, h: HeapHandle| -> RhaiResult<Array> {
            t.with(&ctx, |d| {
                d.damage(&h.0)
                    .iter()
                    .map(crate::values::damage_map)
                    .collect()
            })
        },
    );
    engine.register_fn(
        "label_spans",
        |ctx: NativeCallContext, t: &mut TargetHandle, function: &str, names: Array| {
            // Names are for reports only: anything that is not a string is shown as written.
            let names = names.iter().map(|n| n.to_string()).collect();
            t.with(&ctx, |d| d.set_labels(function, names))
        },
    );

    // Free functions.
    engine.register_fn(
        "check",
        |ctx: NativeCallContext, name: &str, ok: bool, message: &str| -> RhaiResult<bool> {
            record(
                &ctx,
                name,
                if ok { Verdict::Pass } else { Verdict::Fail },
                message,
            )?;
            Ok(ok)
        },
    );
    engine.register_fn(
        "check",
        |ctx: NativeCallContext, name: &str, ok: bool| -> RhaiResult<bool> {
            record(
                &ctx,
                name,
                if ok { Verdict::Pass } else { Verdict::Fail },
                "",
            )?;
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
            let out = output_path(&state.0.borrow().out_dir, path).map_err(|e| err(&ctx, e))?;
            let json = serde_json::to_vec_pretty(&memlife_heap::render::json(&h.0, None))
                .map_err(|e| err(&ctx, Chain(&e)))?;
            let root = state.0.borrow().out_dir.clone();
            memlife_core::output::write_under(&root, Path::new(path), &json)
                .map_err(|e| err(&ctx, Chain(&e)))?;
            state.0.borrow_mut().dumps.push(out.clone());
            Ok(out.display().to_string())
        },
    );
    engine.register_fn("diff", |a: HeapHandle, b: HeapHandle| -> Map {
        crate::values::diff(&a.0, &b.0)
    });
    engine.register_fn("kib", |n: i64| format!("{:.1} KiB", n as f64 / 1024.0));
    engine
}

/// The run state of the script this call belongs to, from the engine's tag.
fn script_state(ctx: &NativeCallContext) -> RhaiResult<StateHandle> {
    ctx.tag()
        .and_then(|tag| tag.read_lock::<StateHandle>().map(|s| s.clone()))
        .ok_or_else(|| err(ctx, "no audit is running"))
}

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

fn position(pos: Position) -> (Option<usize>, Option<usize>) {
    (pos.line(), pos.position())
}

/// The current name of a budget a script asks for, with a warning when it used an old one.
fn current_budget(name: &str) -> &str {
    let current = crate::config::budget_name(name);
    if current != name {
        ::tracing::warn!("budget(\"{name}\") is deprecated: use budget(\"{current}\")");
    }
    current
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
    budgets: &std::collections::BTreeMap<String, f64>,
    print: Rc<dyn Fn(&str)>,
) -> (Option<Debugger>, ScriptOutcome) {
    let dbg = Rc::new(RefCell::new(Some(debugger)));
    let state = StateHandle(Rc::new(RefCell::new(RunState {
        checks: Vec::new(),
        dumps: Vec::new(),
        hooks: HashMap::new(),
        in_hook: false,
        out_dir: out_dir.to_path_buf(),
        warned_phase: false,
    })));
    let mut engine = engine(print);
    engine.set_default_tag(Dynamic::from(state.clone()));
    let handle = TargetHandle {
        dbg: dbg.clone(),
        state: state.clone(),
    };
    engine.register_fn("target", move || handle.clone());
    let budgets2 = budgets.clone();
    let budgets = budgets.clone();
    engine.register_fn(
        "budget",
        move |ctx: NativeCallContext, name: &str| -> RhaiResult<f64> {
            let name = current_budget(name);
            budgets.get(name).copied().ok_or_else(|| {
                err(
                    &ctx,
                    format!("budget `{name}` is not set ([budgets] in memlife.toml)"),
                )
            })
        },
    );
    engine.register_fn("budget", move |name: &str, default: f64| -> f64 {
        budgets2
            .get(current_budget(name))
            .copied()
            .unwrap_or(default)
    });
    let error = match engine.compile(source) {
        Err(e) => {
            let (line, column) = position(e.1);
            Some(ScriptError {
                message: e.0.to_string(),
                line,
                column,
            })
        }
        Ok(ast) => match engine.run_ast(&ast) {
            Ok(()) => None,
            Err(e) => {
                let (line, column) = position(e.position());
                let message = match *e {
                    EvalAltResult::ErrorRuntime(ref v, _)
                    | EvalAltResult::ErrorTerminated(ref v, _) => v.to_string(),
                    // A value past the sandbox's size limits: say which limit, and the usual
                    // cause in an audit (every cycle held at once).
                    EvalAltResult::ErrorDataTooLarge(ref what, _) => format!(
                        "{what} is larger than a script may hold (arrays {MAX_ARRAY} elements, maps {MAX_MAP} entries, strings {MAX_STRING} bytes, counted with everything nested in them): keep less, e.g. observe cycles one at a time with t.cycle() in a loop rather than t.cycles(n)"
                    ),
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
    let debugger = dbg.borrow_mut().take();
    (debugger, outcome)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::PeakMethod;
    use crate::debugger::tests::fake::{self, FREERTOS_LIKE, Firmware, STACK};

    /// Runs `source` against a fake target whose firmware calls `model_load` once.
    fn run(source: &str) -> (Option<Debugger>, ScriptOutcome, String) {
        let sym = fake::symbols();
        let mut fw = Firmware::new(&sym);
        fw.call("model_load", STACK, 0x0800_00c4, [0; 4]);
        fw.malloc(STACK - 0x20, 0x0800_01e0, fake::BLOCKS + 8, 32);
        fw.ret(0x0800_00c4, STACK, 0);
        let (dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
        let printed = Rc::new(RefCell::new(String::new()));
        let sink = Rc::clone(&printed);
        let print: Rc<dyn Fn(&str)> = Rc::new(move |s: &str| sink.borrow_mut().push_str(s));
        let out = std::env::temp_dir().join(format!("memlife-script-{}", std::process::id()));
        let (dbg, outcome) = run_script(dbg, source, &out, &Default::default(), print);
        let printed = printed.borrow().clone();
        (dbg, outcome, printed)
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
    fn a_deprecated_budget_name_reads_the_current_one() {
        let sym = fake::symbols();
        let fw = Firmware::new(&sym);
        let (dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
        let budgets = [("cycles".to_string(), 5.0)].into_iter().collect();
        let out = std::env::temp_dir().join(format!("memlife-budget-{}", std::process::id()));
        let (_, outcome) = run_script(
            dbg,
            r#"check("old", budget("iterations", 1.0) == 5.0 && budget("lifecycles") == 5.0);"#,
            &out,
            &budgets,
            Rc::new(|_: &str| {}),
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
