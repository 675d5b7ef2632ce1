//! `memlife audit`: run a Rhai script against the live target, print the checks, write JSON and
//! JUnit, exit 0 / 1 / 2.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use memlife_audit::model::Verdict;
use memlife_audit::report::{RunContext, now_rfc3339};
use memlife_audit::{AuditConfig, AuditReport, Debugger, PeakMethod, ScriptError};

use crate::cli::{AuditArgs, ProbeArgs, TargetArgs};
use crate::outputs::AuditOutputs;
use crate::runto::ensure_halted;
use crate::session::Session;

/// Seconds to wait for one breakpoint unless told otherwise.
const DEFAULT_TIMEOUT: f64 = 30.0;

fn load_config(args: &AuditArgs) -> Result<AuditConfig> {
    let path = match args.config.as_slice() {
        [] => Some(PathBuf::from("memlife.toml")).filter(|p| p.is_file()),
        [one] => Some(one.clone()),
        _ => bail!("internal error: several --config files reached a single audit"),
    };
    let mut cfg = match path {
        Some(p) => AuditConfig::load(&p)?,
        None => AuditConfig::default(),
    };
    // Flags win over the file.
    cfg.phases.extend(args.phases.iter().cloned());
    cfg.spans.extend(args.spans.iter().cloned());
    cfg.budgets.extend(args.budgets.iter().cloned());
    for warning in cfg.upgrade_budgets() {
        eprintln!("warning: {warning}");
    }
    Ok(cfg)
}

/// Flags win over memlife.toml.
fn target_args(args: &AuditArgs, cfg: &AuditConfig) -> Result<TargetArgs> {
    let t = &args.target;
    let c = &cfg.target;
    if t.is_given() {
        return Ok(TargetArgs {
            reset: c.reset.clone(),
            semihosting_dir: t
                .semihosting_dir
                .clone()
                .or_else(|| c.semihosting_dir.clone()),
            ..t.clone()
        });
    }
    let probe = c
        .probe
        .as_deref()
        .map(crate::probe_choice::ProbeChoice::parse)
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
        reset: c.reset.clone(),
        deadline: t.deadline,
        no_default_deadline: false,
        semihosting_dir: t
            .semihosting_dir
            .clone()
            .or_else(|| c.semihosting_dir.clone()),
    })
}

pub fn run(args: AuditArgs, verbose: u8) -> Result<ExitCode> {
    if let Some(targets) = crate::wide::targets(&args)? {
        return crate::wide::run(&args, verbose, targets);
    }
    let started = Instant::now();
    let script = args
        .script
        .clone()
        .context("no script given: memlife audit SCRIPT (e.g. scripts/lifecycle.rhai)")?;
    // What the user wrote is checked against the ELF; the bundled firmware's names fill in
    // what it does not say.
    let given = load_config(&args)?;
    let cfg = given.clone().with_lifecycle_defaults();
    let outputs = AuditOutputs::from_args(&args);
    outputs.check_kinds()?;
    // A baseline that cannot be read is a usage error, found before the target runs.
    let baseline = args
        .baseline
        .as_deref()
        .map(super::diff::read_run)
        .transpose()?;
    let elf = args
        .elf
        .clone()
        .or_else(|| cfg.elf.clone())
        .context("no firmware given: use --elf FILE or `elf = ...` in memlife.toml")?;
    let targets = target_args(&args, &cfg)?;
    let method = args
        .method
        .or(cfg.trace.method)
        .unwrap_or(PeakMethod::Trace);
    let mut run = RunContext {
        date: now_rfc3339(),
        started,
        elf: elf.display().to_string(),
        target: targets.describe(),
        board: targets.qemu.clone().or_else(|| targets.chip.clone()),
        script: script.display().to_string(),
        method,
        phase_aliases: cfg.phases.clone(),
    };
    // From here until the results are written, every output says this run has not finished:
    // no earlier run's results survive an interrupted or crashed one.
    for failure in outputs.write(&AuditReport::unfinished(&run), false) {
        eprintln!("memlife audit: {failure}; the audit runs on and writes the other outputs");
    }
    let (mut report, mut session) =
        match audit(&args, &script, &given, &cfg, &elf, &targets, &mut run) {
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
    let skipped = skipped(&report);
    if args.fail_on_skip && skipped > 0 {
        // A check not run fails the audit, in the exit code and in every output.
        report.exit_code = report.exit_code.max(1);
    }
    // Reports first: whatever happens to the target afterwards, they are on disk.
    let failures = outputs.write(&report, true);
    let close = session.take().map_or(Ok(()), Session::close);
    print_summary(&report, &script)?;
    if skipped > 0 {
        println!(
            "not every check ran: {skipped} skipped{}",
            if args.fail_on_skip {
                " (--fail-on-skip: exit 1)"
            } else {
                ", so this is a pass of the checks that ran only (--fail-on-skip makes a skip fail the audit)"
            }
        );
    }
    for failure in &failures {
        eprintln!("error: {failure}");
    }
    close?;
    if let Some(e) = &report.error {
        bail!("{}", script_error(&script, e));
    }
    if !failures.is_empty() {
        bail!(
            "{} of the audit's outputs could not be written (the others were)",
            failures.len()
        );
    }
    let mut code = report.exit_code;
    if let (Some(base), Some(path)) = (&baseline, &args.baseline) {
        code = code.max(against_baseline(base, path, &report, &given.diff)?);
    }
    Ok(ExitCode::from(code as u8))
}

/// Connects, runs the script and assembles the report; the session comes back open, for the
/// reports to be written before the target is let go.
fn audit(
    args: &AuditArgs,
    script: &Path,
    given: &AuditConfig,
    cfg: &AuditConfig,
    elf: &Path,
    targets: &TargetArgs,
    run: &mut RunContext,
) -> Result<(AuditReport, Option<Session>)> {
    let source = std::fs::read_to_string(script)
        .with_context(|| format!("cannot read script {}", script.display()))?;
    let symbols = Rc::new(super::load_symbols(elf)?);
    let functions = symbols
        .elf_symbols()
        .iter()
        .filter(|s| s.kind == memlife_dwarf::SymbolKind::Function)
        .map(|s| s.name.as_str())
        .chain(symbols.demangled_functions())
        .collect::<Vec<_>>();
    given
        .check_functions(&functions, &|n| symbols.function(n).is_some())
        .map_err(|e| anyhow::anyhow!("memlife.toml or flags: {e}"))?;
    given
        .check_globals(&|n| symbols.variable(n, &[]).is_some())
        .map_err(|e| anyhow::anyhow!("memlife.toml: {e}"))?;
    let mut session = Session::open(targets, elf, args.leave)?;
    let mut heap_opts = args.heap.clone();
    if heap_opts.allocator.is_none() {
        heap_opts.allocator = cfg.allocator.clone();
    }
    if heap_opts.poisoning.is_none() {
        heap_opts.poisoning = cfg.poisoning.clone();
    }
    if heap_opts.walk.is_none() {
        heap_opts.walk = cfg
            .walk
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e: String| anyhow::anyhow!("memlife.toml: {e}"))?;
    }
    let walker = {
        let target = session.target()?;
        ensure_halted(target)?;
        super::walker(&symbols, &heap_opts, Some(target))?
    };
    let timeout =
        memlife_core::limits::timeout_secs(args.timeout.or(cfg.timeout).unwrap_or(DEFAULT_TIMEOUT))
            .map_err(anyhow::Error::msg)?;
    let keep = args
        .keep_cycles
        .or(cfg.trace.keep_cycles)
        .map_or(Ok(Some(memlife_audit::history::DEFAULT_KEEP_CYCLES)), |k| {
            k.count()
        })
        .map_err(|e| anyhow::anyhow!("memlife.toml: [trace] {e}"))?;
    let target = session.lend()?;
    run.target = target.describe();
    let mut debugger = match Debugger::new(
        target,
        symbols.clone(),
        walker,
        cfg.clone(),
        run.method,
        timeout,
    ) {
        Ok(d) => d,
        Err((e, target)) => {
            session.give_back(target);
            session.close()?;
            return Err(e.into());
        }
    };
    debugger.set_keep_cycles(keep);
    if let Some(restart) = session.restart() {
        debugger.set_restart(restart);
    }
    let progress = crate::progress::Progress::new(std::io::stderr().is_terminal());
    debugger.set_observer(progress.observer());
    let printer = progress.printer();
    let (debugger, outcome) =
        memlife_audit::run_script(debugger, &source, &args.out, &cfg.budgets, printer);
    progress.finish();
    let Some(debugger) = debugger else {
        bail!("internal error: the script engine did not give the target back");
    };
    let report = AuditReport::assemble(run, &debugger, &outcome);
    session.give_back(debugger.into_target());
    Ok((report, Some(session)))
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

/// Checks the report says were not run.
fn skipped(report: &AuditReport) -> usize {
    report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Skip)
        .count()
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
    let (mut pass, mut fail, mut warn, mut skipped) = (0, 0, 0, 0);
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
            Verdict::Skip => {
                skipped += 1;
                "SKIP"
            }
        };
        // Names and messages may carry strings read from target RAM.
        let name = memlife_core::text::printable(&c.name);
        if c.message.is_empty() {
            writeln!(out, "{word} {name}")?;
        } else {
            let message = memlife_core::text::printable(&c.message);
            writeln!(out, "{word} {name}: {message}")?;
        }
    }
    writeln!(
        out,
        "{}: {pass} passed, {fail} failed, {warn} warnings{} ({} phases, {} allocation events, {:.1} s)",
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
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn audit_args(args: &[&str]) -> AuditArgs {
        match Cli::try_parse_from(args).unwrap().command {
            Command::Audit(a) => *a,
            _ => panic!("not audit"),
        }
    }

    /// A folder of this test's own: tests run in parallel threads of one process, and one
    /// test's clean-up must not remove another's file.
    fn config_dir(test: &str) -> PathBuf {
        std::env::temp_dir().join(format!("memlife-cfg-{}-{test}", std::process::id()))
    }

    fn config(test: &str, text: &str) -> AuditConfig {
        let dir = config_dir(test);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memlife.toml");
        std::fs::write(&path, text).unwrap();
        let cfg = AuditConfig::load(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        cfg
    }

    #[test]
    fn the_semihosting_dir_comes_from_the_flag_or_the_file_relative_to_it() {
        let cfg = config(
            "semihosting",
            "[target]\nqemu = \"netduinoplus2\"\nsemihosting_dir = \"sh\"\n",
        );
        let from_file = target_args(&audit_args(&["memlife", "audit", "s.rhai"]), &cfg).unwrap();
        assert_eq!(
            from_file.semihosting_dir,
            Some(config_dir("semihosting").join("sh"))
        );
        let flagged = audit_args(&[
            "memlife",
            "audit",
            "s.rhai",
            "--qemu",
            "netduinoplus2",
            "--semihosting-dir",
            "/srv/x",
        ]);
        let flagged = target_args(&flagged, &cfg).unwrap();
        assert_eq!(flagged.semihosting_dir, Some(PathBuf::from("/srv/x")));
        let none = target_args(
            &audit_args(&["memlife", "audit", "s.rhai"]),
            &AuditConfig::default(),
        )
        .unwrap();
        assert_eq!(none.semihosting_dir, None);
    }

    #[test]
    fn the_configured_reset_command_reaches_the_target_with_or_without_target_flags() {
        let cfg = config(
            "reset",
            "[target]\ngdb = \"127.0.0.1:3333\"\nreset = \"reset init\"\n",
        );
        let from_file = target_args(&audit_args(&["memlife", "audit", "s.rhai"]), &cfg).unwrap();
        assert_eq!(from_file.gdb.as_deref(), Some("127.0.0.1:3333"));
        assert_eq!(from_file.reset.as_deref(), Some("reset init"));
        let flagged = audit_args(&["memlife", "audit", "s.rhai", "--gdb", "h:1"]);
        let from_flags = target_args(&flagged, &cfg).unwrap();
        assert_eq!(from_flags.gdb.as_deref(), Some("h:1"));
        assert_eq!(from_flags.reset.as_deref(), Some("reset init"));
        let none = target_args(&flagged, &config("reset-empty", "")).unwrap();
        assert_eq!(none.reset, None);
    }
}
