//! `monitor audit FILE`: a Rhai audit script run against the target gdb is looking at, with the
//! phases it records kept for `monitor phases`.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::rc::Rc;

use memlife_audit::runner::{self, Audit, Subject};
use memlife_audit::session::Restart as EngineRestart;
use memlife_core::Target;
use memlife_heap::WalkerOptions;

use crate::bridge::Bridge;
use crate::error::{Context, Result};
use crate::options::Restart;

/// The server's restart lent to the audit engine for one `monitor audit`: a backend the server
/// started (a QEMU) is started afresh when the firmware's exit ended it, as `memlife audit
/// --qemu` does. The server takes it back after the audit.
struct LentRestart {
    slot: Rc<RefCell<Option<Restart>>>,
    /// Whether it started a fresh backend (the dump-on breakpoints go into it afterwards).
    used: Rc<Cell<bool>>,
}

impl EngineRestart for LentRestart {
    fn restart(&mut self) -> std::result::Result<Box<dyn Target>, String> {
        let mut slot = self.slot.borrow_mut();
        let start = slot
            .as_mut()
            .ok_or_else(|| "the server's restart is not lent out".to_string())?;
        let fresh = start().map_err(|e| crate::error::chain(&e))?;
        self.used.set(true);
        Ok(fresh)
    }

    fn describe(&self) -> String {
        "the target memlife serve started, afresh".into()
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
        let settings = memlife_plan::defaults::monitor_audit(self.link, self.tuning);
        let subject = Subject {
            elf: self.firmware.clone().unwrap_or_default(),
            target: self.target.describe(),
            board: None,
            script: path.to_string(),
        };
        let context = runner::context(subject, std::time::Instant::now(), &settings);
        let printed = Rc::new(RefCell::new(String::new()));
        let sink = Rc::clone(&printed);
        let printer: Rc<dyn Fn(&str)> = Rc::new(move |s: &str| {
            let mut p = sink.borrow_mut();
            p.push_str(s);
            p.push('\n');
        });
        let out_dir = self.places.dump_dir.join("memlife-out");
        // Only a backend the server started is started again; it comes back after the audit.
        let slot = Rc::new(RefCell::new(if self.started_backend {
            self.restart.take()
        } else {
            None
        }));
        let used = Rc::new(Cell::new(false));
        let restart = slot.borrow().is_some().then(|| {
            Box::new(LentRestart {
                slot: Rc::clone(&slot),
                used: Rc::clone(&used),
            }) as Box<dyn EngineRestart>
        });
        let audited = runner::run(
            &mut self.target,
            Audit {
                symbols: Rc::clone(&self.symbols),
                walker,
                settings,
                source: &source,
                out_dir: &out_dir,
                context,
                printer,
                progress: None,
                restart,
                fail_on_skip: false,
            },
        );
        if let Some(taken) = slot.borrow_mut().take() {
            self.restart = Some(taken);
        }
        if used.get() {
            self.set_dump_on_again()?;
        }
        let audited = audited.context("preparing the audit")?;
        self.link = audited.link;
        let report = audited.report;
        for r in &report.phases {
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
        let mut out = printed.borrow().clone();
        for c in &report.check_calls {
            let _ = writeln!(out, "{} {}: {}", c.verdict.word(), c.name, c.message);
        }
        if let Some(e) = &report.error {
            let _ = writeln!(out, "script error: {e}");
        }
        let _ = writeln!(
            out,
            "the target moved: run `maintenance flush register-cache` before looking at it"
        );
        self.last_audit = Some(Box::new(report));
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
