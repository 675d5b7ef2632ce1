//! The handles a script holds: the `Target` object ([`TargetHandle`]) over the debugger, and the
//! run state (checks, dumps, hooks) that the free functions reach through the engine's tag.
//! Every area of the API calls the debugger through [`TargetHandle::with`], and runs what stops
//! the target through [`TargetHandle::drive`], which calls the script's hooks as they fire.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use rhai::{Dynamic, EvalAltResult, FnPtr, NativeCallContext};

use crate::debugger::{Debugger, Outcome};
use crate::error::{AuditError, Chain};
use crate::model::CheckResult;

/// What a native function returns to a script.
pub(crate) type RhaiResult<T> = Result<T, Box<EvalAltResult>>;

/// What one script run records and needs.
pub(crate) struct RunState {
    /// Checks in the order recorded.
    pub checks: Vec<CheckResult>,
    /// Files written by `dump`.
    pub dumps: Vec<PathBuf>,
    /// `on_break` hooks by symbol.
    pub hooks: HashMap<String, FnPtr>,
    /// A hook is running.
    pub in_hook: bool,
    /// Where `dump` writes.
    pub out_dir: PathBuf,
    /// Whether the script was told once that `t.phase` is deprecated.
    pub warned_phase: bool,
    /// Runs of the target the script asked for so far (cycles, failure runs, phases, run_to).
    pub runs: u64,
    /// The most runs a script may ask for (`[budgets] max_cycles`).
    pub max_runs: u64,
}

/// Runs of the target a script may ask for unless `[budgets] max_cycles` says otherwise: far
/// more than any bundled script asks, far fewer than a loop that never ends.
pub const DEFAULT_MAX_RUNS: u64 = 10_000;

/// The run state of one script, shared by its `Target` handles and, through the engine's tag,
/// by the free functions (`check`, `warn`, `dump`) that have no `Target` argument.
#[derive(Clone)]
pub(crate) struct StateHandle(pub Rc<RefCell<RunState>>);

impl StateHandle {
    /// An empty run state writing under `out_dir`.
    pub fn new(out_dir: PathBuf) -> Self {
        StateHandle(Rc::new(RefCell::new(RunState {
            checks: Vec::new(),
            dumps: Vec::new(),
            hooks: HashMap::new(),
            in_hook: false,
            out_dir,
            warned_phase: false,
            runs: 0,
            max_runs: DEFAULT_MAX_RUNS,
        })))
    }
}

/// The `Target` object of scripts. The debugger is held in an `Option` that
/// [`super::run_script`] empties at the end: a handle a script managed to keep (in a reference
/// cycle, say) then only fails, and the debugger goes back to the caller whatever the script
/// did.
#[derive(Clone)]
pub struct TargetHandle {
    pub(crate) dbg: Rc<RefCell<Option<Debugger>>>,
    pub(crate) state: StateHandle,
}

/// A runtime error at the script position of this call.
pub(crate) fn err(ctx: &NativeCallContext, e: impl std::fmt::Display) -> Box<EvalAltResult> {
    Box::new(EvalAltResult::ErrorRuntime(
        e.to_string().into(),
        ctx.call_position(),
    ))
}

/// An audit error at the script position of this call, with its causes.
pub(crate) fn audit_err(ctx: &NativeCallContext, e: &AuditError) -> Box<EvalAltResult> {
    err(ctx, Chain(e))
}

/// The run state of the script this call belongs to, from the engine's tag.
pub(crate) fn script_state(ctx: &NativeCallContext) -> RhaiResult<StateHandle> {
    ctx.tag()
        .and_then(|tag| tag.read_lock::<StateHandle>().map(|s| s.clone()))
        .ok_or_else(|| err(ctx, "no audit is running"))
}

impl TargetHandle {
    /// Runs `f` on the debugger; an error, never a panic, when the audit is over (a handle kept
    /// past the script's end) or the debugger is already in use.
    pub(crate) fn with<T>(
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

    /// [`TargetHandle::with`] for a call that can fail with an audit error.
    pub(crate) fn try_with<T>(
        &self,
        ctx: &NativeCallContext,
        f: impl FnOnce(&mut Debugger) -> Result<T, AuditError>,
    ) -> RhaiResult<T> {
        self.with(ctx, f)?.map_err(|e| audit_err(ctx, &e))
    }

    /// Refuses run control inside an `on_break` hook.
    pub(crate) fn no_run_control_in_hooks(&self, ctx: &NativeCallContext) -> RhaiResult<()> {
        if self.state.0.borrow().in_hook {
            return Err(err(
                ctx,
                "run control (phase, run_to, reset) is not allowed inside on_break",
            ));
        }
        Ok(())
    }

    /// Counts one run of the target (a cycle, a failure run, a phase, a `run_to`): refused
    /// inside a hook, and past `[budgets] max_cycles` (a loop that would run the target until
    /// the audit's deadline).
    pub(crate) fn begin_run(&self, ctx: &NativeCallContext) -> RhaiResult<()> {
        self.no_run_control_in_hooks(ctx)?;
        let mut state = self.state.0.borrow_mut();
        state.runs += 1;
        if state.runs > state.max_runs {
            return Err(err(
                ctx,
                format!(
                    "the script asked for more than {} runs of the target (cycles, failure runs, phases, run_to), the limit of [budgets] max_cycles: a loop that never ends? Raise max_cycles for a longer soak",
                    state.max_runs
                ),
            ));
        }
        Ok(())
    }

    /// Runs `step` until it completes, calling script hooks whenever one fires.
    pub(crate) fn drive(
        &self,
        ctx: &NativeCallContext,
        mut step: impl FnMut(&mut Debugger) -> Result<Option<Outcome>, AuditError>,
    ) -> RhaiResult<()> {
        loop {
            match self.try_with(ctx, &mut step)? {
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
