//! Command-line flags: as close to what the user types as possible, only validated here.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use memlife_audit::PeakMethod;
use memlife_heap::{AllocatorKind, Poisoning, WalkStrategy};

use crate::probe_choice::ProbeChoice;
pub use memlife_plan::SerialChoice;

/// Heap lifecycle debugger for on-device ML firmware.
///
/// memlife halts firmware at breakpoints, rebuilds the heap allocator's state from target RAM
/// through DWARF (FreeRTOS heap_4/heap_5, newlib-nano, newlib dlmalloc) and resumes it, without
/// touching the firmware. Exit codes: 0 success, 1 a check failed, 2 usage, connection or
/// target error.
#[derive(Debug, Parser)]
#[command(name = "memlife", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace; or MEMLIFE_LOG=...).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the allocator memlife detects and every symbol and layout it resolved.
    Symbols(SymbolsArgs),
    /// Halt the target, rebuild the heap from RAM, print it, and let the target go.
    Heap(HeapArgs),
    /// Halt the target, read every FreeRTOS task from RAM (state, priority, stack, saved
    /// registers, high-water mark, its heap blocks), print them, and let the target go.
    Tasks(TasksArgs),
    /// Save RAM and registers of the halted target to a file for offline analysis.
    Snapshot(SnapshotArgs),
    /// Drive the firmware through its lifecycle with a Rhai script and report the checks
    /// (exit 0 all passed, 1 a check failed, 2 error).
    Audit(Box<AuditArgs>),
    /// Be a GDB remote server for gdb-multiarch over the target, with heap `monitor` commands
    /// (`monitor help` lists them).
    Serve(ServeArgs),
    /// List the debug probes attached to this machine (for --chip and --probe).
    Probes,
    /// Write a commented memlife.toml for a firmware: the allocator detected, the lifecycle
    /// functions guessed from their names (with file:line and why), alternatives as comments.
    Init(InitArgs),
    /// Compare two audit JSON reports (two builds): every figure the checks use, the
    /// allocation sites, against the budgets of [diff] in memlife.toml (exit 0 within, 1 over
    /// budget, 2 error).
    Diff(crate::commands::diff::DiffArgs),
    /// Run a TensorFlow Lite Micro firmware until each model was built and run once, watching
    /// each arena as it is built, and print per model its arena, the smallest that works and
    /// the spare.
    Arena(ArenaArgs),
}

/// `memlife init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Firmware ELF with DWARF.
    #[arg(long, value_name = "FILE")]
    pub elf: PathBuf,
    /// Where to write it (default: standard output). Written atomically, never through a
    /// symbolic link; a file that exists is replaced only with --force.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the --output file if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,
}

/// `memlife serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Firmware ELF with DWARF.
    #[arg(long, value_name = "FILE")]
    pub elf: PathBuf,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Address to listen on for gdb; port 0 picks a free one (printed on stderr). `unix:PATH`
    /// listens on a new Unix socket only its owner can connect to (gdb: `target remote PATH`).
    #[arg(
        long,
        value_name = "HOST:PORT|unix:PATH",
        default_value = "127.0.0.1:3333"
    )]
    pub listen: String,
    /// Allow a --listen address other than loopback: anyone who reaches it controls the target.
    #[arg(long)]
    pub allow_remote: bool,
    /// Where clients' `monitor dump`, `dump-on` and `report` files go (relative paths only,
    /// never out of it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dump_dir: PathBuf,
    /// A directory `monitor audit FILE` may read `.rhai` scripts from (repeatable; default:
    /// the working directory).
    #[arg(long, value_name = "DIR")]
    pub script_dir: Vec<PathBuf>,
    /// How `monitor heap` walks read the arena: bulk, sparse or auto (default), as for
    /// `memlife heap --walk`.
    #[arg(long, value_name = "STRATEGY", value_parser = parse_walk)]
    pub walk: Option<WalkStrategy>,
    /// The most dumps one `monitor dump-on` writes before it ends by itself (it also ends when
    /// its gdb client leaves).
    #[arg(long, value_name = "N", default_value_t = memlife_server::options::DEFAULT_MAX_DUMPS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_dumps: u32,
    /// Stop a `monitor audit` that runs longer than this many seconds (breakpoints removed,
    /// target halted, the reply says why). The client's interrupt byte (0x03) stops it too.
    #[arg(long, value_name = "SECONDS", default_value_t = memlife_server::options::DEFAULT_AUDIT_DEADLINE.as_secs_f64(),
          value_parser = memlife_core::limits::parse_timeout)]
    pub audit_deadline: f64,
    /// Serve the core as one thread even when the ELF has FreeRTOS (by default every task is a
    /// gdb thread: `info threads`, `thread N`, `bt` in any task).
    #[arg(long)]
    pub no_threads: bool,
}

/// `memlife audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The Rhai script (see scripts/); in a wide run, the script of the targets that name none.
    #[arg(value_name = "SCRIPT")]
    pub script: Option<PathBuf>,
    /// Firmware ELF with DWARF (or `elf` in memlife.toml).
    #[arg(long, value_name = "FILE")]
    pub elf: Option<PathBuf>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub heap: HeapOptions,
    /// Settings file; default: ./memlife.toml when it exists. Repeatable: several files, or one
    /// with `[[matrix]]` entries, are a wide run, one target each (outputs in OUT/NAME/, one
    /// OUT/junit.xml and OUT/summary.json; --junit and --json name those two instead).
    #[arg(long, value_name = "FILE")]
    pub config: Vec<PathBuf>,
    /// Wide run: audit N targets at a time, each in its own memlife process (its own QEMU).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..256))]
    pub jobs: Option<u16>,
    /// Wide run: audit only the I-th of N parts of the list (round robin over its order), so a
    /// CI matrix of N machines spreads it.
    #[arg(long, value_name = "I/N", value_parser = crate::wide::list::Shard::parse)]
    pub shard: Option<crate::wide::list::Shard>,
    /// Wide run: stop a target that runs longer than this many seconds (an error for it, the
    /// other targets run on).
    #[arg(long, value_name = "SECONDS", value_parser = memlife_core::limits::parse_timeout)]
    pub target_timeout: Option<f64>,
    /// Wide run: compare each target's verdict with the expected one (`expect = "pass"|"fail"`
    /// in its [[matrix]] entry, else `[expect] exit` of its memlife.toml): exit 0 when all are
    /// as expected.
    #[arg(long)]
    pub expect: bool,
    /// Peak method: trace (breakpoints on malloc/free: exact, with allocation sites), sample
    /// (phase and span boundaries only) or watermark (the allocator's low-water mark; writes
    /// target RAM and restores it).
    #[arg(long, value_name = "METHOD", value_parser = method_parser())]
    pub method: Option<PeakMethod>,
    /// A phase alias for scripts (repeatable), over memlife.toml's [phases]: `load=my_load_fn`.
    #[arg(long = "phase", value_name = "ALIAS=FUNCTION", value_parser = parse_pair)]
    pub phases: Vec<(String, String)>,
    /// Spans recorded inside a phase (repeatable), over [spans]: the phase by its role or its
    /// function, then the span function: `run=layer_forward`, `graph_build=op_init`.
    #[arg(long = "span", value_name = "ROLE|FUNCTION=SPAN_FUNCTION", value_parser = parse_pair)]
    pub spans: Vec<(String, String)>,
    /// A budget for scripts (repeatable), over [budgets]: `build_step=4096`.
    #[arg(long = "budget", value_name = "NAME=NUMBER", value_parser = parse_budget)]
    pub budgets: Vec<(String, f64)>,
    /// JUnit XML report: one test case per check.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// JSON report: phases, spans, events, checks.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// HTML report: writes DIR/index.html, one self-contained page with the water-level curve,
    /// the build stairs, per-layer deltas, the heap map after release, the leak trend and the
    /// checks.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// The run as a Chrome trace / Perfetto JSON file (open it in ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Directory for the files scripts write (heap dumps).
    #[arg(long, value_name = "DIR", default_value = "memlife-out")]
    pub out: PathBuf,
    /// Observed cycles kept in full at each end of a long run (default 10, or `keep_cycles` in
    /// memlife.toml's [trace]); the cycles between are folded into exact totals, per-function
    /// figures and a per-cycle series, so memory and outputs stay bounded. `all` keeps every one.
    #[arg(long, value_name = "N|all", value_parser = memlife_plan::KeepCycles::parse)]
    pub keep_cycles: Option<memlife_plan::KeepCycles>,
    /// Seconds to wait for any one breakpoint (more than 0, at most a week).
    #[arg(long, value_name = "SECONDS", value_parser = memlife_core::limits::parse_timeout)]
    pub timeout: Option<f64>,
    /// What to leave a live target doing at the end: running (default) or halted.
    #[arg(long, value_name = "STATE", value_enum, default_value_t = Leave::Running)]
    pub leave: Leave,
    /// Then compare this run with an earlier audit JSON report (`memlife diff BASE.json` with
    /// this run as HEAD, budgets from [diff]): exit 1 when a check failed or a change is over
    /// budget.
    #[arg(long, value_name = "BASE.json")]
    pub baseline: Option<PathBuf>,
    /// Exit 1 when a check was skipped (not run: a role the configuration lacks, an error path
    /// the target could not be started again for), as when one failed, so that CI fails on an
    /// audit that did not check everything. Without it, skips are counted in the summary and
    /// the exit code is that of the checks that ran.
    #[arg(long)]
    pub fail_on_skip: bool,
    /// Set by a wide run on its children: audit this one target, also when its --config is the
    /// matrix file itself (an entry without `config`), whose [[matrix]] is then not a list.
    #[arg(long, hide = true)]
    pub one_target: bool,
}

/// `memlife symbols`.
#[derive(Debug, Args)]
pub struct SymbolsArgs {
    /// Firmware ELF with DWARF.
    #[arg(long, value_name = "FILE")]
    pub elf: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub heap: HeapOptions,
}

/// What a live target is left doing when memlife lets go of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Leave {
    /// Detach: the firmware runs on.
    Running,
    /// Stay halted where memlife stopped it.
    Halted,
}

/// How to reach the target (one of them).
#[derive(Debug, Args, Clone, Default)]
// At most one target: explicit conflicts rather than an ArgGroup, because the group of a
// struct with a flattened field (the probe options) is not generated.
#[group(skip)]
pub struct TargetArgs {
    /// A GDB remote server that is already running (QEMU -gdb, OpenOCD, JLinkGDBServer, pyOCD).
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["qemu", "snapshot", "chip"])]
    pub gdb: Option<String>,
    /// Start qemu-system-arm on this machine (e.g. netduinoplus2), halted, on a free loopback
    /// port; it is stopped when memlife ends.
    #[arg(long, value_name = "MACHINE", conflicts_with_all = ["snapshot", "chip"])]
    pub qemu: Option<String>,
    /// An offline snapshot written by `memlife snapshot` (read-only).
    #[arg(long, value_name = "FILE", conflicts_with = "chip")]
    pub snapshot: Option<PathBuf>,
    /// A real board through a debug probe (probe-rs): the chip name, e.g. STM32F405RGTx or
    /// esp32s3 (builds with --features esp32). Attaches without reset: the firmware runs on.
    #[arg(long, value_name = "NAME")]
    pub chip: Option<String>,
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// The GDB server's reset command (`[target] reset` in memlife.toml), when it is not the
    /// one memlife would choose.
    #[arg(skip)]
    pub reset: Option<String>,
    /// Give up (exit 2) when talking to a GDB server (--gdb, --qemu) has taken this many
    /// seconds in all, however fast each reply was. Default: 3600 (one hour); `memlife serve`
    /// has none unless given.
    #[arg(long, value_name = "SECONDS", value_parser = memlife_core::limits::parse_timeout)]
    pub deadline: Option<f64>,
    /// No default deadline (`memlife serve` runs as long as its user wants).
    #[arg(skip)]
    pub no_default_deadline: bool,
    /// With --gdb or --qemu: let the firmware's semihosting calls open, read, write, seek, close,
    /// remove, rename and stat regular files under this existing directory, and nowhere else (no absolute
    /// paths, no `..`, no symbolic links followed; 64 MiB written at most). Without it the
    /// firmware gets no host file at all.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["snapshot", "chip"])]
    pub semihosting_dir: Option<PathBuf>,
    /// With --qemu: where the firmware's serial output (its UART) goes: `file:PATH`, `stdio`
    /// (memlife's standard output) or `none`. Default: `memlife audit` writes OUT/serial.txt
    /// (named in its summary); the other commands discard it.
    #[arg(long, value_name = "file:PATH|stdio|none", value_parser = SerialChoice::parse, conflicts_with_all = ["gdb", "snapshot", "chip"])]
    pub serial: Option<SerialChoice>,
}

/// Options of `--chip` (probe-rs).
#[derive(Debug, Args, Clone, Default)]
#[group(skip)]
pub struct ProbeArgs {
    /// With --chip: which debug probe, when several are attached (`memlife probes` lists them);
    /// `qemu` (or `qemu:MACHINE`) is memlife's virtual SWD probe over a QEMU started with the
    /// ELF (netduinoplus2, an STM32F405), for the probe-rs path without a board.
    #[arg(long, value_name = "VID:PID[:SERIAL]|qemu[:MACHINE]", requires = "chip", value_parser = ProbeChoice::parse)]
    pub probe: Option<ProbeChoice>,
    /// With --chip: the SWD/JTAG clock in kHz (default: the probe's).
    #[arg(long, value_name = "KHZ", requires = "chip", value_parser = clap::value_parser!(u32).range(1..))]
    pub speed: Option<u32>,
    /// With --chip: hold the reset line while attaching (firmware that disables the debug pins or
    /// sleeps); the firmware restarts.
    #[arg(long, requires = "chip")]
    pub connect_under_reset: bool,
}

/// Where to stop before looking.
#[derive(Debug, Args)]
pub struct StopArgs {
    /// Run until this location first (a breakpoint, removed afterwards): a function's entry
    /// (C++ as in the source), FILE:LINE (every place that line's code begins) or *ADDR.
    #[arg(long, value_name = "LOCATION")]
    pub at: Option<String>,
    /// With --at: stop at the N-th entry.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "at", value_parser = clap::value_parser!(u32).range(1..))]
    pub hit: u32,
    /// Give up (exit 2) when the target has not stopped after this many seconds (more than 0,
    /// at most a week).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = memlife_core::limits::parse_timeout)]
    pub timeout: f64,
    /// What to leave the live target doing at the end: running (default) or halted.
    /// A QEMU started with --qemu is always stopped.
    #[arg(long, value_name = "STATE", value_enum, default_value_t = Leave::Running)]
    pub leave: Leave,
}

/// Allocator choices that symbols cannot make.
#[derive(Debug, Args, Clone)]
pub struct HeapOptions {
    /// Force the allocator instead of detecting it: heap4, heap5, nano, dlmalloc, tlsf (ESP-IDF),
    /// llff and rlsf (Rust embedded-alloc's LlffHeap and TlsfHeap).
    #[arg(long, value_name = "NAME", value_parser = parse_allocator)]
    pub allocator: Option<AllocatorKind>,
    /// ESP-IDF heap poisoning built into the firmware (none, light, comprehensive), when DWARF
    /// does not show it (`poisoning` in memlife.toml).
    #[arg(long, value_name = "MODE", value_parser = parse_poisoning)]
    pub poisoning: Option<Poisoning>,
    /// heap_5 region (repeatable), when the firmware's HeapRegion_t table is not in DWARF.
    #[arg(long, value_name = "START:LEN", value_parser = parse_region)]
    pub heap_region: Vec<(u64, u64)>,
    /// newlib: the current break, when no _sbrk variable is found.
    #[arg(long, value_name = "ADDR", value_parser = parse_u64)]
    pub heap_break: Option<u64>,
    /// newlib: the heap limit, when no linker symbol gives it.
    #[arg(long, value_name = "ADDR", value_parser = parse_u64)]
    pub heap_limit: Option<u64>,
    /// How a heap walk reads the arena: bulk (whole), sparse (the headers it follows, in 64-byte
    /// chunks) or auto (the link's round-trip time and bandwidth decide; `walk` in
    /// memlife.toml, `MEMLIFE_LINK_MODEL=RTT_US:BYTES_PER_S` models a link). Default: auto.
    #[arg(long, value_name = "STRATEGY", value_parser = parse_walk)]
    pub walk: Option<WalkStrategy>,
}

impl HeapOptions {
    /// What the walker needs that the symbols cannot say.
    pub fn walker_options(&self) -> memlife_heap::WalkerOptions {
        memlife_heap::WalkerOptions {
            heap_regions: self.heap_region.clone(),
            heap_break: self.heap_break,
            heap_limit: self.heap_limit,
            poisoning: self.poisoning,
        }
    }
}

fn parse_walk(s: &str) -> Result<WalkStrategy, String> {
    s.parse()
}

fn parse_allocator(s: &str) -> Result<AllocatorKind, String> {
    s.parse()
}

fn parse_poisoning(s: &str) -> Result<Poisoning, String> {
    s.parse()
}

/// `--method`: one of [`PeakMethod::ALL`]'s names, each with its help, listed in the help and
/// in the error.
fn method_parser() -> impl TypedValueParser<Value = PeakMethod> {
    let help = |method| match method {
        PeakMethod::Trace => {
            "Breakpoints on malloc/free: every event, exact curve, allocation sites"
        }
        PeakMethod::Sample => "Snapshots at phase and span boundaries only",
        PeakMethod::Watermark => {
            "The allocator's low-water mark, reset at phase entry (writes target RAM; restored)"
        }
    };
    PossibleValuesParser::new(
        PeakMethod::ALL.map(|(method, name)| PossibleValue::new(name).help(help(method))),
    )
    .try_map(|name| name.parse::<PeakMethod>())
}

/// `memlife heap`.
#[derive(Debug, Args)]
pub struct HeapArgs {
    /// Firmware ELF with DWARF.
    #[arg(long, value_name = "FILE")]
    pub elf: PathBuf,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub stop: StopArgs,
    #[command(flatten)]
    pub heap: HeapOptions,
    /// Print one JSON object (stable keys, see docs/heap-json.md) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// ESP-IDF: also give `heap_caps_get_info`, `heap_caps_get_free_size` and
    /// `heap_caps_get_largest_free_block` for this capability mask (repeatable; names such as
    /// `8BIT`, `INTERNAL|DMA`, or a number) under `firmware_view.heap_caps`.
    #[arg(long, value_name = "CAPS", value_parser = parse_caps_arg)]
    pub caps: Vec<u32>,
    /// Also write the heap map (the arena as a strip, blocks to scale) as an SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// `memlife tasks`.
#[derive(Debug, Args)]
pub struct TasksArgs {
    /// Firmware ELF with DWARF.
    #[arg(long, value_name = "FILE")]
    pub elf: PathBuf,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub stop: StopArgs,
    /// How the heap is walked to find each task's TCB and stack blocks.
    #[command(flatten)]
    pub heap: HeapOptions,
    /// Print one JSON object (stable keys, see docs/tasks-json.md) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `memlife arena`.
#[derive(Debug, Args)]
pub struct ArenaArgs {
    /// Firmware ELF with DWARF (TensorFlow Lite Micro in it: of 2020, or current with one arena).
    #[arg(long, value_name = "FILE")]
    pub elf: PathBuf,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub heap: HeapOptions,
    /// Print one JSON object (keys in docs/tflm.md) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Print every build's steps per operator and category too.
    #[arg(long)]
    pub steps: bool,
    /// Stop after this many builds began, even when a model was not built twice.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    pub builds: u64,
    /// Seconds to wait for the next build; when none begins by then after every build ended,
    /// the run is over (more than 0, at most a week).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = memlife_core::limits::parse_timeout)]
    pub timeout: f64,
    /// What to leave the live target doing at the end: running (default) or halted.
    /// A QEMU started with --qemu is always stopped.
    #[arg(long, value_name = "STATE", value_enum, default_value_t = Leave::Running)]
    pub leave: Leave,
}

/// `memlife snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Firmware ELF with DWARF.
    #[arg(long, value_name = "FILE")]
    pub elf: PathBuf,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub stop: StopArgs,
    #[command(flatten)]
    pub heap: HeapOptions,
    /// Extra memory range to save (repeatable); RAM sections, the heap and the stack are saved
    /// anyway.
    #[arg(long, value_name = "START:LEN", value_parser = parse_region)]
    pub region: Vec<(u64, u64)>,
    /// Output file.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

/// Parses `0x20000000`, `536870912` or `64K`-free plain numbers.
pub fn parse_u64(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => s.replace('_', "").parse(),
    };
    parsed.map_err(|_| format!("`{s}` is not a number (use decimal or 0x hex)"))
}

/// Parses `NAME=VALUE`.
pub fn parse_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
            Ok((k.trim().to_string(), v.trim().to_string()))
        }
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

/// Parses `NAME=NUMBER`.
pub fn parse_budget(s: &str) -> Result<(String, f64), String> {
    let (k, v) = parse_pair(s)?;
    let n: f64 = v
        .parse()
        .map_err(|_| format!("budget `{k}`: `{v}` is not a number"))?;
    // "nan" and "inf" parse, but a check against either can never fail.
    if !n.is_finite() {
        return Err(format!("budget `{k}`: `{v}` is not a finite number"));
    }
    Ok((k, n))
}

/// Parses `START:LEN`.
pub fn parse_caps_arg(s: &str) -> Result<u32, String> {
    memlife_heap::parse_caps(s)
}

fn parse_region(s: &str) -> Result<(u64, u64), String> {
    let (a, l) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not START:LEN"))?;
    let (a, l) = (parse_u64(a)?, parse_u64(l)?);
    if l == 0 {
        return Err(format!("region `{s}` is empty"));
    }
    Ok((a, l))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn leave_and_method_are_typed() {
        let cli = Cli::try_parse_from([
            "memlife",
            "audit",
            "s.rhai",
            "--method",
            "watermark",
            "--leave",
            "halted",
        ])
        .unwrap();
        let Command::Audit(args) = cli.command else {
            panic!("not audit")
        };
        assert_eq!(args.method, Some(PeakMethod::Watermark));
        assert_eq!(args.leave, Leave::Halted);
        let default = Cli::try_parse_from(["memlife", "audit", "s.rhai"]).unwrap();
        let Command::Audit(args) = default.command else {
            panic!("not audit")
        };
        assert_eq!((args.method, args.leave), (None, Leave::Running));
        let bad = Cli::try_parse_from(["memlife", "audit", "s.rhai", "--method", "guess"]);
        let text = bad.unwrap_err().to_string();
        assert!(text.contains("trace") && text.contains("sample"), "{text}");
        assert!(Cli::try_parse_from(["memlife", "heap", "--elf", "x", "--leave", "off"]).is_err());
    }

    #[test]
    fn flags_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_numbers_and_regions() {
        assert_eq!(parse_u64("0x2000_0000").unwrap(), 0x2000_0000);
        assert_eq!(parse_u64("4096").unwrap(), 4096);
        assert!(parse_u64("zz").is_err());
        assert_eq!(
            parse_region("0x20000000:0x1000").unwrap(),
            (0x2000_0000, 0x1000)
        );
        assert!(parse_region("0x20000000").is_err());
        assert!(parse_region("1:0").is_err());
    }

    #[test]
    fn parses_pairs_and_budgets() {
        assert_eq!(
            parse_pair("load=my_load").unwrap(),
            ("load".into(), "my_load".into())
        );
        assert!(parse_pair("load=").is_err());
        assert_eq!(
            parse_budget("build_step=4096").unwrap(),
            ("build_step".into(), 4096.0)
        );
        assert!(parse_budget("build_step=lots").is_err());
        for v in ["nan", "NaN", "inf", "-infinity"] {
            assert!(parse_budget(&format!("build_step={v}")).is_err(), "{v}");
        }
    }

    #[test]
    fn the_serial_output_goes_to_a_file_stdout_or_nowhere_and_only_from_qemu() {
        let serial = |args: &[&str]| {
            let mut all = vec!["memlife", "heap", "--elf", "x"];
            all.extend_from_slice(args);
            match Cli::try_parse_from(all).map(|c| c.command) {
                Ok(Command::Heap(h)) => Ok(h.target.serial),
                Ok(_) => panic!("not heap"),
                Err(e) => Err(e.to_string()),
            }
        };
        assert_eq!(
            serial(&["--qemu", "m", "--serial", "file:out/uart.txt"]),
            Ok(Some(SerialChoice::File("out/uart.txt".into())))
        );
        assert_eq!(
            serial(&["--qemu", "m", "--serial", "stdio"]),
            Ok(Some(SerialChoice::Stdio))
        );
        assert_eq!(serial(&["--qemu", "m"]), Ok(None));
        for bad in ["file:", "uart.txt", "tcp:1234"] {
            let e = serial(&["--qemu", "m", "--serial", bad]).unwrap_err();
            assert!(e.contains("file:"), "{bad}: {e}");
        }
        assert!(serial(&["--gdb", "h:1", "--serial", "none"]).is_err());
        assert_eq!(
            SerialChoice::File("a b.txt".into()).to_string(),
            "file:a b.txt"
        );
    }

    #[test]
    fn exactly_one_target() {
        let two = Cli::try_parse_from([
            "memlife", "heap", "--elf", "x", "--gdb", "h:1", "--qemu", "m",
        ]);
        assert!(two.is_err());
        let hit_without_at = Cli::try_parse_from([
            "memlife", "heap", "--elf", "x", "--gdb", "h:1", "--hit", "2",
        ]);
        assert!(hit_without_at.is_err());
    }

    #[cfg(feature = "probe")]
    #[test]
    fn chip_takes_probe_options_and_excludes_other_targets() {
        let cli = Cli::try_parse_from([
            "memlife",
            "heap",
            "--elf",
            "x",
            "--chip",
            "STM32F405RGTx",
            "--probe",
            "0483:374b:ABC",
            "--speed",
            "4000",
            "--connect-under-reset",
        ])
        .unwrap();
        let Command::Heap(args) = cli.command else {
            panic!("not heap")
        };
        assert_eq!(args.target.chip.as_deref(), Some("STM32F405RGTx"));
        let Some(crate::probe_choice::ProbeChoice::Usb(probe)) = args.target.probe.probe else {
            panic!("a USB probe")
        };
        assert_eq!((probe.vendor_id, probe.product_id), (0x0483, 0x374b));
        assert_eq!(probe.serial.as_deref(), Some("ABC"));
        assert_eq!(args.target.probe.speed, Some(4000));
        assert!(args.target.probe.connect_under_reset);
        let both = Cli::try_parse_from([
            "memlife", "heap", "--elf", "x", "--chip", "c", "--gdb", "h:1",
        ]);
        assert!(both.is_err());
        let probe_alone = Cli::try_parse_from(["memlife", "heap", "--elf", "x", "--speed", "100"]);
        assert!(probe_alone.is_err());
        let bad = Cli::try_parse_from([
            "memlife", "heap", "--elf", "x", "--chip", "c", "--probe", "1234:zz",
        ]);
        assert!(bad.unwrap_err().to_string().contains("product id"));
    }

    #[test]
    fn serve_listens_on_loopback_by_default() {
        let cli = Cli::try_parse_from(["memlife", "serve", "--elf", "x", "--qemu", "m"]).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("not serve")
        };
        assert_eq!(args.listen, "127.0.0.1:3333");
        assert!(!args.allow_remote);
        // `HOST:PORT` or `unix:PATH` is told apart by `serve` itself (errors_e2e checks `nope`).
    }
}
