//! `monitor audit FILE`: a Rhai audit script run against the target gdb is looking at, with the
//! phases it records kept for `monitor phases`.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use memlife_audit::model::Verdict;
use memlife_audit::report::{RunFacts, now_rfc3339, summarize};
use memlife_audit::{AuditConfig, AuditReport, Debugger, PeakMethod};
use memlife_core::{Memory, Registers, Target, TargetError};
use memlife_heap::WalkerOptions;

use crate::bridge::Bridge;

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
        let source =
            std::fs::read_to_string(path).with_context(|| format!("cannot read script {path}"))?;
        self.ensure_halted().context("halting the target")?;
        let walker = memlife_heap::detect(
            &self.symbols,
            None,
            &WalkerOptions::default(),
            Some(self.target.as_memory()),
        )
        .context("detecting the allocator")?;
        let started = std::time::Instant::now();
        let date = now_rfc3339();
        let describe = self.target.describe();
        let target = std::mem::replace(&mut self.target, Box::new(Lent));
        let config = AuditConfig::default().with_lifecycle_defaults();
        let aliases = config.phases.clone();
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
                return Err(anyhow!(e).context("preparing the audit"));
            }
        };
        let printed = Rc::new(RefCell::new(String::new()));
        let sink = Rc::clone(&printed);
        let print: Rc<dyn Fn(&str)> = Rc::new(move |s: &str| {
            let mut p = sink.borrow_mut();
            p.push_str(s);
            p.push('\n');
        });
        let out_dir = Path::new("memlife-out");
        let budgets = std::collections::BTreeMap::new();
        let (debugger, outcome) =
            memlife_audit::run_script(debugger, &source, out_dir, &budgets, print);
        let Some(debugger) = debugger else {
            return Err(anyhow!(
                "internal error: the script engine did not give the target back"
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
        let checks = summarize(&outcome.checks);
        let exit_code = AuditReport::exit_code_for(&checks, outcome.error.as_ref());
        let stops = debugger.progress().stops;
        self.last_audit = Some(Box::new(AuditReport {
            run: RunFacts {
                memlife: env!("CARGO_PKG_VERSION").to_string(),
                date,
                elf: self.firmware.clone().unwrap_or_default(),
                allocator: debugger.allocator().to_string(),
                target: describe,
                board: None,
                script: path.to_string(),
                heap_size: debugger.heap_size(),
                seconds: started.elapsed().as_secs_f64(),
                stops,
                emulated: debugger.emulated(),
                stepped: debugger.stepped(),
            },
            method: PeakMethod::Trace,
            checks,
            check_calls: outcome.checks.clone(),
            phases: debugger.records().to_vec(),
            events: debugger.events().to_vec(),
            dumps: outcome
                .dumps
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            phase_aliases: aliases,
            labels: debugger.labels().clone(),
            heap_map: debugger.heap_map(),
            error: outcome.error.clone(),
            exit_code,
        }));
        self.target = debugger.into_target();
        let mut out = printed.borrow().clone();
        for c in &outcome.checks {
            let word = match c.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Warn => "WARN",
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
        let page = memlife_report::write_html_report(report, Path::new(dir))?;
        Ok(format!("report written to {}\n", page.display()))
    }
}
