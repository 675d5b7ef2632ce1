//! What the command line says, as plain data: the CLI fills these from its flags (this crate
//! knows no flag parser), and each value given wins over `memlife.toml`'s. memlife's environment
//! variables come the same way, read once by the command line ([`Environment`]).

use std::path::PathBuf;

use memlife_audit::config::{EngineTuning, PeakMethod};
use memlife_heap::{AllocatorKind, LinkModel, Poisoning, WalkStrategy};

use crate::keep_cycles::KeepCycles;

/// `memlife audit`'s flags for one audit.
#[derive(Debug, Clone, Default)]
pub struct AuditFlags {
    /// The script (SCRIPT).
    pub script: Option<PathBuf>,
    /// The settings file (`--config`); `None`: ./memlife.toml when it exists.
    pub config: Option<PathBuf>,
    /// The firmware (`--elf`).
    pub elf: Option<PathBuf>,
    /// Where the target is.
    pub target: TargetFlags,
    /// Allocator choices.
    pub heap: HeapFlags,
    /// `--method`.
    pub method: Option<PeakMethod>,
    /// `--phase ALIAS=FUNCTION`, in order.
    pub phases: Vec<(String, String)>,
    /// `--span ROLE|FUNCTION=SPAN_FUNCTION`, in order.
    pub spans: Vec<(String, String)>,
    /// `--budget NAME=NUMBER`, in order.
    pub budgets: Vec<(String, f64)>,
    /// `--keep-cycles`.
    pub keep_cycles: Option<KeepCycles>,
    /// `--timeout` in seconds (already checked).
    pub timeout: Option<f64>,
    /// The files the audit writes.
    pub outputs: Outputs,
    /// `--baseline`: an earlier audit JSON report to compare with.
    pub baseline: Option<PathBuf>,
    /// `--fail-on-skip`: a check not run fails the audit.
    pub fail_on_skip: bool,
}

/// Where the target is, as the flags say it.
#[derive(Debug, Clone, Default)]
pub struct TargetFlags {
    /// `--gdb HOST:PORT`.
    pub gdb: Option<String>,
    /// `--qemu MACHINE`.
    pub qemu: Option<String>,
    /// `--snapshot FILE`.
    pub snapshot: Option<PathBuf>,
    /// `--chip NAME`.
    pub chip: Option<String>,
    /// `--probe`, as written (the command line's probe backend reads it).
    pub probe: Option<String>,
    /// `--speed KHZ`.
    pub speed: Option<u32>,
    /// `--connect-under-reset`.
    pub connect_under_reset: bool,
    /// `--deadline` in seconds.
    pub deadline: Option<f64>,
    /// `--semihosting-dir DIR`.
    pub semihosting_dir: Option<PathBuf>,
    /// `--serial`.
    pub serial: Option<crate::target::SerialChoice>,
}

impl TargetFlags {
    /// True when the flags name a target (the file's `[target]` is then not used).
    pub fn is_given(&self) -> bool {
        self.gdb.is_some() || self.qemu.is_some() || self.snapshot.is_some() || self.chip.is_some()
    }
}

/// Allocator choices symbols cannot make.
#[derive(Debug, Clone, Default)]
pub struct HeapFlags {
    /// `--allocator`.
    pub allocator: Option<AllocatorKind>,
    /// `--poisoning`.
    pub poisoning: Option<Poisoning>,
    /// `--heap-region START:LEN`, in order.
    pub heap_regions: Vec<(u64, u64)>,
    /// `--heap-break`.
    pub heap_break: Option<u64>,
    /// `--heap-limit`.
    pub heap_limit: Option<u64>,
    /// `--walk`.
    pub walk: Option<WalkStrategy>,
}

/// The files an audit writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outputs {
    /// `--json FILE`.
    pub json: Option<PathBuf>,
    /// `--junit FILE`.
    pub junit: Option<PathBuf>,
    /// `--report DIR`.
    pub report: Option<PathBuf>,
    /// `--trace FILE`.
    pub trace: Option<PathBuf>,
    /// `--out DIR`: the files scripts write (heap dumps).
    pub out_dir: PathBuf,
}

impl Outputs {
    /// The outputs asked for that show requested sizes (the JSON's `events[].request`, the
    /// peaks' `requested` parts, the timeline's events), by their flags.
    pub fn showing_requests(&self) -> Vec<String> {
        [
            ("--json", self.json.is_some()),
            ("--report", self.report.is_some()),
            ("--trace", self.trace.is_some()),
        ]
        .into_iter()
        .filter(|(_, asked)| *asked)
        .map(|(flag, _)| flag.to_string())
        .collect()
    }
}

/// What memlife's environment variables say (`MEMLIFE_LINK_MODEL`, `MEMLIFE_NO_EMULATION`,
/// `MEMLIFE_NO_VECTOR_CATCH`), read by the command line only and passed down.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Environment {
    /// The link's cost model, instead of measuring it.
    pub link_model: Option<LinkModel>,
    /// Host-side resume and vector catch, both on unless turned off for a comparison.
    pub tuning: EngineTuning,
}
