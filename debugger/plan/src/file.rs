//! `memlife.toml`: the settings that would otherwise be flags, kept beside the firmware, read
//! and checked ([`ConfigFile::load`]) before anything runs.
//!
//! ```toml
//! elf = "firmware/build/heap4-healthy.elf"
//! # allocator = "tlsf"             # when detection picks the wrong one
//! # poisoning = "light"            # ESP-IDF heap poisoning, when DWARF does not show it
//! # walk = "auto"                  # heap walks: bulk, sparse or auto (the link's cost decides)
//! [target]
//! qemu = "netduinoplus2"          # or gdb = "127.0.0.1:3333", or chip = "STM32F405RGTx"
//! # with chip: probe = "0483:374b", speed = 4000, connect_under_reset = false
//! # with gdb or qemu: reset = "reset halt"   (the server's monitor command; chosen if absent)
//! # with gdb or qemu: semihosting_dir = "sh"  (the only files the firmware may use; none if absent)
//! # halt_on = ["my_assert"]        # more functions that end an audit at once (vAssertCalled...)
//! [phases]                        # aliases scripts use with t.phase("load")
//! load = "model_load"
//! # run = { function = "inference_run", task = "Infer" }   # only task Infer's calls count
//! # release = { function = "model_release", caller = "infer_cycle" }
//! [spans]                         # nested calls recorded inside a phase
//! graph_build = "op_init"
//! [lifecycle]
//! cycle_starts = "load"           # the role whose every call begins a cycle (t.cycles)
//! # model = "load:1"              # what tells alternating models apart (default "auto")
//! [budgets]                       # numbers scripts read with budget("build_step")
//! build_step = 4096
//! # arena_spare = 4096             # scripts/arena.rhai: warn when an arena is this much too big
//! [trace]
//! method = "trace"                # trace | sample | watermark
//! skip = ["mem_alloc", "mem_free"]   # wrappers skipped when naming an allocation site
//! keep_cycles = 10                # cycles kept in full at each end of a long run ("all")
//! # allocations = true            # trace even when the script reads no allocation
//! # requests = false              # one stop per allocation: requested sizes not read
//! # scope = "phases"              # allocator breakpoints only while a phase is open (or ["run"])
//! [diff]                          # budgets on the change between two builds (memlife diff)
//! bytes = 256
//! percent = 5
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use memlife_audit::PeakMethod;
use memlife_audit::config::{
    AuditConfig, DEPRECATED_BUDGETS, LifecycleConfig, Scope, SpanLabels, TensorTable, TraceConfig,
    TraceScope,
};
use memlife_audit::observers::ModelKey;
use memlife_heap::{AllocatorKind, Poisoning, WalkStrategy};
use serde::{Deserialize, Deserializer};

use crate::error::PlanError;
use crate::keep_cycles::KeepCycles;

/// Where the target is, as `[target]` says it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetTable {
    /// QEMU machine to start.
    pub qemu: Option<String>,
    /// A running GDB server.
    pub gdb: Option<String>,
    /// A probe-rs chip name (real boards).
    pub chip: Option<String>,
    /// With `chip`: which debug probe, `VID:PID[:SERIAL]`.
    pub probe: Option<String>,
    /// With `chip`: SWD/JTAG clock in kHz.
    pub speed: Option<u32>,
    /// With `chip`: hold reset while attaching.
    #[serde(default)]
    pub connect_under_reset: bool,
    /// With `gdb` or `qemu`: the monitor command that resets the target and halts it, instead of
    /// the one memlife chooses for the server (`system_reset`, `reset halt`, `reset`).
    pub reset: Option<String>,
    /// With `gdb` or `qemu`: the one directory the firmware's semihosting calls may use
    /// (relative to this file); none by default.
    pub semihosting_dir: Option<PathBuf>,
    /// Functions that end an audit at once when the firmware calls them (its own assert or
    /// panic handlers), besides the ones memlife knows (`vAssertCalled`, `assert_failed`,
    /// `__assert_func`).
    #[serde(default)]
    pub halt_on: Vec<String>,
}

/// `[trace]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceTable {
    /// Peak method; `None` = the default (trace).
    pub method: Option<PeakMethod>,
    /// Functions skipped when naming an allocation site (allocation wrappers).
    pub skip: Vec<String>,
    /// Frames kept per allocation backtrace.
    pub backtrace: usize,
    /// Observed cycles kept in full at each end of a long run (`--keep-cycles` wins).
    pub keep_cycles: Option<KeepCycles>,
    /// Trace allocations (`true`) or not (`false`); absent: when the script reads them.
    pub allocations: Option<bool>,
    /// Read each allocation's requested size, a second stop per allocation (`true`), or stop
    /// once (`false`); absent: when the script or an output reads them.
    pub requests: Option<bool>,
    /// Where the allocator's breakpoints are armed: `everywhere`, `phases` or a list of phases.
    #[serde(deserialize_with = "crate::trace_scope::deserialize")]
    pub scope: TraceScope,
}

impl Default for TraceTable {
    fn default() -> Self {
        let engine = TraceConfig::default();
        TraceTable {
            method: None,
            skip: engine.skip,
            backtrace: engine.backtrace,
            keep_cycles: None,
            allocations: engine.allocations,
            requests: engine.requests,
            scope: engine.scope,
        }
    }
}

/// `[lifecycle]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LifecycleTable {
    /// The role whose every call begins a cycle.
    pub cycle_starts: Option<String>,
    /// What tells alternating models apart: `auto` (the default), `none`, `ROLE` or `ROLE:N`.
    #[serde(deserialize_with = "parsed")]
    pub model: Option<ModelKey>,
}

/// `[tensors]`: the firmware's tensor table, a global array of structs, and the fields that
/// describe each tensor.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorsTable {
    /// The global array.
    pub table: String,
    /// A global holding how many entries are in use; the whole array when absent.
    pub count: Option<String>,
    /// The field with the tensor's name, if any.
    pub name: Option<String>,
    /// The field with its address.
    #[serde(default = "TensorsTable::default_addr")]
    pub addr: String,
    /// The field with its size in bytes.
    #[serde(default = "TensorsTable::default_size")]
    pub size: String,
    /// The field with the first layer (span index) that uses it.
    #[serde(default = "TensorsTable::default_first")]
    pub first: String,
    /// The field with the last layer that uses it.
    #[serde(default = "TensorsTable::default_last")]
    pub last: String,
}

impl TensorsTable {
    fn default_addr() -> String {
        "addr".into()
    }
    fn default_size() -> String {
        "size".into()
    }
    fn default_first() -> String {
        "first".into()
    }
    fn default_last() -> String {
        "last".into()
    }
}

impl From<TensorsTable> for TensorTable {
    fn from(t: TensorsTable) -> Self {
        TensorTable {
            table: t.table,
            count: t.count,
            name: t.name,
            addr: t.addr,
            size: t.size,
            first: t.first,
            last: t.last,
            bundled: false,
        }
    }
}

/// `[labels.KEY]` (KEY a role or a span function, as in `[spans]`): how its spans are named.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelsTable {
    /// The argument (0-based) that tells the spans apart: an index, or with `string` the name.
    #[serde(default = "LabelsTable::default_arg")]
    pub arg: usize,
    /// The argument is a `char *` name, read from target memory.
    #[serde(default)]
    pub string: bool,
    /// A global array indexed by the argument.
    pub names: Option<String>,
    /// The struct field of `names`' elements that holds the name.
    pub field: Option<String>,
}

impl LabelsTable {
    fn default_arg() -> usize {
        1
    }
}

impl From<LabelsTable> for SpanLabels {
    fn from(l: LabelsTable) -> Self {
        SpanLabels {
            arg: l.arg,
            string: l.string,
            names: l.names,
            field: l.field,
        }
    }
}

/// The expected verdict of an example (`[expect]`).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Expected exit code of `memlife audit`.
    pub exit: i32,
    /// Checks expected to fail.
    #[serde(default)]
    pub failing: Vec<String>,
}

/// The whole file, as written (paths made relative to it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConfigFile {
    /// Firmware ELF.
    pub elf: Option<PathBuf>,
    /// Target.
    pub target: TargetTable,
    /// Allocator override.
    #[serde(deserialize_with = "parsed")]
    pub allocator: Option<AllocatorKind>,
    /// ESP-IDF heap-poisoning override.
    #[serde(deserialize_with = "parsed")]
    pub poisoning: Option<Poisoning>,
    /// How heap walks read the arena (`--walk` wins).
    #[serde(deserialize_with = "parsed")]
    pub walk: Option<WalkStrategy>,
    /// Phase aliases (`load` → `model_load`), from a function name or a table with `function`.
    #[serde(deserialize_with = "crate::scope::functions")]
    pub phases: BTreeMap<String, String>,
    /// Roles limited to a task's calls or a caller's (`[phases]` tables with `task` or
    /// `caller`), by role; read by [`ConfigFile::load`].
    #[serde(skip)]
    pub scopes: BTreeMap<String, Scope>,
    /// Spans per phase, by role or function (`graph_build` → `op_init`).
    pub spans: BTreeMap<String, String>,
    /// Budgets for scripts.
    pub budgets: BTreeMap<String, f64>,
    /// Cycles.
    pub lifecycle: LifecycleTable,
    /// The firmware's tensor table, if it keeps one.
    pub tensors: Option<TensorsTable>,
    /// How spans are named, by role or span function.
    pub labels: BTreeMap<String, LabelsTable>,
    /// Components of the peaks: a function or `file:line` site → a name (`weights`).
    pub components: BTreeMap<String, String>,
    /// Tracing.
    pub trace: TraceTable,
    /// Seconds to wait for any breakpoint.
    pub timeout: Option<f64>,
    /// A check not run (skipped) fails the audit; `--fail-on-skip` also sets it (either one
    /// does: the flag has no way to say no).
    pub fail_on_skip: bool,
    /// What the audit of this firmware is expected to say (examples/).
    pub expect: Option<Expectation>,
    /// Budgets on the change between two builds (`memlife diff`, `memlife audit --baseline`).
    pub diff: memlife_diff::Budgets,
    /// The targets of a wide run (`[[matrix]]`, read by [`crate::matrix`]); one audit ignores
    /// them, so the file can also be an entry's own settings.
    pub matrix: Vec<toml::Table>,
}

/// A value the file gives as a string and memlife reads with its `FromStr` (an allocator, a
/// poisoning mode, a walk strategy): a wrong one is a parse error at its line.
fn parsed<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = String>,
{
    Option::<String>::deserialize(d)?
        .map(|s| s.parse().map_err(serde::de::Error::custom))
        .transpose()
}

/// The TOML parser's message on one line (it spans several, with the line quoted).
fn one_line(e: &toml::de::Error) -> String {
    e.to_string().trim().replace('\n', " ")
}

impl ConfigFile {
    /// Reads a file; relative paths inside it are made relative to its directory.
    pub fn load(path: &Path) -> Result<Self, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlanError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let invalid = |message: String| PlanError::Invalid {
            path: path.display().to_string(),
            message,
        };
        let table: toml::Table = toml::from_str(&text).map_err(|e| invalid(one_line(&e)))?;
        crate::schema::check_names(&table).map_err(invalid)?;
        let scopes = crate::scope::scopes(&table).map_err(invalid)?;
        let mut file: ConfigFile = toml::from_str(&text).map_err(|e| invalid(one_line(&e)))?;
        file.scopes = scopes;
        if let Some(secs) = file.timeout
            && let Err(message) = memlife_core::limits::timeout_secs(secs)
        {
            return Err(invalid(message));
        }
        if let Some(Err(message)) = file.trace.keep_cycles.map(|k| k.count()) {
            return Err(invalid(format!("[trace] {message}")));
        }
        // TOML has nan and inf; a budget compared with either is never exceeded.
        if let Some((k, v)) = file.budgets.iter().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(format!(
                "[budgets] {k} = {v}: a budget must be a finite number"
            )));
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        let near = |p: &mut Option<PathBuf>| {
            if let Some(rel) = p.as_ref().filter(|p| p.is_relative()) {
                *p = Some(dir.join(rel));
            }
        };
        near(&mut file.elf);
        near(&mut file.target.semihosting_dir);
        Ok(file)
    }

    /// Renames deprecated budget keys to their current names; a key already under its current
    /// name wins. Returns one warning per renamed key, for the caller to print.
    pub fn upgrade_budgets(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        for (old, new) in DEPRECATED_BUDGETS {
            let Some(v) = self.budgets.remove(*old) else {
                continue;
            };
            let kept = if self.budgets.contains_key(*new) {
                format!("; `{new}` is also set and wins")
            } else {
                self.budgets.insert((*new).to_string(), v);
                String::new()
            };
            warnings.push(format!(
                "budget `{old}` is deprecated: call it `{new}` ([budgets] in memlife.toml){kept}"
            ));
        }
        warnings
    }

    /// What the file says the firmware's names mean, as the engine takes it.
    pub fn audit_config(&self) -> AuditConfig {
        AuditConfig {
            phases: self.phases.clone(),
            scopes: self.scopes.clone(),
            spans: self.spans.clone(),
            budgets: self.budgets.clone(),
            lifecycle: LifecycleConfig {
                cycle_starts: self.lifecycle.cycle_starts.clone(),
                model: self.lifecycle.model.clone().unwrap_or_default(),
            },
            tensors: self.tensors.clone().map(TensorTable::from),
            labels: self
                .labels
                .iter()
                .map(|(k, l)| (k.clone(), SpanLabels::from(l.clone())))
                .collect(),
            components: self.components.clone(),
            trace: TraceConfig {
                skip: self.trace.skip.clone(),
                backtrace: self.trace.backtrace,
                allocations: self.trace.allocations,
                requests: self.trace.requests,
                scope: self.trace.scope.clone(),
                // The outputs are the command line's (`AuditPlan::resolve`).
                requests_shown_by: Vec::new(),
            },
            halt_on: self.target.halt_on.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::keep_cycles::AllCycles;

    /// A file of its own for each test: tests run in parallel threads of one process.
    fn write(test: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("memlife-plan-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memlife.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn clean(path: &Path) {
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn parses_a_full_file_and_rejects_typos() {
        let path = write(
            "full",
            r#"
            elf = "fw.elf"
            allocator = "heap4"
            poisoning = "light"
            walk = "sparse"
            [target]
            qemu = "netduinoplus2"
            semihosting_dir = "sh"
            halt_on = ["my_assert"]
            [phases]
            load = "model_load"
            run = { function = "inference_run", task = "Infer" }
            [budgets]
            build_step = 4096
            [trace]
            method = "sample"
            skip = ["mem_alloc"]
            [expect]
            exit = 1
            failing = ["leak"]
            "#,
        );
        let file = ConfigFile::load(&path).unwrap();
        let dir = path.parent().unwrap();
        assert_eq!(file.elf.as_deref(), Some(dir.join("fw.elf").as_path()));
        assert_eq!(file.target.semihosting_dir, Some(dir.join("sh")));
        assert_eq!(file.allocator, Some(AllocatorKind::Heap4));
        assert_eq!(file.poisoning, Some(Poisoning::Light));
        assert_eq!(file.walk, Some(WalkStrategy::Sparse));
        assert_eq!(file.trace.method, Some(PeakMethod::Sample));
        assert_eq!(file.trace.backtrace, 8);
        assert_eq!(file.expect.as_ref().unwrap().exit, 1);
        let cfg = file.audit_config();
        assert_eq!(cfg.phase_function("load"), "model_load");
        assert_eq!(cfg.budgets["build_step"], 4096.0);
        assert_eq!(cfg.trace.skip, ["mem_alloc"]);
        assert_eq!(cfg.halt_on, ["my_assert"]);
        let (role, scope) = cfg.scope_of("inference_run").unwrap();
        assert_eq!((role, scope.describe().as_str()), ("run", "task Infer"));
        assert_eq!(cfg.scope_of("model_load"), None);
        let board: ConfigFile = toml::from_str(
            "[target]\nchip = \"STM32F405RGTx\"\nprobe = \"0483:374b\"\nspeed = 4000\nconnect_under_reset = true",
        )
        .unwrap();
        assert_eq!(board.target.chip.as_deref(), Some("STM32F405RGTx"));
        assert_eq!(board.target.probe.as_deref(), Some("0483:374b"));
        assert_eq!(board.target.speed, Some(4000));
        assert!(board.target.connect_under_reset);
        assert!(toml::from_str::<ConfigFile>("[budget]\nx = 1").is_err());
        assert!(toml::from_str::<ConfigFile>("[labels.run]\nargs = 0").is_err());
        clean(&path);
    }

    #[test]
    fn a_wrong_allocator_poisoning_or_walk_is_refused_at_its_line() {
        for (text, wanted) in [
            ("allocator = \"umm\"\n", "unknown allocator `umm`"),
            (
                "\npoisoning = \"heavy\"\n",
                "unknown heap poisoning `heavy`",
            ),
            ("\n\nwalk = \"fast\"\n", "expected bulk, sparse or auto"),
        ] {
            let path = write("typed", text);
            let e = ConfigFile::load(&path).unwrap_err().to_string();
            assert!(e.contains(wanted), "{e}");
            assert!(e.contains(&format!("line {}", text.lines().count())), "{e}");
            clean(&path);
        }
    }

    #[test]
    fn fail_on_skip_is_a_boolean_key() {
        let path = write("fail-on-skip", "elf = \"fw.elf\"\nfail_on_skip = true\n");
        assert!(ConfigFile::load(&path).unwrap().fail_on_skip);
        clean(&path);
        assert!(!ConfigFile::default().fail_on_skip);
        // A wrong type is named at its line, as the other keys' are; a typo gets the nearest.
        let path = write("fail-on-skip-type", "\nfail_on_skip = \"yes\"\n");
        let e = ConfigFile::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("invalid type: string \"yes\", expected a boolean") && e.contains("line 2"),
            "{e}"
        );
        clean(&path);
        let path = write("fail-on-skip-typo", "fail_on_skips = true\n");
        let e = ConfigFile::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("unknown key `fail_on_skips`; did you mean `fail_on_skip`?"),
            "{e}"
        );
        clean(&path);
    }

    #[test]
    fn tensors_and_labels_take_their_defaults() {
        let file: ConfigFile = toml::from_str(
            "[tensors]\ntable = \"g_plan\"\ncount = \"g_n\"\n[labels.run]\nnames = \"layer_names\"",
        )
        .unwrap();
        let cfg = file.audit_config();
        let table = cfg.tensors.unwrap();
        assert_eq!((table.addr.as_str(), table.last.as_str()), ("addr", "last"));
        assert!(!table.bundled);
        assert_eq!(cfg.labels["run"].arg, 1);
        assert!(!cfg.labels["run"].string);
    }

    #[test]
    fn diff_budgets_are_read_and_their_typos_named_with_the_line() {
        let path = write(
            "diff",
            "[diff]\nbytes = 100\n[diff.build_step]\nbytes = 4096\n",
        );
        let file = ConfigFile::load(&path).unwrap();
        let step = file.diff.limit(memlife_diff::figures::Kind::BuildStep);
        assert_eq!(step.absolute, 4096.0);
        assert_eq!(
            file.diff
                .limit(memlife_diff::figures::Kind::LoadPeak)
                .absolute,
            100.0
        );
        std::fs::write(&path, "elf = \"a.elf\"\n[diff]\nbyte = 100\n").unwrap();
        let e = ConfigFile::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("unknown key `byte` in [diff]; did you mean `bytes`?"),
            "{e}"
        );
        assert!(e.contains("line 2"), "{e}");
        clean(&path);
    }

    #[test]
    fn a_budget_of_nan_or_inf_is_refused() {
        let path = write("nan", "");
        for v in ["nan", "inf", "-inf"] {
            std::fs::write(&path, format!("[budgets]\nbuild_step = {v}\n")).unwrap();
            let e = ConfigFile::load(&path).unwrap_err().to_string();
            assert!(
                e.contains("[budgets] build_step") && e.contains("finite"),
                "{e}"
            );
        }
        std::fs::write(&path, "[budgets]\nbuild_step = 4096\n").unwrap();
        assert!(ConfigFile::load(&path).is_ok());
        clean(&path);
    }

    #[test]
    fn keep_cycles_is_a_positive_count_or_all() {
        let path = write("keep", "");
        for (text, want) in [("25", Some(25)), ("\"all\"", None)] {
            std::fs::write(&path, format!("[trace]\nkeep_cycles = {text}\n")).unwrap();
            let keep = ConfigFile::load(&path).unwrap().trace.keep_cycles.unwrap();
            assert_eq!(keep.count(), Ok(want), "{text}");
        }
        std::fs::write(&path, "[trace]\nkeep_cycles = \"all\"\n").unwrap();
        assert_eq!(
            ConfigFile::load(&path).unwrap().trace.keep_cycles,
            Some(KeepCycles::Word(AllCycles::All))
        );
        for text in ["0", "\"some\"", "-3"] {
            std::fs::write(&path, format!("[trace]\nkeep_cycles = {text}\n")).unwrap();
            let e = ConfigFile::load(&path).unwrap_err().to_string();
            assert!(e.contains("keep_cycles"), "{text}: {e}");
        }
        clean(&path);
    }

    #[test]
    fn deprecated_budget_names_become_the_current_ones_with_a_warning() {
        let mut file: ConfigFile =
            toml::from_str("[budgets]\niterations = 4\nswitches = 7\nbuild_step = 1").unwrap();
        let warnings = file.upgrade_budgets();
        assert_eq!(file.budgets["cycles"], 4.0);
        assert_eq!(file.budgets["more_cycles"], 7.0);
        assert!(!file.budgets.contains_key("iterations"));
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("`iterations` is deprecated: call it `cycles`"));
        // The current name wins over an old one.
        let mut both: ConfigFile =
            toml::from_str("[budgets]\nlifecycles = 10\ncycles = 3").unwrap();
        let warnings = both.upgrade_budgets();
        assert_eq!(both.budgets["cycles"], 3.0);
        assert!(warnings[0].contains("`cycles` is also set and wins"));
    }
}
