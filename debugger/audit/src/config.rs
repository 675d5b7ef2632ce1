//! `memlife.toml`: the settings that would otherwise be flags, kept beside the firmware.
//!
//! ```toml
//! elf = "firmware/build/heap4-healthy.elf"
//! [target]
//! qemu = "netduinoplus2"          # or gdb = "127.0.0.1:3333", or chip = "STM32F405RGTx"
//! # with chip: probe = "0483:374b", speed = 4000, connect_under_reset = false
//! # with gdb or qemu: reset = "reset halt"   (the server's monitor command; chosen if absent)
//! [phases]                        # aliases scripts use with t.phase("load")
//! load = "model_load"
//! [spans]                         # nested calls recorded inside a phase
//! graph_build = "op_init"
//! [budgets]                       # numbers scripts read with budget("build_step")
//! build_step = 4096
//! [trace]
//! method = "trace"                # trace | sample | watermark
//! skip = ["mem_alloc", "mem_free"]   # wrappers skipped when naming an allocation site
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// How the peak inside a phase is found (README, "Audits and the Rhai API").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum PeakMethod {
    /// Breakpoints on malloc/free: every event, exact curve, allocation sites.
    Trace,
    /// Snapshots at phase and span boundaries only.
    Sample,
    /// The allocator's low-water mark, reset at phase entry (writes target RAM; restored).
    Watermark,
}

impl std::str::FromStr for PeakMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "trace" => Ok(PeakMethod::Trace),
            "sample" => Ok(PeakMethod::Sample),
            "watermark" => Ok(PeakMethod::Watermark),
            _ => Err(format!(
                "unknown peak method `{s}` (trace, sample, watermark)"
            )),
        }
    }
}

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
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            method: None,
            skip: Vec::new(),
            backtrace: 8,
        }
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
    /// Phase aliases (`load` → `model_load`).
    pub phases: BTreeMap<String, String>,
    /// Spans per phase function (`graph_build` → `op_init`).
    pub spans: BTreeMap<String, String>,
    /// Budgets for scripts.
    pub budgets: BTreeMap<String, f64>,
    /// Tracing.
    pub trace: TraceConfig,
    /// Seconds to wait for any breakpoint.
    pub timeout: Option<f64>,
    /// What the audit of this firmware is expected to say (examples/; informational).
    pub expect: Option<Expectation>,
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
        self
    }

    /// Reads a file; relative paths inside it are made relative to its directory.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let mut cfg: AuditConfig = toml::from_str(&text).map_err(|e| ConfigError::Invalid {
            path: path.display().to_string(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        if let Some(secs) = cfg.timeout
            && let Err(message) = memlife_core::limits::timeout_secs(secs)
        {
            return Err(ConfigError::Invalid {
                path: path.display().to_string(),
                message,
            });
        }
        if let (Some(elf), Some(dir)) = (&cfg.elf, path.parent())
            && elf.is_relative()
        {
            cfg.elf = Some(dir.join(elf));
        }
        Ok(cfg)
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
}
