//! [`AuditPlan`]: one audit, resolved once from memlife.toml and the flags (each flag wins over
//! the file, the bundled firmware's names fill in what neither says), and checked before any
//! target is touched. What is left to check needs the firmware ([`AuditPlan::check_names`]).

use std::path::PathBuf;

use memlife_audit::config::{AuditConfig, EngineSettings, PeakMethod};
use memlife_audit::history::DEFAULT_KEEP_CYCLES;
use memlife_dwarf::Symbols;
use memlife_heap::{AllocatorKind, LinkState, WalkStrategy, WalkerOptions};

use crate::defaults::with_bundled_defaults;
use crate::error::PlanError;
use crate::file::{ConfigFile, Expectation};
use crate::flags::{AuditFlags, Environment, Outputs};
use crate::target::TargetPlan;

/// Seconds to wait for one breakpoint unless told otherwise.
const DEFAULT_TIMEOUT: f64 = 30.0;

/// The settings file an audit reads when none is named: ./memlife.toml, when it is a file.
pub fn default_config() -> Option<PathBuf> {
    Some(PathBuf::from("memlife.toml")).filter(|p| p.is_file())
}

/// How the heap is walked.
#[derive(Debug, Clone, Default)]
pub struct HeapPlan {
    /// The allocator, when the user names it (else detected from the symbols).
    pub allocator: Option<AllocatorKind>,
    /// What the symbols cannot say (heap_5 regions, newlib's break and limit, poisoning).
    pub options: WalkerOptions,
}

/// One audit: what to run, on which target, with which settings, and where the results go.
#[derive(Debug, Clone)]
pub struct AuditPlan {
    /// The script.
    pub script: PathBuf,
    /// The firmware.
    pub elf: PathBuf,
    /// The target.
    pub target: TargetPlan,
    /// How the heap is walked.
    pub heap: HeapPlan,
    /// What the engine runs with (its walk strategy and link model included).
    pub engine: EngineSettings,
    /// The files the audit writes.
    pub outputs: Outputs,
    /// An earlier audit JSON report to compare this run with.
    pub baseline: Option<PathBuf>,
    /// Budgets on the change against the baseline (`[diff]`).
    pub diff: memlife_diff::Budgets,
    /// What the settings file expects the audit to say (`[expect]`).
    pub expect: Option<Expectation>,
    /// A check not run (skipped) fails the audit, as a failed one does (`--fail-on-skip` or
    /// memlife.toml's `fail_on_skip = true`).
    pub fail_on_skip: bool,
    /// Warnings for the user (deprecated budget names), to print before the run.
    pub warnings: Vec<String>,
    /// The names the user gave (file and flags, without the bundled defaults): the ones
    /// checked against the firmware.
    given: AuditConfig,
}

impl AuditPlan {
    /// Resolves `flags` over the settings file they name (or ./memlife.toml) with what the
    /// environment says.
    pub fn resolve(flags: AuditFlags, env: &Environment) -> Result<AuditPlan, PlanError> {
        let script = flags.script.clone().ok_or_else(|| {
            PlanError::Usage(
                "no script given: memlife audit SCRIPT (e.g. scripts/lifecycle.rhai)".into(),
            )
        })?;
        let mut file = match flags.config.clone().or_else(default_config) {
            Some(path) => ConfigFile::load(&path)?,
            None => ConfigFile::default(),
        };
        // Flags win over the file.
        file.phases.extend(flags.phases.iter().cloned());
        file.spans.extend(flags.spans.iter().cloned());
        file.budgets.extend(flags.budgets.iter().cloned());
        let mut warnings = file.upgrade_budgets();
        let given = file.audit_config();
        let elf = flags
            .elf
            .clone()
            .or_else(|| file.elf.clone())
            .ok_or_else(|| {
                PlanError::Usage(
                    "no firmware given: use --elf FILE or `elf = ...` in memlife.toml".into(),
                )
            })?;
        let target = TargetPlan::resolve(flags.target.clone(), &file.target)?
            .with_serial_default(&flags.outputs.out_dir)?;
        if let (None, Some(dir)) = (&flags.target.semihosting_dir, &file.target.semihosting_dir) {
            // A settings file someone else wrote (or a name injected into it) must not hand
            // the firmware host files silently.
            warnings.push(format!(
                "the settings file grants the firmware access to host files under {} \
                 ([target] semihosting_dir); remove it unless you meant to",
                dir.display()
            ));
        }
        let mut engine = engine_settings(&flags, &file, env, with_bundled_defaults(given.clone()))?;
        // The outputs that show requested sizes read them, as a script that reads them does.
        engine.config.trace.requests_shown_by = flags.outputs.showing_requests();
        let heap = HeapPlan {
            allocator: flags.heap.allocator.or(file.allocator),
            options: WalkerOptions {
                heap_regions: flags.heap.heap_regions.clone(),
                heap_break: flags.heap.heap_break,
                heap_limit: flags.heap.heap_limit,
                poisoning: flags.heap.poisoning.or(file.poisoning),
            },
        };
        Ok(AuditPlan {
            script,
            elf,
            target,
            heap,
            engine,
            outputs: flags.outputs,
            baseline: flags.baseline,
            diff: file.diff,
            expect: file.expect,
            // Either one: the flag cannot say no to the file (it has no `=false`).
            fail_on_skip: flags.fail_on_skip || file.fail_on_skip,
            warnings,
            given,
        })
    }

    /// The names the user gave are the firmware's: every function and global exists, every
    /// role is one. The error names the first that is not and the nearest that is.
    pub fn check_names(&self, symbols: &Symbols) -> Result<(), PlanError> {
        crate::names::check_against(&self.given, symbols).map_err(PlanError::from)
    }
}

/// The engine's part: method, timeout, kept cycles and walks, flags over file over defaults.
fn engine_settings(
    flags: &AuditFlags,
    file: &ConfigFile,
    env: &Environment,
    config: AuditConfig,
) -> Result<EngineSettings, PlanError> {
    let method = flags
        .method
        .or(file.trace.method)
        .unwrap_or(PeakMethod::Trace);
    let timeout = memlife_core::limits::timeout_secs(
        flags.timeout.or(file.timeout).unwrap_or(DEFAULT_TIMEOUT),
    )
    .map_err(PlanError::Usage)?;
    let keep_cycles = match flags.keep_cycles.or(file.trace.keep_cycles) {
        Some(keep) => keep
            .count()
            .map_err(|e| PlanError::Usage(format!("memlife.toml: [trace] {e}")))?,
        None => Some(DEFAULT_KEEP_CYCLES),
    };
    let strategy = flags.heap.walk.or(file.walk).unwrap_or(WalkStrategy::Auto);
    Ok(EngineSettings {
        config,
        method,
        timeout,
        keep_cycles,
        link: LinkState::new(strategy, env.link_model),
        tuning: env.tuning,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use memlife_audit::config::EngineTuning;
    use memlife_heap::{LinkModel, Poisoning};

    use std::path::Path;

    use super::*;
    use crate::keep_cycles::KeepCycles;

    fn config(test: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("memlife-plan-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memlife.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn flags(config: &Path) -> AuditFlags {
        AuditFlags {
            script: Some("s.rhai".into()),
            config: Some(config.to_path_buf()),
            ..AuditFlags::default()
        }
    }

    /// Issue 30, red team: a settings file that grants host file access says so every time.
    #[test]
    fn a_settings_file_granting_host_files_is_named_in_a_warning() {
        let path = config(
            "semihosting",
            "elf = \"fw.elf\"\n[target]\nqemu = \"netduinoplus2\"\nsemihosting_dir = \"/\"\n",
        );
        let plan = AuditPlan::resolve(flags(&path), &Environment::default()).unwrap();
        assert_eq!(plan.target.semihosting_dir, Some(PathBuf::from("/")));
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("access to host files under /")),
            "{:?}",
            plan.warnings
        );
        // The flag is the user's own choice: no warning.
        let mut flagged = flags(&path);
        flagged.target.semihosting_dir = Some("/srv/x".into());
        let plan = AuditPlan::resolve(flagged, &Environment::default()).unwrap();
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    }

    #[test]
    fn flags_win_over_the_file_and_the_bundled_names_fill_in_the_rest() {
        let path = config(
            "resolve",
            "elf = \"fw.elf\"\nallocator = \"nano\"\npoisoning = \"light\"\nwalk = \"sparse\"\ntimeout = 12\n\
             [target]\nqemu = \"netduinoplus2\"\n[phases]\nload = \"my_load\"\n[budgets]\niterations = 3\nbuild_step = 1\n\
             [trace]\nmethod = \"sample\"\nkeep_cycles = \"all\"\n",
        );
        let model = LinkModel {
            rtt_us: 1000.0,
            bytes_per_s: 5e5,
        };
        let env = Environment {
            link_model: Some(model),
            tuning: EngineTuning {
                host_resume: false,
                vector_catch: true,
            },
        };
        let from_file = AuditPlan::resolve(flags(&path), &env).unwrap();
        let dir = path.parent().unwrap();
        assert_eq!(from_file.elf, dir.join("fw.elf"));
        assert_eq!(from_file.target.qemu.as_deref(), Some("netduinoplus2"));
        assert_eq!(from_file.heap.allocator, Some(AllocatorKind::Nano));
        assert_eq!(from_file.heap.options.poisoning, Some(Poisoning::Light));
        let e = &from_file.engine;
        assert_eq!(e.method, PeakMethod::Sample);
        assert_eq!(e.timeout, std::time::Duration::from_secs(12));
        assert_eq!(e.keep_cycles, None);
        assert_eq!(e.link, LinkState::new(WalkStrategy::Sparse, Some(model)));
        assert!(!e.tuning.host_resume);
        assert_eq!(e.config.phase_function("load"), "my_load");
        assert_eq!(e.config.phase_function("build"), "graph_build");
        // A deprecated budget name is renamed, with a warning to print.
        assert_eq!(e.config.budgets["cycles"], 3.0);
        assert_eq!(from_file.warnings.len(), 1);
        assert!(!from_file.fail_on_skip);

        let mut over = flags(&path);
        over.elf = Some("other.elf".into());
        over.target.gdb = Some("127.0.0.1:1".into());
        over.heap.allocator = Some(AllocatorKind::Heap4);
        over.heap.walk = Some(WalkStrategy::Bulk);
        over.method = Some(PeakMethod::Trace);
        over.keep_cycles = Some(KeepCycles::Count(2));
        over.timeout = Some(3.0);
        over.phases.push(("load".into(), "their_load".into()));
        over.budgets.push(("cycles".into(), 7.0));
        over.fail_on_skip = true;
        let flagged = AuditPlan::resolve(over, &Environment::default()).unwrap();
        assert_eq!(flagged.elf, Path::new("other.elf"));
        assert_eq!(flagged.target.describe(), "gdb-remote 127.0.0.1:1");
        assert_eq!(flagged.target.qemu, None);
        assert_eq!(flagged.heap.allocator, Some(AllocatorKind::Heap4));
        assert!(flagged.fail_on_skip);
        let e = &flagged.engine;
        assert_eq!(e.method, PeakMethod::Trace);
        assert_eq!(e.keep_cycles, Some(2));
        assert_eq!(e.timeout, std::time::Duration::from_secs(3));
        assert_eq!(e.link, LinkState::new(WalkStrategy::Bulk, None));
        assert!(e.tuning.host_resume);
        assert_eq!(e.config.phase_function("load"), "their_load");
        // `cycles` given by a flag wins over the file's deprecated `iterations`.
        assert_eq!(e.config.budgets["cycles"], 7.0);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// memlife.toml's `fail_on_skip = true` fails on skips as the flag does; either one is
    /// enough (the flag cannot turn the file's off).
    #[test]
    fn fail_on_skip_comes_from_the_file_or_the_flag() {
        for (file, flag, wanted) in [
            (false, false, false),
            (true, false, true),
            (false, true, true),
            (true, true, true),
        ] {
            let path = config(
                "fail-on-skip",
                &format!("elf = \"fw.elf\"\nfail_on_skip = {file}\n"),
            );
            let mut f = flags(&path);
            f.fail_on_skip = flag;
            let plan = AuditPlan::resolve(f, &Environment::default()).unwrap();
            assert_eq!(plan.fail_on_skip, wanted, "file {file}, flag {flag}");
            let _ = std::fs::remove_dir_all(path.parent().unwrap());
        }
    }

    #[test]
    fn a_plan_needs_a_script_and_a_firmware() {
        let path = config("missing", "[target]\nqemu = \"netduinoplus2\"\n");
        let mut no_script = flags(&path);
        no_script.script = None;
        let e = AuditPlan::resolve(no_script, &Environment::default()).unwrap_err();
        assert!(e.to_string().starts_with("no script given"), "{e}");
        let e = AuditPlan::resolve(flags(&path), &Environment::default()).unwrap_err();
        assert!(e.to_string().starts_with("no firmware given"), "{e}");
        let defaults = AuditPlan::resolve(
            AuditFlags {
                elf: Some("fw.elf".into()),
                ..flags(&path)
            },
            &Environment::default(),
        )
        .unwrap();
        assert_eq!(defaults.engine.method, PeakMethod::Trace);
        assert_eq!(defaults.engine.timeout, std::time::Duration::from_secs(30));
        assert_eq!(defaults.engine.keep_cycles, Some(DEFAULT_KEEP_CYCLES));
        assert_eq!(defaults.engine.link, LinkState::default());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
