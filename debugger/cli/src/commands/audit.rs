//! `memlife audit`: run a Rhai script against the live target, print the checks, write JSON and
//! JUnit, exit 0 / 1 / 2.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use memlife_audit::model::Verdict;
use memlife_audit::report::{RunFacts, now_rfc3339, summarize};
use memlife_audit::{AuditConfig, AuditReport, Debugger, PeakMethod, ScriptError};

use crate::cli::{AuditArgs, ProbeArgs, TargetArgs};
use crate::runto::ensure_halted;
use crate::session::Session;

/// Seconds to wait for one breakpoint unless told otherwise.
const DEFAULT_TIMEOUT: f64 = 30.0;

fn load_config(args: &AuditArgs) -> Result<AuditConfig> {
    let path = match &args.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("memlife.toml")).filter(|p| p.is_file()),
    };
    let mut cfg = match path {
        Some(p) => AuditConfig::load(&p)?,
        None => AuditConfig::default(),
    };
    // Flags win over the file.
    cfg.phases.extend(args.phases.iter().cloned());
    cfg.spans.extend(args.spans.iter().cloned());
    cfg.budgets.extend(args.budgets.iter().cloned());
    Ok(cfg.with_lifecycle_defaults())
}

/// Flags win over memlife.toml.
fn target_args(args: &AuditArgs, cfg: &AuditConfig) -> Result<TargetArgs> {
    let t = &args.target;
    if t.is_given() {
        return Ok(t.clone());
    }
    let c = &cfg.target;
    let probe = c
        .probe
        .as_deref()
        .map(memlife_probe::ProbeSelector::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("memlife.toml [target] probe: {e}"))?;
    if c.chip.is_none() && (probe.is_some() || c.speed.is_some() || c.connect_under_reset) {
        bail!("memlife.toml [target]: probe, speed and connect_under_reset need chip = \"NAME\"");
    }
    Ok(TargetArgs {
        gdb: c.gdb.clone(),
        qemu: c.qemu.clone(),
        snapshot: None,
        chip: c.chip.clone(),
        probe: ProbeArgs {
            probe,
            speed: c.speed,
            connect_under_reset: c.connect_under_reset,
        },
    })
}

pub fn run(args: AuditArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let date = now_rfc3339();
    let cfg = load_config(&args)?;
    // Refuse unwritable report paths now, not after minutes of auditing.
    if let Some(dir) = args.report.as_deref().filter(|d| d.exists() && !d.is_dir()) {
        bail!(
            "--report {}: exists and is not a directory (the report is DIR/index.html)",
            dir.display()
        );
    }
    if let Some(file) = args.trace.as_deref().filter(|f| f.is_dir()) {
        bail!("--trace {}: is a directory, not a file", file.display());
    }
    let elf = args
        .elf
        .clone()
        .or_else(|| cfg.elf.clone())
        .context("no firmware given: use --elf FILE or `elf = ...` in memlife.toml")?;
    let source = std::fs::read_to_string(&args.script)
        .with_context(|| format!("cannot read script {}", args.script.display()))?;
    let symbols = Rc::new(super::load_symbols(&elf)?);
    let targets = target_args(&args, &cfg)?;
    let mut session = Session::open(&targets, &elf, &args.leave)?;
    let mut heap_opts = args.heap.clone();
    if heap_opts.allocator.is_none() {
        heap_opts.allocator = cfg.allocator.clone();
    }
    let walker = {
        let target = session.target()?;
        ensure_halted(target)?;
        super::walker(&symbols, &heap_opts, Some(target))?
    };
    let method: PeakMethod = match args.method.as_deref() {
        Some(m) => m.parse().map_err(anyhow::Error::msg)?,
        None => cfg.trace.method.unwrap_or(PeakMethod::Trace),
    };
    let timeout = Duration::from_secs_f64(args.timeout.or(cfg.timeout).unwrap_or(DEFAULT_TIMEOUT));
    let target = session.lend()?;
    let describe = target.describe();
    let mut debugger = match Debugger::new(
        target,
        symbols.clone(),
        walker,
        cfg.clone(),
        method,
        timeout,
    ) {
        Ok(d) => d,
        Err((e, target)) => {
            session.give_back(target);
            session.close()?;
            return Err(e.into());
        }
    };
    let progress = crate::progress::Progress::new(std::io::stderr().is_terminal());
    debugger.set_observer(progress.observer());
    let printer = progress.printer();
    let (debugger, outcome) =
        memlife_audit::run_script(debugger, &source, &args.out, &cfg.budgets, printer);
    progress.finish();
    let Some(debugger) = debugger else {
        bail!("internal error: the script engine did not give the target back");
    };
    let stops = debugger.progress().stops;
    let (emulated, stepped) = (debugger.emulated(), debugger.stepped());
    let heap_size = debugger.heap_size();
    let allocator = debugger.allocator().to_string();
    let phases = debugger.records().to_vec();
    let events = debugger.events().to_vec();
    let labels = debugger.labels().clone();
    let heap_map = debugger.heap_map();
    session.give_back(debugger.into_target());

    let checks = summarize(&outcome.checks);
    let exit = AuditReport::exit_code_for(&checks, outcome.error.as_ref());
    let report = AuditReport {
        run: RunFacts {
            memlife: env!("CARGO_PKG_VERSION").to_string(),
            date,
            elf: elf.display().to_string(),
            allocator,
            target: describe,
            board: targets.qemu.clone().or_else(|| targets.chip.clone()),
            script: args.script.display().to_string(),
            heap_size,
            seconds: started.elapsed().as_secs_f64(),
            stops,
            emulated,
            stepped,
        },
        method,
        checks,
        check_calls: outcome.checks.clone(),
        phases,
        events,
        dumps: outcome
            .dumps
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        phase_aliases: cfg.phases.clone(),
        labels,
        heap_map,
        error: outcome.error.clone(),
        exit_code: exit,
    };
    // Reports first: whatever happens to the target afterwards, they are on disk.
    if let Some(path) = &args.json {
        report
            .write_json(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.junit {
        report
            .write_junit(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(dir) = &args.report {
        let page = memlife_report::write_html_report(&report, dir)?;
        eprintln!("memlife audit: report written to {}", page.display());
    }
    if let Some(path) = &args.trace {
        memlife_report::write_trace(&report, path)?;
        eprintln!(
            "memlife audit: trace written to {} (open it in ui.perfetto.dev)",
            path.display()
        );
    }
    let close = session.close();
    print_summary(&report, &args.script)?;
    if let Some(e) = &outcome.error {
        close?;
        bail!("{}", script_error(&args.script, e));
    }
    close?;
    Ok(ExitCode::from(exit as u8))
}

fn script_error(script: &Path, e: &ScriptError) -> String {
    match (e.line, e.column) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}: {}", script.display(), e.message),
        (Some(l), None) => format!("{}:{l}: {}", script.display(), e.message),
        _ => format!("{}: {}", script.display(), e.message),
    }
}

fn print_summary(report: &AuditReport, script: &Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let (mut pass, mut fail, mut warn) = (0, 0, 0);
    for c in &report.checks {
        let word = match c.verdict {
            Verdict::Pass => {
                pass += 1;
                "PASS"
            }
            Verdict::Fail => {
                fail += 1;
                "FAIL"
            }
            Verdict::Warn => {
                warn += 1;
                "WARN"
            }
        };
        if c.message.is_empty() {
            writeln!(out, "{word} {}", c.name)?;
        } else {
            writeln!(out, "{word} {}: {}", c.name, c.message)?;
        }
    }
    writeln!(
        out,
        "{}: {pass} passed, {fail} failed, {warn} warnings ({} phases, {} allocation events, {:.1} s)",
        script.display(),
        report.phases.len(),
        report.events.len(),
        report.run.seconds
    )?;
    Ok(())
}
