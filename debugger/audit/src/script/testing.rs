//! A test rig for one area of the script API: a sandboxed engine with only the areas a test
//! registers, a `Target` handle named `t` over the engine's fake target, and the run state the
//! free functions reach through the engine's tag.

use std::cell::RefCell;
use std::rc::Rc;

use rhai::{Dynamic, Engine, EvalAltResult, Scope};

use super::handle::{StateHandle, TargetHandle};
use crate::config::PeakMethod;
use crate::debugger::Debugger;
use crate::debugger::tests::fake::{self, FREERTOS_LIKE, Firmware, STACK};
use crate::model::CheckResult;

/// A firmware that calls `model_load` once, which allocates 32 bytes.
pub(crate) fn one_load() -> Firmware {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("model_load", STACK, 0x0800_00c4, [0; 4]);
    fw.malloc(STACK - 0x20, 0x0800_01e0, fake::BLOCKS + 8, 32);
    fw.ret(0x0800_00c4, STACK, 0);
    fw
}

/// An engine with some areas over a fake target.
pub(crate) struct Rig {
    engine: Engine,
    scope: Scope<'static>,
    state: StateHandle,
    dbg: Rc<RefCell<Option<Debugger>>>,
    printed: Rc<RefCell<String>>,
}

impl Rig {
    /// The areas `areas` over `fw` (traced); `t` is the target.
    pub(crate) fn new(fw: Firmware, areas: &[fn(&mut Engine)]) -> Self {
        let (dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
        let printed = Rc::new(RefCell::new(String::new()));
        let sink = Rc::clone(&printed);
        let mut engine = super::sandbox::engine(Rc::new(move |s: &str| {
            sink.borrow_mut().push_str(s);
        }));
        engine.register_type_with_name::<TargetHandle>("Target");
        for register in areas {
            register(&mut engine);
        }
        let out = std::env::temp_dir().join(format!("memlife-rig-{}", std::process::id()));
        let state = StateHandle::new(out);
        engine.set_default_tag(Dynamic::from(state.clone()));
        let dbg = Rc::new(RefCell::new(Some(dbg)));
        let mut scope = Scope::new();
        scope.push(
            "t",
            TargetHandle {
                dbg: Rc::clone(&dbg),
                state: state.clone(),
            },
        );
        Rig {
            engine,
            scope,
            state,
            dbg,
            printed,
        }
    }

    /// Evaluates `source` (variables stay for the next call).
    pub(crate) fn eval<T: Clone + 'static>(
        &mut self,
        source: &str,
    ) -> Result<T, Box<EvalAltResult>> {
        self.engine.eval_with_scope(&mut self.scope, source)
    }

    /// Evaluates `source` to a script value.
    pub(crate) fn value(&mut self, source: &str) -> Dynamic {
        match self.eval::<Dynamic>(source) {
            Ok(v) => v,
            Err(e) => Dynamic::from(format!("error: {e}")),
        }
    }

    /// The error `source` ends with, as text (empty when it ends well).
    pub(crate) fn error(&mut self, source: &str) -> String {
        self.eval::<Dynamic>(source)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    /// Runs one phase to its end on the debugger, calling no hooks.
    pub(crate) fn phase(&self, name: &str) -> Result<crate::model::PhaseRecord, crate::AuditError> {
        let mut slot = self.dbg.borrow_mut();
        let Some(d) = slot.as_mut() else {
            return Err(crate::AuditError::Config("the audit is over".into()));
        };
        let mut run = d.phase_begin(name)?;
        while d.phase_step(&mut run)?.is_some() {}
        Ok(d.phase_finish()?.0)
    }

    /// Runs `f` on the debugger.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Debugger) -> T) -> Option<T> {
        self.dbg.borrow_mut().as_mut().map(f)
    }

    /// The checks recorded so far.
    pub(crate) fn checks(&self) -> Vec<CheckResult> {
        self.state.0.borrow().checks.clone()
    }

    /// What the script printed so far.
    pub(crate) fn printed(&self) -> String {
        self.printed.borrow().clone()
    }
}
