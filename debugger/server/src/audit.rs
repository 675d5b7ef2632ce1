//! `monitor audit FILE`: a Rhai audit script run against the target gdb is looking at, with the
//! phases it records kept for `monitor phases`.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::Duration;

use memlife_audit::model::Verdict;
use memlife_audit::report::{RunContext, now_rfc3339};
use memlife_audit::{AuditConfig, AuditReport, Debugger, PeakMethod};
use memlife_core::{Memory, Registers, Target, TargetError};
use memlife_heap::WalkerOptions;

use crate::bridge::Bridge;
use crate::error::{Context, Result, ServeError};

/// How long the script may wait for any one breakpoint.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Stands in for the backend while the audit engine holds it.
struct Lent;

impl Memory for Lent {
    fn read(&mut self, _addr: u64, _buf: &mut [u8]) -> memlife_core::Result<()> {
        Err(TargetError::Unsupported(
            "the target is lent to the audit engine",
        ))
    }
}

impl Registers for Lent {
    fn read_register(&mut self, _reg: memlife_core::Register) -> memlife_core::Result<u64> {
        Err(TargetError::Unsupported(
            "the target is lent to the audit engine",
        ))
    }

    fn write_register(
        &mut self,
        _reg: memlife_core::Register,
        _v: u64,
    ) -> memlife_core::Result<()> {
        Err(TargetError::Unsupported(
            "the target is lent to the audit engine",
        ))
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

impl Bridge {
    /// Runs the script at `path`; returns the script's output and its checks.
    pub(crate) fn audit(&mut self, path: &str) -> Result<String> {
        // Only a script inside the server's script directories; an error never shows the file.
        let real = self.places.script(path)?;
        let source = std::fs::read_to_string(&real)
            .context(format!("cannot read script {}", path.escape_debug()))?;
        self.ensure_halted().context("halting the target")?;
        let walker = memlife_heap::detect(
            &self.symbols,
            None,
            &WalkerOptions::default(),
            Some(self.target.as_memory()),
        )
        .context("detecting the allocator")?;
        let config = AuditConfig::default().with_lifecycle_defaults();
        let run = RunContext {
            date: now_rfc3339(),
            started: std::time::Instant::now(),
            elf: self.firmware.clone().unwrap_or_default(),
            target: self.target.describe(),
            board: None,
            script: path.to_string(),
            method: PeakMethod::Trace,
            phase_aliases: config.phases.clone(),
        };
        let target = std::mem::replace(&mut self.target, Box::new(Lent));
        let debugger = match Debugger::new(
            target,
            Rc::clone(&self.symbols),
            walker,
            config,
            PeakMethod::Trace,
            TIMEOUT,
        ) {
            Ok(d) => d,
            Err((e, target)) => {
                self.target = target;
                return Err(e).context("preparing the audit");
            }
        };
        let printed = Rc::new(RefCell::new(String::new()));
        let sink = Rc::clone(&printed);
        let print: Rc<dyn Fn(&str)> = Rc::new(move |s: &str| {
            let mut p = sink.borrow_mut();
            p.push_str(s);
            p.push('\n');
        });
        let out_dir = self.places.dump_dir.join("memlife-out");
        let budgets = std::collections::BTreeMap::new();
        let (debugger, outcome) =
            memlife_audit::run_script(debugger, &source, &out_dir, &budgets, print);
        let Some(debugger) = debugger else {
            return Err(ServeError::Command(
                "internal error: the script engine did not give the target back".into(),
            ));
        };
        for r in debugger.records() {
            self.phases.push(format!(
                "{:<16} call {:<3} used {:>7} -> {:>7} (delta {:+}), peak {} ({} above before), {} allocs",
                r.alias.as_deref().unwrap_or(&r.function),
                r.call,
                r.before.used,
                r.after.used,
                r.delta_used,
                r.peak_used,
                r.peak_above_before,
                r.allocs
            ));
        }
        self.last_audit = Some(Box::new(AuditReport::assemble(&run, &debugger, &outcome)));
        self.target = debugger.into_target();
        let mut out = printed.borrow().clone();
        for c in &outcome.checks {
            let word = match c.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Warn => "WARN",
                Verdict::Skip => "SKIP",
            };
            let _ = writeln!(out, "{word} {}: {}", c.name, c.message);
        }
        if let Some(e) = &outcome.error {
            let _ = writeln!(out, "script error: {e}");
        }
        let _ = writeln!(
            out,
            "the target moved: run `maintenance flush register-cache` before looking at it"
        );
        Ok(out)
    }
}

impl Bridge {
    /// `monitor report DIR`: the last audit of this session as DIR/index.html.
    pub(crate) fn report(&mut self, dir: &str) -> Result<String> {
        let report = self
            .last_audit
            .as_deref()
            .context("no audit has run in this session: `monitor audit FILE` first")?;
        let dir = self.places.dir_under(dir)?;
        let page = memlife_render::write_html_report(report, &dir)?;
        Ok(format!("report written to {}\n", page.display()))
    }
}
