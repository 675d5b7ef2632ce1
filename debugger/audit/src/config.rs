//! `memlife.toml`: the settings that would otherwise be flags, kept beside the firmware.
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
//! [phases]                        # aliases scripts use with t.phase("load")
//! load = "model_load"
//! [spans]                         # nested calls recorded inside a phase
//! graph_build = "op_init"
//! [lifecycle]
//! cycle_starts = "load"           # the role whose every call begins a cycle (t.cycles)
//! # model = "load:1"              # what tells alternating models apart (default "auto")
//! [budgets]                       # numbers scripts read with budget("build_step")
//! build_step = 4096
//! [trace]
//! method = "trace"                # trace | sample | watermark
//! skip = ["mem_alloc", "mem_free"]   # wrappers skipped when naming an allocation site
//! keep_cycles = 10                # cycles kept in full at each end of a long run ("all")
//! [diff]                          # budgets on the change between two builds (memlife diff)
//! bytes = 256
//! percent = 5
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

// How the peak inside a phase is found: a report record, kept with the others in memlife-report.
pub use memlife_report::PeakMethod;

/// Where the target is, as `memlife.toml` can say it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
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
}

/// Tracing settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceConfig {
    /// Peak method; `None` = the allocator's default (trace).
    pub method: Option<PeakMethod>,
    /// Functions skipped when naming an allocation site (allocation wrappers).
    pub skip: Vec<String>,
    /// Frames kept per allocation backtrace.
    pub backtrace: usize,
    /// Observed cycles kept in full at each end of a long run (`--keep-cycles` wins); the
    /// cycles between are folded into exact totals (`crate::history`).
    pub keep_cycles: Option<crate::history::KeepCycles>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            method: None,
            skip: Vec::new(),
            backtrace: 8,
            keep_cycles: None,
        }
    }
}

/// How calls of the role functions group into cycles (`t.cycles(n)`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LifecycleConfig {
    /// The role whose every call begins a cycle; `None`: the first of load, build, run, switch,
    /// release the firmware has, else the first role of `[phases]`.
    pub cycle_starts: Option<String>,
    /// What tells the models apart where the firmware alternates between them: `auto` (the
    /// default), `none`, or a role's argument, `load` or `load:1` (see
    /// [`crate::observers::models`]).
    pub model: Option<String>,
}

impl LifecycleConfig {
    /// How cycles are keyed by model.
    pub fn model_key(&self) -> Result<crate::observers::ModelKey, String> {
        self.model.as_deref().map_or(
            Ok(crate::observers::ModelKey::Auto),
            crate::observers::ModelKey::parse,
        )
    }
}

/// The firmware's tensor table (`[tensors]`): a global array of structs, one per tensor, and
/// the fields that describe each, for the overlap check.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorTable {
    /// The global array.
    pub table: String,
    /// A global holding how many entries are in use; the whole array when absent.
    pub count: Option<String>,
    /// The field with the tensor's name (`char *` or `char[]`), if any.
    pub name: Option<String>,
    /// The field with its address.
    #[serde(default = "TensorTable::default_addr")]
    pub addr: String,
    /// The field with its size in bytes.
    #[serde(default = "TensorTable::default_size")]
    pub size: String,
    /// The field with the first layer (span index) that uses it.
    #[serde(default = "TensorTable::default_first")]
    pub first: String,
    /// The field with the last layer that uses it.
    #[serde(default = "TensorTable::default_last")]
    pub last: String,
    /// memlife's default (this repository's C engine), not the user's: a firmware whose global
    /// of that name has another shape simply has no table.
    #[serde(skip)]
    pub bundled: bool,
}

impl TensorTable {
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

    /// The bundled C engine's table (`g_tensors`, `g_tensor_count`).
    fn bundled() -> Self {
        TensorTable {
            table: "g_tensors".into(),
            count: Some("g_tensor_count".into()),
            name: Some("name".into()),
            addr: "addr".into(),
            size: "size".into(),
            first: "producer".into(),
            last: "last_consumer".into(),
            bundled: true,
        }
    }
}

/// How the spans of one function are named (`[labels.KEY]`, KEY a role or span function as in
/// `[spans]`): by an index argument looked up in a global name table, or by a string argument.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpanLabels {
    /// The argument (0-based) that tells the spans apart: an index, or with `string` the name.
    #[serde(default = "SpanLabels::default_arg")]
    pub arg: usize,
    /// The argument is a `char *` name, read from target memory.
    #[serde(default)]
    pub string: bool,
    /// A global array indexed by the argument: its element (or the element's `field`) names
    /// the span.
    pub names: Option<String>,
    /// The struct field of `names`' elements that holds the name.
    pub field: Option<String>,
}

impl SpanLabels {
    fn default_arg() -> usize {
        1
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Firmware ELF, relative to the file.
    pub elf: Option<PathBuf>,
    /// Target.
    pub target: TargetConfig,
    /// Allocator override.
    pub allocator: Option<String>,
    /// ESP-IDF heap-poisoning override (`none`, `light`, `comprehensive`).
    pub poisoning: Option<String>,
    /// How heap walks read the arena: `bulk`, `sparse` or `auto` (`--walk` wins).
    pub walk: Option<String>,
    /// Phase aliases (`load` → `model_load`).
    pub phases: BTreeMap<String, String>,
    /// Spans per phase function (`graph_build` → `op_init`).
    pub spans: BTreeMap<String, String>,
    /// Budgets for scripts.
    pub budgets: BTreeMap<String, f64>,
    /// Cycles.
    pub lifecycle: LifecycleConfig,
    /// The firmware's tensor table, if it keeps one.
    pub tensors: Option<TensorTable>,
    /// How spans are named, by role or span function.
    pub labels: BTreeMap<String, SpanLabels>,
    /// Components of the peaks: a function or `file:line` site → a name (`weights`).
    pub components: BTreeMap<String, String>,
    /// Tracing.
    pub trace: TraceConfig,
    /// Seconds to wait for any breakpoint.
    pub timeout: Option<f64>,
    /// What the audit of this firmware is expected to say (examples/; informational).
    pub expect: Option<Expectation>,
    /// Budgets on the change between two builds (`memlife diff`, `memlife audit --baseline`).
    pub diff: memlife_diff::Budgets,
    /// The targets of a wide run (`[[matrix]]`), read by `memlife audit` before any target
    /// runs; one audit ignores them, so the file can also be an entry's own settings.
    pub matrix: Vec<toml::Table>,
}

/// The expected verdict of an example.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Expected exit code of `memlife audit`.
    pub exit: i32,
    /// Checks expected to fail.
    #[serde(default)]
    pub failing: Vec<String>,
}

/// Budget names earlier scripts used, and the one name each stands for now. `cycles` is how
/// many lifecycles a script runs, whatever the script; `more_cycles` the untraced ones after
/// them (leak.rhai).
pub const DEPRECATED_BUDGETS: &[(&str, &str)] = &[
    ("iterations", "cycles"),
    ("lifecycles", "cycles"),
    ("switches", "more_cycles"),
];

/// The current name of a budget (itself unless deprecated).
pub fn budget_name(name: &str) -> &str {
    DEPRECATED_BUDGETS
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new)
}

/// The roles memlife knows by name; `[phases]` may add any other.
pub const ROLES: [&str; 5] = ["load", "build", "run", "switch", "release"];

/// The tables of `memlife.toml` and their keys (`None`: any key, a name the user chooses).
const SCHEMA: &[(&str, Option<&[&str]>)] = &[
    (
        "target",
        Some(&[
            "qemu",
            "gdb",
            "chip",
            "probe",
            "speed",
            "connect_under_reset",
            "reset",
            "semihosting_dir",
        ]),
    ),
    ("phases", None),
    ("spans", None),
    ("labels", None),
    ("components", None),
    ("budgets", None),
    (
        "trace",
        Some(&["method", "skip", "backtrace", "keep_cycles"]),
    ),
    ("lifecycle", Some(&["cycle_starts", "model"])),
    (
        "tensors",
        Some(&["table", "count", "name", "addr", "size", "first", "last"]),
    ),
    ("expect", Some(&["exit", "failing"])),
    // Checked by memlife_diff::Budgets, which knows the figures.
    ("diff", None),
];

/// Top-level keys that are values, not tables.
const TOP_KEYS: &[&str] = &["elf", "allocator", "timeout", "matrix"];

/// `; did you mean `X`?` for the candidate nearest to `name`, or nothing when none is near.
pub fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let best = candidates
        .map(|c| (strsim::levenshtein(name, c), c))
        .filter(|(d, c)| *d <= (name.len().max(c.len()) / 2).max(2))
        .min();
    best.map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}

/// Every table and key of a parsed file is one memlife knows; the error names the first that
/// is not and the nearest that is.
fn check_names(table: &toml::Table) -> Result<(), String> {
    let tables = || SCHEMA.iter().map(|(t, _)| *t);
    for (key, value) in table {
        if let Some((_, keys)) = SCHEMA.iter().find(|(t, _)| t == key) {
            let (Some(keys), Some(inner)) = (keys, value.as_table()) else {
                continue;
            };
            for k in inner.keys() {
                if !keys.contains(&k.as_str()) {
                    return Err(format!(
                        "unknown key `{k}` in [{key}]{}",
                        nearest(k, keys.iter().copied())
                    ));
                }
            }
        } else if !TOP_KEYS.contains(&key.as_str()) {
            let what = if value.is_table() {
                format!("unknown table [{key}]")
            } else {
                format!("unknown key `{key}`")
            };
            return Err(format!(
                "{what}{}",
                nearest(key, tables().chain(TOP_KEYS.iter().copied()))
            ));
        }
    }
    Ok(())
}

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid.
    #[error("{path}: {message}")]
    Invalid {
        /// Path.
        path: String,
        /// What is wrong, with line and column.
        message: String,
    },
}

impl AuditConfig {
    /// The defaults for the bundled firmware's lifecycle: phases and spans by their function names.
    pub fn with_lifecycle_defaults(mut self) -> Self {
        for (alias, func) in [
            ("load", "model_load"),
            ("build", "graph_build"),
            ("run", "inference_run"),
            ("release", "model_release"),
            ("switch", "model_switch"),
        ] {
            self.phases
                .entry(alias.into())
                .or_insert_with(|| func.into());
        }
        self.spans
            .entry("graph_build".into())
            .or_insert_with(|| "op_init".into());
        self.spans
            .entry("inference_run".into())
            .or_insert_with(|| "op_invoke".into());
        self.tensors.get_or_insert_with(TensorTable::bundled);
        for f in ["op_init", "op_invoke"] {
            self.labels.entry(f.into()).or_insert_with(|| SpanLabels {
                arg: 1,
                string: false,
                names: Some("g_ops".into()),
                field: Some("name".into()),
            });
        }
        self
    }

    /// Reads a file; relative paths inside it are made relative to its directory.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.display().to_string(),
            message,
        };
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| invalid(e.to_string().trim().replace('\n', " ")))?;
        check_names(&table).map_err(invalid)?;
        let mut cfg: AuditConfig =
            toml::from_str(&text).map_err(|e| invalid(e.to_string().trim().replace('\n', " ")))?;
        if let Some(secs) = cfg.timeout
            && let Err(message) = memlife_core::limits::timeout_secs(secs)
        {
            return Err(invalid(message));
        }
        if let Some(Err(message)) = cfg.trace.keep_cycles.map(|k| k.count()) {
            return Err(invalid(format!("[trace] {message}")));
        }
        // TOML has nan and inf; a budget compared with either is never exceeded.
        if let Some((k, v)) = cfg.budgets.iter().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(format!(
                "[budgets] {k} = {v}: a budget must be a finite number"
            )));
        }
        if let (Some(elf), Some(dir)) = (&cfg.elf, path.parent())
            && elf.is_relative()
        {
            cfg.elf = Some(dir.join(elf));
        }
        if let (Some(sh), Some(dir)) = (&cfg.target.semihosting_dir, path.parent())
            && sh.is_relative()
        {
            cfg.target.semihosting_dir = Some(dir.join(sh));
        }
        Ok(cfg)
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

    /// The span function recorded inside `function`: `[spans]` keyed by a role that stands for
    /// it (`run = "layer_forward"`), else by the function itself (`inference_run = "op_invoke"`).
    pub fn span_of(&self, function: &str) -> Option<&str> {
        self.phases
            .iter()
            .filter(|(_, f)| f.as_str() == function)
            .find_map(|(role, _)| self.spans.get(role))
            .or_else(|| self.spans.get(function))
            .map(String::as_str)
    }

    /// Checks the names `memlife.toml` gives against the firmware: every `[phases]` and
    /// `[spans]` function must be `known` (the ELF has it, by linkage or C++ name), and a
    /// `[spans]` key a role or a function; `functions` are the names suggested instead.
    /// The error names the first wrong one and the nearest valid name.
    pub fn check_functions(
        &self,
        functions: &[&str],
        known: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        for (role, function) in &self.phases {
            if !known(function) {
                return Err(format!(
                    "[phases] {role}: no function `{function}` in the ELF{}",
                    nearest(function, functions.iter().copied())
                ));
            }
        }
        let mut roles: Vec<&str> = ROLES.to_vec();
        roles.extend(self.phases.keys().map(String::as_str));
        for (key, function) in &self.spans {
            if !roles.contains(&key.as_str()) && !known(key) {
                let candidates = functions.iter().chain(roles.iter()).copied();
                return Err(format!(
                    "[spans] `{key}` is neither a role (load, build, run, switch, release or one in [phases]) nor a function in the ELF{}",
                    nearest(key, candidates)
                ));
            }
            if !known(function) {
                return Err(format!(
                    "[spans] {key}: no function `{function}` in the ELF{}",
                    nearest(function, functions.iter().copied())
                ));
            }
        }
        for (key, l) in &self.labels {
            if !roles.contains(&key.as_str()) && !known(key) {
                return Err(format!(
                    "[labels] `{key}` is neither a role nor a function in the ELF{}",
                    nearest(key, functions.iter().chain(roles.iter()).copied())
                ));
            }
            if l.string && l.names.is_some() {
                return Err(format!(
                    "[labels.{key}]: `string = true` and `names` exclude each other (the argument is either the name or an index into names)"
                ));
            }
            if l.arg > 3 {
                return Err(format!(
                    "[labels.{key}] arg = {}: memlife reads the first four arguments (0 to 3)",
                    l.arg
                ));
            }
        }
        for (key, name) in &self.components {
            if !crate::composition::is_site_key(key) && !known(key) {
                return Err(format!(
                    "[components] `{key}` is neither a function in the ELF nor a `file:line` site{}",
                    nearest(key, functions.iter().copied())
                ));
            }
            if name.trim().is_empty() {
                return Err(format!("[components] `{key}`: the component name is empty"));
            }
        }
        if let Some(start) = &self.lifecycle.cycle_starts
            && !roles.contains(&start.as_str())
        {
            return Err(format!(
                "[lifecycle] cycle_starts: `{start}` is not a role (load, build, run, switch, release or one in [phases]){}",
                nearest(start, roles.iter().copied())
            ));
        }
        if let crate::observers::ModelKey::Arg { role, .. } = self.lifecycle.model_key()?
            && !roles.contains(&role.as_str())
        {
            return Err(format!(
                "[lifecycle] model: `{role}` is not a role (load, build, run, switch, release or one in [phases]){}",
                nearest(&role, roles.iter().copied())
            ));
        }
        Ok(())
    }

    /// The globals `[tensors]` and `[labels]` name exist (`known`); the error names the first
    /// that does not.
    pub fn check_globals(&self, known: &dyn Fn(&str) -> bool) -> Result<(), String> {
        if let Some(t) = &self.tensors {
            for name in std::iter::once(&t.table).chain(t.count.as_ref()) {
                if !known(name) {
                    return Err(format!("[tensors]: no global `{name}` in the ELF"));
                }
            }
        }
        for (key, l) in &self.labels {
            if let Some(names) = &l.names
                && !known(names)
            {
                return Err(format!(
                    "[labels.{key}] names: no global `{names}` in the ELF"
                ));
            }
        }
        Ok(())
    }

    /// Every role this configuration names, known ones first in lifecycle order (load, build,
    /// run, switch, release), then the others of `[phases]` by name, with their functions.
    pub fn roles(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = ROLES
            .iter()
            .filter_map(|r| self.phases.get_key_value(*r))
            .map(|(r, f)| (r.as_str(), f.as_str()))
            .collect();
        out.extend(
            self.phases
                .iter()
                .filter(|(r, _)| !ROLES.contains(&r.as_str()))
                .map(|(r, f)| (r.as_str(), f.as_str())),
        );
        out
    }

    /// How the spans of `span_fn` are named: `[labels]` keyed by the span function itself, else
    /// by a role whose phase records it (`[spans] run = "layer_forward"`, `[labels.run]`).
    pub fn labels_of(&self, span_fn: &str) -> Option<&SpanLabels> {
        self.labels.get(span_fn).or_else(|| {
            self.phases
                .iter()
                .filter(|(_, f)| self.span_of(f) == Some(span_fn))
                .find_map(|(role, _)| self.labels.get(role))
        })
    }

    /// The function a phase name stands for (an alias or the function itself).
    pub fn phase_function<'a>(&'a self, name: &'a str) -> &'a str {
        self.phases.get(name).map_or(name, String::as_str)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_a_full_file_and_rejects_typos() {
        let cfg: AuditConfig = toml::from_str(
            r#"
            elf = "fw.elf"
            allocator = "heap4"
            poisoning = "light"
            walk = "sparse"
            [target]
            qemu = "netduinoplus2"
            [phases]
            load = "model_load"
            [budgets]
            build_step = 4096
            [trace]
            method = "sample"
            skip = ["mem_alloc"]
            [expect]
            exit = 1
            failing = ["leak"]
            "#,
        )
        .unwrap();
        assert_eq!(cfg.phase_function("load"), "model_load");
        assert_eq!(cfg.poisoning.as_deref(), Some("light"));
        assert_eq!(cfg.walk.as_deref(), Some("sparse"));
        assert_eq!(cfg.phase_function("graph_build"), "graph_build");
        assert_eq!(cfg.budgets["build_step"], 4096.0);
        assert_eq!(cfg.trace.method, Some(PeakMethod::Sample));
        assert_eq!(cfg.trace.backtrace, 8);
        assert!(toml::from_str::<AuditConfig>("[budget]\nx = 1").is_err());
        let board: AuditConfig = toml::from_str(
            "[target]\nchip = \"STM32F405RGTx\"\nprobe = \"0483:374b\"\nspeed = 4000\nconnect_under_reset = true",
        )
        .unwrap();
        assert_eq!(board.target.chip.as_deref(), Some("STM32F405RGTx"));
        assert_eq!(board.target.probe.as_deref(), Some("0483:374b"));
        assert_eq!(board.target.speed, Some(4000));
        assert!(board.target.connect_under_reset);
        let cfg = cfg.with_lifecycle_defaults();
        assert_eq!(cfg.spans["graph_build"], "op_init");
    }

    #[test]
    fn unknown_tables_keys_roles_and_functions_name_the_nearest_valid_one() {
        let table = |t: &str| check_names(&toml::from_str::<toml::Table>(t).unwrap());
        assert_eq!(
            table("[budget]\nx = 1").unwrap_err(),
            "unknown table [budget]; did you mean `budgets`?"
        );
        assert_eq!(
            table("[target]\nqemuu = \"x\"").unwrap_err(),
            "unknown key `qemuu` in [target]; did you mean `qemu`?"
        );
        assert_eq!(
            table("elff = \"a.elf\"").unwrap_err(),
            "unknown key `elff`; did you mean `elf`?"
        );
        assert!(table("elf = \"a\"\n[phases]\nmy_role = \"f\"\n[budgets]\nany = 1").is_ok());
        let funcs = ["nn_open", "nn_invoke", "layer_forward"];
        let cfg: AuditConfig =
            toml::from_str("[components]\nnn_opne = \"weights\"\n\"loader.c:12\" = \"file\"")
                .unwrap();
        assert_eq!(
            cfg.check_functions(&funcs, &|n| funcs.contains(&n))
                .unwrap_err(),
            "[components] `nn_opne` is neither a function in the ELF nor a `file:line` site; did you mean `nn_open`?"
        );
        let cfg: AuditConfig =
            toml::from_str("[components]\nnn_open = \"weights\"\n\"loader.c:12\" = \"file\"")
                .unwrap();
        assert_eq!(cfg.check_functions(&funcs, &|n| funcs.contains(&n)), Ok(()));
        let cfg: AuditConfig = toml::from_str("[phases]\nload = \"nn_opne\"").unwrap();
        assert_eq!(
            cfg.check_functions(&funcs, &|n| funcs.contains(&n))
                .unwrap_err(),
            "[phases] load: no function `nn_opne` in the ELF; did you mean `nn_open`?"
        );
        let cfg: AuditConfig =
            toml::from_str("[phases]\nrun = \"nn_invoke\"\n[spans]\nrnu = \"layer_forward\"")
                .unwrap();
        let e = cfg
            .check_functions(&funcs, &|n| funcs.contains(&n))
            .unwrap_err();
        assert!(e.starts_with("[spans] `rnu` is neither a role"), "{e}");
        assert!(e.ends_with("did you mean `run`?"), "{e}");
        let cfg: AuditConfig =
            toml::from_str("[phases]\nrun = \"nn_invoke\"\n[spans]\nrun = \"layer_forward\"")
                .unwrap();
        assert_eq!(cfg.check_functions(&funcs, &|n| funcs.contains(&n)), Ok(()));
        // A role key names the spans of the function the role stands for, over the defaults.
        let cfg = cfg.with_lifecycle_defaults();
        assert_eq!(cfg.span_of("nn_invoke"), Some("layer_forward"));
        assert_eq!(cfg.span_of("graph_build"), Some("op_init"));
        assert_eq!(cfg.span_of("model_load"), None);
    }

    #[test]
    fn lifecycle_labels_and_tensors_are_checked_against_roles_and_the_elf() {
        let funcs = ["nn_open", "nn_invoke", "layer_forward"];
        let known = |n: &str| funcs.contains(&n);
        let cfg = |t: &str| toml::from_str::<AuditConfig>(t).unwrap();
        let base =
            "[phases]\nload = \"nn_open\"\nrun = \"nn_invoke\"\n[spans]\nrun = \"layer_forward\"\n";
        let e = cfg(&format!("{base}[lifecycle]\ncycle_starts = \"lod\""))
            .check_functions(&funcs, &known)
            .unwrap_err();
        assert!(e.contains("cycle_starts: `lod` is not a role"), "{e}");
        assert!(e.ends_with("did you mean `load`?"), "{e}");
        let e = cfg(&format!("{base}[lifecycle]\nmodel = \"laod:1\""))
            .check_functions(&funcs, &known)
            .unwrap_err();
        assert!(
            e.contains("model: `laod` is not a role") && e.ends_with("did you mean `load`?"),
            "{e}"
        );
        let e = cfg(&format!("{base}[lifecycle]\nmodel = \"load:7\""))
            .check_functions(&funcs, &known)
            .unwrap_err();
        assert!(e.contains("0 to 3"), "{e}");
        for ok in ["auto", "none", "load", "run:2"] {
            let c = cfg(&format!("{base}[lifecycle]\nmodel = \"{ok}\""));
            assert_eq!(c.check_functions(&funcs, &known), Ok(()), "{ok}");
        }
        let ok = cfg(&format!(
            "{base}[lifecycle]\ncycle_starts = \"run\"\n[labels.run]\narg = 0\nnames = \"layer_names\"\n[labels.layer_forward]\nstring = true"
        ));
        assert_eq!(ok.check_functions(&funcs, &known), Ok(()));
        // A role key names the spans of the function the role stands for.
        assert_eq!(ok.labels_of("layer_forward").unwrap().arg, 1);
        let by_role = cfg(&format!("{base}[labels.run]\narg = 0"));
        assert_eq!(by_role.labels_of("layer_forward").unwrap().arg, 0);
        assert!(by_role.labels_of("nn_open").is_none());
        assert!(
            ok.check_globals(&|n| n != "layer_names")
                .unwrap_err()
                .contains("[labels.run] names: no global `layer_names`")
        );
        let e = cfg(&format!("{base}[labels.rnu]\narg = 0"))
            .check_functions(&funcs, &known)
            .unwrap_err();
        assert!(e.starts_with("[labels] `rnu` is neither a role"), "{e}");
        let e = cfg(&format!("{base}[labels.run]\nstring = true\nnames = \"x\""))
            .check_functions(&funcs, &known)
            .unwrap_err();
        assert!(e.contains("exclude each other"), "{e}");
        let e = cfg(&format!("{base}[labels.run]\narg = 4"))
            .check_functions(&funcs, &known)
            .unwrap_err();
        assert!(e.contains("first four arguments"), "{e}");
        assert!(toml::from_str::<AuditConfig>("[labels.run]\nargs = 0").is_err());
        // [tensors]: the fields default to addr, size, first, last; the globals must exist.
        let t = cfg("[tensors]\ntable = \"g_plan\"\ncount = \"g_n\"");
        let table = t.tensors.clone().unwrap();
        assert_eq!((table.addr.as_str(), table.last.as_str()), ("addr", "last"));
        assert!(!table.bundled);
        assert_eq!(
            t.check_globals(&|n| n == "g_plan").unwrap_err(),
            "[tensors]: no global `g_n` in the ELF"
        );
        assert!(
            check_names(&toml::from_str("[tensors]\ntabel = \"x\"").unwrap())
                .unwrap_err()
                .contains("did you mean `table`?")
        );
        // Roles in lifecycle order, then the user's own.
        let mine = cfg("[phases]\nwarmup = \"w\"\nrelease = \"r\"\nload = \"l\"");
        assert_eq!(
            mine.roles(),
            [("load", "l"), ("release", "r"), ("warmup", "w")]
        );
        // The bundled defaults fill in only what the file does not say.
        let d = AuditConfig::default().with_lifecycle_defaults();
        assert!(d.tensors.unwrap().bundled);
        assert_eq!(d.labels["op_invoke"].names.as_deref(), Some("g_ops"));
    }

    #[test]
    fn diff_budgets_are_read_and_their_typos_named_with_the_line() {
        let dir = std::env::temp_dir().join(format!("memlife-cfg-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memlife.toml");
        std::fs::write(
            &path,
            "[diff]\nbytes = 100\n[diff.build_step]\nbytes = 4096\n",
        )
        .unwrap();
        let cfg = AuditConfig::load(&path).unwrap();
        let step = cfg.diff.limit(memlife_diff::figures::Kind::BuildStep);
        assert_eq!(step.absolute, 4096.0);
        assert_eq!(
            cfg.diff
                .limit(memlife_diff::figures::Kind::LoadPeak)
                .absolute,
            100.0
        );
        std::fs::write(&path, "elf = \"a.elf\"\n[diff]\nbyte = 100\n").unwrap();
        let e = AuditConfig::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("unknown key `byte` in [diff]; did you mean `bytes`?"),
            "{e}"
        );
        assert!(e.contains("line 2"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_budget_of_nan_or_inf_is_refused() {
        let dir = std::env::temp_dir().join(format!("memlife-cfg-nan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memlife.toml");
        for v in ["nan", "inf", "-inf"] {
            std::fs::write(&path, format!("[budgets]\nbuild_step = {v}\n")).unwrap();
            let e = AuditConfig::load(&path).unwrap_err().to_string();
            assert!(
                e.contains("[budgets] build_step") && e.contains("finite"),
                "{e}"
            );
        }
        std::fs::write(&path, "[budgets]\nbuild_step = 4096\n").unwrap();
        assert!(AuditConfig::load(&path).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keep_cycles_is_a_positive_count_or_all() {
        use crate::history::KeepCycles;
        let dir = std::env::temp_dir().join(format!("memlife-cfg-keep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memlife.toml");
        for (text, want) in [("25", Some(25)), ("\"all\"", None)] {
            std::fs::write(&path, format!("[trace]\nkeep_cycles = {text}\n")).unwrap();
            let keep = AuditConfig::load(&path).unwrap().trace.keep_cycles.unwrap();
            assert_eq!(keep.count(), Ok(want), "{text}");
        }
        for text in ["0", "\"some\"", "-3"] {
            std::fs::write(&path, format!("[trace]\nkeep_cycles = {text}\n")).unwrap();
            let e = AuditConfig::load(&path).unwrap_err().to_string();
            assert!(e.contains("keep_cycles"), "{text}: {e}");
        }
        assert_eq!(
            KeepCycles::parse("ALL"),
            Ok(KeepCycles::Word(crate::history::AllCycles::All))
        );
        assert_eq!(KeepCycles::parse("3"), Ok(KeepCycles::Count(3)));
        assert!(
            KeepCycles::parse("0")
                .unwrap_err()
                .contains("0 keeps no cycle")
        );
        assert!(KeepCycles::parse("x").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn deprecated_budget_names_become_the_current_ones_with_a_warning() {
        let mut cfg: AuditConfig =
            toml::from_str("[budgets]\niterations = 4\nswitches = 7\nbuild_step = 1").unwrap();
        let warnings = cfg.upgrade_budgets();
        assert_eq!(cfg.budgets["cycles"], 4.0);
        assert_eq!(cfg.budgets["more_cycles"], 7.0);
        assert!(!cfg.budgets.contains_key("iterations"));
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("`iterations` is deprecated: call it `cycles`"));
        // The current name wins over an old one.
        let mut both: AuditConfig =
            toml::from_str("[budgets]\nlifecycles = 10\ncycles = 3").unwrap();
        let warnings = both.upgrade_budgets();
        assert_eq!(both.budgets["cycles"], 3.0);
        assert!(warnings[0].contains("`cycles` is also set and wins"));
        assert_eq!(budget_name("lifecycles"), "cycles");
        assert_eq!(budget_name("build_step"), "build_step");
    }
}
