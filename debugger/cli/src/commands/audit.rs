//! `memlife audit`: run a Rhai script against the live target, print the checks, write JSON and
//! JUnit, exit 0 / 1 / 2.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use memlife_audit::model::Verdict;
use memlife_audit::report::RunContext;
use memlife_audit::runner::{self, Audit, Subject};
use memlife_audit::{AuditReport, ScriptError};
use memlife_plan::{AuditFlags, AuditPlan, HeapFlags, Outputs, TargetFlags, TargetPlan};

use crate::cli::{AuditArgs, Leave, ProbeArgs, TargetArgs};
use crate::outputs::AuditOutputs;
use crate::probe_choice::ProbeChoice;
use crate::runto::ensure_halted;
use crate::session::Session;

/// The flags of one audit, as the plan takes them.
fn flags(args: &AuditArgs) -> Result<AuditFlags> {
    let config = match args.config.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        _ => bail!("internal error: several --config files reached a single audit"),
    };
    let t = &args.target;
    let h = &args.heap;
    Ok(AuditFlags {
        script: args.script.clone(),
        config,
        elf: args.elf.clone(),
        target: TargetFlags {
            gdb: t.gdb.clone(),
            qemu: t.qemu.clone(),
            snapshot: t.snapshot.clone(),
            chip: t.chip.clone(),
            probe: t.probe.probe.as_ref().map(ProbeChoice::to_string),
            speed: t.probe.speed,
            connect_under_reset: t.probe.connect_under_reset,
            deadline: t.deadline,
            semihosting_dir: t.semihosting_dir.clone(),
            serial: t.serial.clone(),
        },
        heap: HeapFlags {
            allocator: h.allocator,
            poisoning: h.poisoning,
            heap_regions: h.heap_region.clone(),
            heap_break: h.heap_break,
            heap_limit: h.heap_limit,
            walk: h.walk,
        },
        method: args.method,
        phases: args.phases.clone(),
        spans: args.spans.clone(),
        budgets: args.budgets.clone(),
        keep_cycles: args.keep_cycles,
        timeout: args.timeout,
        outputs: Outputs {
            json: args.json.clone(),
            junit: args.junit.clone(),
            report: args.report.clone(),
            trace: args.trace.clone(),
            out_dir: args.out.clone(),
        },
        baseline: args.baseline.clone(),
        fail_on_skip: args.fail_on_skip,
    })
}

/// The plan's target as a session opens it, its probe read by the probe backend.
fn target_args(target: &TargetPlan) -> Result<TargetArgs> {
    let probe = target
        .probe
        .as_ref()
        .map(|p| ProbeChoice::parse(&p.text).map_err(|e| anyhow::anyhow!("{}: {e}", p.origin())))
        .transpose()?;
    Ok(TargetArgs {
        gdb: target.gdb.clone(),
        qemu: target.qemu.clone(),
        snapshot: target.snapshot.clone(),
        chip: target.chip.clone(),
        probe: ProbeArgs {
            probe,
            speed: target.speed,
            connect_under_reset: target.connect_under_reset,
        },
        reset: target.reset.clone(),
        deadline: target.deadline,
        no_default_deadline: false,
        semihosting_dir: target.semihosting_dir.clone(),
        serial: target.serial.clone(),
    })
}

pub fn run(args: AuditArgs, verbose: u8) -> Result<ExitCode> {
    if let Some(targets) = crate::wide::targets(&args)? {
        return crate::wide::run(&args, verbose, targets);
    }
    let started = Instant::now();
    let env = super::environment::read()?;
    let plan = AuditPlan::resolve(flags(&args)?, &env)?;
    for warning in &plan.warnings {
        eprintln!("warning: {warning}");
    }
    let outputs = AuditOutputs::new(&plan.outputs);
    outputs.check_kinds()?;
    // A baseline that cannot be read is a usage error, found before the target runs.
    let baseline = plan
        .baseline
        .as_deref()
        .map(super::diff::read_run)
        .transpose()?;
    let targets = target_args(&plan.target)?;
    let subject = Subject {
        elf: plan.elf.display().to_string(),
        target: plan.target.describe(),
        board: plan.target.board(),
        script: plan.script.display().to_string(),
    };
    let mut run = runner::context(subject, started, &plan.engine);
    // From here until the results are written, every output says this run has not finished:
    // no earlier run's results survive an interrupted or crashed one.
    for failure in outputs.write(&AuditReport::unfinished(&run), false) {
        eprintln!("memlife audit: {failure}; the audit runs on and writes the other outputs");
    }
    let (report, mut session) = match audit(&plan, &targets, args.leave, &mut run) {
        Ok(done) => done,
        Err(e) => {
            // No results: the outputs say why rather than "not finished".
            let report = AuditReport::without_results(&run, format!("{e:#}"));
            for failure in outputs.write(&report, false) {
                eprintln!("error: {failure}");
            }
            return Err(e);
        }
    };
    // Reports first: whatever happens to the target afterwards, they are on disk.
    let failures = outputs.write(&report, true);
    let close = session.take().map_or(Ok(()), Session::close);
    print_summary(&report, &plan.script, plan.fail_on_skip)?;
    for failure in &failures {
        eprintln!("error: {failure}");
    }
    close?;
    if let Some(e) = &report.error {
        bail!("{}", script_error(&plan.script, e));
    }
    if !failures.is_empty() {
        bail!(
            "{} of the audit's outputs could not be written (the others were)",
            failures.len()
        );
    }
    let mut code = report.exit_code;
    if let (Some(base), Some(path)) = (&baseline, &plan.baseline) {
        code = code.max(against_baseline(base, path, &report, &plan.diff)?);
    }
    Ok(ExitCode::from(code as u8))
}

/// Connects, runs the script and assembles the report; the session comes back open, for the
/// reports to be written before the target is let go.
fn audit(
    plan: &AuditPlan,
    targets: &TargetArgs,
    leave: Leave,
    run: &mut RunContext,
) -> Result<(AuditReport, Option<Session>)> {
    let source = std::fs::read_to_string(&plan.script)
        .with_context(|| format!("cannot read script {}", plan.script.display()))?;
    let symbols = Rc::new(super::load_symbols(&plan.elf)?);
    plan.check_names(&symbols)?;
    let mut session = Session::open(targets, &plan.elf, leave)?;
    // A QEMU memlife started is started again when its firmware's exit ends it.
    let restart = session.restart();
    let target = session.target_slot()?;
    ensure_halted(target.as_mut())?;
    let walker = super::walker(
        &symbols,
        plan.heap.allocator,
        &plan.heap.options,
        Some(target.as_mut()),
    )?;
    run.target = target.describe();
    let progress = crate::progress::Progress::new(std::io::stderr().is_terminal());
    let audited = runner::run(
        target,
        Audit {
            symbols,
            walker,
            settings: plan.engine.clone(),
            source: &source,
            out_dir: &plan.outputs.out_dir,
            context: run.clone(),
            printer: progress.printer(),
            progress: Some(progress.observer()),
            restart,
            fail_on_skip: plan.fail_on_skip,
        },
    );
    progress.finish();
    match audited {
        Ok(mut done) => {
            done.report.run.serial = session.serial_file().map(|p| p.display().to_string());
            Ok((done.report, Some(session)))
        }
        Err(e) => {
            session.close()?;
            Err(e.into())
        }
    }
}

/// `--baseline`: this run, as it is in memory, compared with the earlier report, the table
/// printed; 1 when a change is over budget.
fn against_baseline(
    base: &AuditReport,
    path: &Path,
    report: &AuditReport,
    budgets: &memlife_diff::Budgets,
) -> Result<i32> {
    memlife_diff::require_phases(report, "this audit")?;
    let base_name = path.display().to_string();
    let diff = memlife_diff::diff(base, report, (&base_name, "this audit"), budgets)?;
    println!();
    super::diff::print_table(&diff)?;
    Ok(diff.exit_code())
}

fn script_error(script: &Path, e: &ScriptError) -> String {
    match (e.line, e.column) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}: {}", script.display(), e.message),
        (Some(l), None) => format!("{}:{l}: {}", script.display(), e.message),
        _ => format!("{}: {}", script.display(), e.message),
    }
}

/// The checks, one a line, then the counts; when checks were skipped, a line saying the audit
/// did not check everything and whether that failed it (`fail_on_skip`).
fn print_summary(report: &AuditReport, script: &Path, fail_on_skip: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let (mut pass, mut fail, mut warn, mut skipped) = (0, 0, 0, 0);
    for c in &report.checks {
        match c.verdict {
            Verdict::Pass => pass += 1,
            Verdict::Fail => fail += 1,
            Verdict::Warn => warn += 1,
            Verdict::Skip => skipped += 1,
        }
        let word = c.verdict.word();
        // Names and messages may carry strings read from target RAM.
        let name = memlife_core::text::printable(&c.name);
        if c.message.is_empty() {
            writeln!(out, "{word} {name}")?;
        } else {
            let message = memlife_core::text::printable(&c.message);
            writeln!(out, "{word} {name}: {message}")?;
        }
    }
    // What the halts cost the firmware's own time, where the audit ran it.
    let halted = report
        .run
        .firmware_time
        .as_ref()
        .map_or_else(String::new, |t| format!("; {}", t.summary()));
    writeln!(
        out,
        "{}: {pass} passed, {fail} failed, {warn} warnings{} ({} phases, {} allocation events, {:.1} s{halted})",
        script.display(),
        if skipped > 0 {
            format!(", {skipped} skipped")
        } else {
            String::new()
        },
        report.totals.phases,
        report.totals.events,
        report.run.seconds
    )?;
    if skipped > 0 {
        let consequence = if fail_on_skip {
            " (--fail-on-skip: exit 1)"
        } else {
            ", so this is a pass of the checks that ran only (--fail-on-skip makes a skip fail the audit)"
        };
        writeln!(out, "not every check ran: {skipped} skipped{consequence}")?;
    }
    if let Some(serial) = &report.run.serial {
        writeln!(out, "serial output: {serial}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use clap::Parser;
    use memlife_heap::{AllocatorKind, WalkStrategy};
    use memlife_plan::ProbeText;

    use super::*;
    use crate::cli::{Cli, Command};

    fn audit_args(args: &[&str]) -> AuditArgs {
        match Cli::try_parse_from(args).unwrap().command {
            Command::Audit(a) => *a,
            _ => panic!("not audit"),
        }
    }

    #[test]
    fn every_flag_reaches_the_plan() {
        let args = audit_args(&[
            "memlife",
            "audit",
            "s.rhai",
            "--gdb",
            "h:1",
            "--semihosting-dir",
            "/srv/x",
            "--allocator",
            "nano",
            "--walk",
            "sparse",
            "--budget",
            "cycles=2",
            "--phase",
            "load=my_load",
            "--json",
            "a.json",
            "--out",
            "o",
            "--fail-on-skip",
        ]);
        let f = flags(&args).unwrap();
        assert_eq!(f.script.as_deref(), Some(Path::new("s.rhai")));
        assert_eq!(f.config, None);
        assert_eq!(f.target.gdb.as_deref(), Some("h:1"));
        assert_eq!(
            f.target.semihosting_dir.as_deref(),
            Some(Path::new("/srv/x"))
        );
        assert_eq!(f.heap.allocator, Some(AllocatorKind::Nano));
        assert_eq!(f.heap.walk, Some(WalkStrategy::Sparse));
        assert_eq!(f.budgets, [("cycles".to_string(), 2.0)]);
        assert_eq!(f.phases, [("load".to_string(), "my_load".to_string())]);
        assert_eq!(f.outputs.json.as_deref(), Some(Path::new("a.json")));
        assert_eq!(f.outputs.out_dir, Path::new("o"));
        assert!(f.fail_on_skip);
        assert!(
            !flags(&audit_args(&["memlife", "audit", "s.rhai"]))
                .unwrap()
                .fail_on_skip
        );
        let serial = audit_args(&[
            "memlife", "audit", "s.rhai", "--qemu", "m", "--serial", "stdio",
        ]);
        assert_eq!(
            flags(&serial).unwrap().target.serial,
            Some(memlife_plan::SerialChoice::Stdio)
        );
        let two = audit_args(&[
            "memlife", "audit", "s.rhai", "--config", "a", "--config", "b",
        ]);
        assert!(
            flags(&two)
                .unwrap_err()
                .to_string()
                .contains("internal error")
        );
    }

    #[test]
    fn a_probe_from_the_file_is_read_here_and_its_error_says_where_it_came_from() {
        let plan = |text: &str| TargetPlan {
            chip: Some("STM32F405RGTx".into()),
            probe: Some(ProbeText {
                text: text.into(),
                from_file: true,
            }),
            ..TargetPlan::default()
        };
        let args = target_args(&plan("qemu")).unwrap();
        assert_eq!(
            args.probe.probe,
            Some(ProbeChoice::Qemu {
                machine: crate::probe_choice::DEFAULT_MACHINE.into()
            })
        );
        let e = target_args(&plan("qemu:")).unwrap_err().to_string();
        assert!(e.starts_with("memlife.toml [target] probe: "), "{e}");
    }
}
