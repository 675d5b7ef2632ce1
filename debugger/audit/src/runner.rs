//! One audit, start to end: the path `memlife audit` and `memlife serve`'s `monitor audit` both
//! take. The engine takes the caller's target for the run, the script runs, the report is
//! assembled, and the target is back in the caller's hands on every path, an error included.
//!
//! The caller keeps what only it knows: how the target was opened and how to leave it, where
//! the report goes, how progress shows. What is the same for both lives here: the run's
//! [`RunContext`] ([`context`]), building the [`Debugger`], the script, the report.

use std::path::Path;
use std::rc::Rc;
use std::time::Instant;

use memlife_core::{Memory, Registers, Target, TargetError};
use memlife_dwarf::Symbols;
use memlife_heap::{HeapWalker, LinkState};

use crate::config::EngineSettings;
use crate::debugger::{Debugger, ProgressFn, Refused};
use crate::error::AuditError;
use crate::report::{AuditReport, RunContext, now_rfc3339};
use crate::session::Restart;

/// What a run is about, as its caller names it (for the report).
#[derive(Debug, Clone)]
pub struct Subject {
    /// The firmware ELF, as given.
    pub elf: String,
    /// The target, as described by the backend (or the flags, before it is opened).
    pub target: String,
    /// The board or machine, when known.
    pub board: Option<String>,
    /// The script, as given.
    pub script: String,
}

/// The [`RunContext`] of a run that started at `started` with these settings: the one place
/// it is put together.
pub fn context(subject: Subject, started: Instant, settings: &EngineSettings) -> RunContext {
    RunContext {
        date: now_rfc3339(),
        started,
        elf: subject.elf,
        target: subject.target,
        board: subject.board,
        script: subject.script,
        method: settings.method,
        phase_aliases: settings.config.phases.clone(),
    }
}

/// One audit to run.
pub struct Audit<'a> {
    /// The firmware's symbols.
    pub symbols: Rc<Symbols>,
    /// The walker of its heap.
    pub walker: Box<dyn HeapWalker>,
    /// What the engine runs with.
    pub settings: EngineSettings,
    /// The script's source.
    pub source: &'a str,
    /// Where the script's files (heap dumps) go.
    pub out_dir: &'a Path,
    /// What the caller knows of the run ([`context`]).
    pub context: RunContext,
    /// Where the script's `print` goes.
    pub printer: Rc<dyn Fn(&str)>,
    /// Called after every stop with the progress so far.
    pub progress: Option<ProgressFn>,
    /// How to start the target again when a reset cannot (a QEMU the caller started, ended by
    /// its firmware's exit); `None` when the caller did not start the target.
    pub restart: Option<Box<dyn Restart>>,
    /// A skipped check fails the audit (exit code 1 at least), as a failed one does.
    pub fail_on_skip: bool,
}

/// A finished audit (its checks passed or failed, or the script stopped with an error: the
/// report says which).
#[derive(Debug)]
pub struct Audited {
    /// The report.
    pub report: AuditReport,
    /// How walks read the target after the run (with the link's model, once measured), for
    /// the caller's next walks.
    pub link: LinkState,
}

/// Runs `audit` on the target in `target`, which the engine holds for the run. When this
/// returns, `target` holds the target again (memlife's breakpoints removed; a fresh one when
/// the engine started it again through [`Audit::restart`]), whatever happened;
/// an error means the audit could not start (the target is no live one, the settings do not
/// fit it) or the engine lost the target, which is memlife's bug: then `target` holds a
/// stand-in that refuses every request.
pub fn run(target: &mut Box<dyn Target>, audit: Audit<'_>) -> Result<Audited, AuditError> {
    let lent = std::mem::replace(target, Box::new(Lent));
    let mut debugger = match Debugger::new(lent, audit.symbols, audit.walker, audit.settings) {
        Ok(d) => d,
        Err(Refused {
            error,
            target: back,
        }) => {
            *target = back;
            return Err(error);
        }
    };
    if let Some(progress) = audit.progress {
        debugger.set_observer(progress);
    }
    if let Some(restart) = audit.restart {
        debugger.set_restart(restart);
    }
    let budgets = debugger.config().budgets.clone();
    let (debugger, outcome) = crate::script::run_script(
        debugger,
        audit.source,
        audit.out_dir,
        &budgets,
        audit.printer,
    );
    let Some(debugger) = debugger else {
        return Err(AuditError::TargetNotReturned);
    };
    let mut report = AuditReport::assemble(&audit.context, &debugger, &outcome);
    if audit.fail_on_skip {
        report.fail_on_skip();
    }
    let link = debugger.link();
    *target = debugger.into_target();
    Ok(Audited { report, link })
}

/// Stands in for the target while the engine holds it.
struct Lent;

const LENT: TargetError = TargetError::Unsupported("the target is lent to the audit engine");

impl Memory for Lent {
    fn read(&mut self, _addr: u64, _buf: &mut [u8]) -> memlife_core::Result<()> {
        Err(LENT)
    }
}

impl Registers for Lent {
    fn read_register(&mut self, _reg: memlife_core::Register) -> memlife_core::Result<u64> {
        Err(LENT)
    }

    fn write_register(
        &mut self,
        _reg: memlife_core::Register,
        _v: u64,
    ) -> memlife_core::Result<()> {
        Err(LENT)
    }

    fn read_all_registers(&mut self) -> memlife_core::Result<Vec<(String, u64)>> {
        Ok(Vec::new())
    }
}

impl Target for Lent {
    fn describe(&self) -> String {
        "lent to the audit engine".into()
    }

    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::config::{EngineTuning, PeakMethod};
    use crate::debugger::tests::fake::{self, FREERTOS_LIKE, Firmware, STACK};
    use crate::model::Verdict;

    fn settings(method: PeakMethod) -> EngineSettings {
        EngineSettings {
            config: fake::lifecycle_config(),
            method,
            timeout: std::time::Duration::from_millis(50),
            keep_cycles: None,
            link: LinkState::default(),
            tuning: EngineTuning::default(),
        }
    }

    fn audit<'a>(source: &'a str, out: &'a Path, method: PeakMethod) -> Audit<'a> {
        let symbols = fake::symbols();
        let subject = Subject {
            elf: "fw.elf".into(),
            target: "fake".into(),
            board: None,
            script: "s.rhai".into(),
        };
        let settings = settings(method);
        Audit {
            context: context(subject, Instant::now(), &settings),
            symbols,
            walker: fake::walker(FREERTOS_LIKE),
            settings,
            source,
            out_dir: out,
            printer: Rc::new(|_: &str| {}),
            progress: None,
            restart: None,
            fail_on_skip: false,
        }
    }

    #[test]
    fn an_audit_gives_its_report_and_the_target_back() {
        let sym = fake::symbols();
        let mut fw = Firmware::new(&sym);
        fw.call("model_load", STACK, 0x0800_00c4, [0; 4]);
        fw.malloc(STACK - 0x20, 0x0800_01e0, fake::BLOCKS + 8, 32);
        fw.ret(0x0800_00c4, STACK, 0);
        let (mut target, _) = fake::target(fw, None);
        let out = std::env::temp_dir().join(format!("memlife-runner-{}", std::process::id()));
        let source =
            r#"let t = target(); let p = t.phase("load"); check("grew", p.delta == 32, "by 32");"#;
        let done = run(&mut target, audit(source, &out, PeakMethod::Trace)).unwrap();
        assert_eq!(target.describe(), "fake");
        assert_eq!(done.report.checks.len(), 1);
        assert_eq!(done.report.checks[0].verdict, Verdict::Pass);
        assert_eq!(done.report.phases.len(), 1);
        assert_eq!(done.report.run.elf, "fw.elf");
        assert_eq!(done.report.method, PeakMethod::Trace);
        assert_eq!(done.report.exit_code, 0);
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_skipped_check_fails_the_audit_only_when_asked() {
        let sym = fake::symbols();
        let out = std::env::temp_dir().join(format!("memlife-runner-skip-{}", std::process::id()));
        let source =
            r#"check("ran", true); skip("not run", "the target could not be started again");"#;
        for (fail_on_skip, code) in [(false, 0), (true, 1)] {
            let (mut target, _) = fake::target(Firmware::new(&sym), None);
            let mut a = audit(source, &out, PeakMethod::Sample);
            a.fail_on_skip = fail_on_skip;
            let done = run(&mut target, a).unwrap();
            assert_eq!(done.report.skipped(), 1);
            assert_eq!(done.report.exit_code, code, "fail_on_skip {fail_on_skip}");
        }
        // A failed check's 1 and an error's 2 stay what they are.
        let (mut target, _) = fake::target(Firmware::new(&sym), None);
        let mut a = audit(r#"skip("s", ""); throw "stop";"#, &out, PeakMethod::Sample);
        a.fail_on_skip = true;
        assert_eq!(run(&mut target, a).unwrap().report.exit_code, 2);
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_refused_audit_gives_the_target_back_with_the_reason() {
        let sym = fake::symbols();
        let (mut target, _) = fake::target(Firmware::new(&sym), None);
        // An offline target has no run control: refused, and handed back.
        let mut offline: Box<dyn Target> = Box::new(memlife_core::Snapshot::default());
        let out = std::env::temp_dir();
        let e = run(&mut offline, audit("", &out, PeakMethod::Trace)).unwrap_err();
        assert!(matches!(e, AuditError::NeedsLiveTarget(_)), "{e}");
        assert!(
            offline.describe().starts_with("snapshot"),
            "{}",
            offline.describe()
        );
        // A live one runs.
        assert!(run(&mut target, audit("", &out, PeakMethod::Sample)).is_ok());
        assert_eq!(target.describe(), "fake");
    }
}
