//! `memlife diff BASE.json HEAD.json`: memory regressions between two builds, from their audit
//! JSON reports (the logic is `memlife-diff`; this reads the files, prints and exits 0 within
//! budget, 1 over budget, 2 on error).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use memlife_diff::{AuditReport, Budgets, Diff};

/// `memlife diff`.
// The doc comments are `--help`'s text: `[diff]` names a memlife.toml table.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The audit JSON report of the base build (`memlife audit --json FILE`).
    #[arg(value_name = "BASE.json")]
    pub base: PathBuf,
    /// The audit JSON report of the build to judge.
    #[arg(value_name = "HEAD.json")]
    pub head: PathBuf,
    /// Settings file with the budgets on the change ([diff]); default: ./memlife.toml when it
    /// exists, else memlife's defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Markdown for a pull-request comment: the verdict, the changed figures, the top sites.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// The diff as JSON: every change with its budget, the sites, the checks, the notes.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// HTML report: writes DIR/index.html with both runs drawn together (the water-level
    /// curves overlaid, the build stairs side by side, per-layer bars paired, the heap maps
    /// after release one above the other).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// The budgets of `--config FILE`, else of ./memlife.toml when it exists, else the defaults.
pub fn budgets(config: Option<&Path>) -> Result<Budgets> {
    let path = config
        .map(Path::to_path_buf)
        .or_else(memlife_plan::default_config);
    Ok(match path {
        Some(p) => memlife_plan::ConfigFile::load(&p)?.diff,
        None => Budgets::default(),
    })
}

/// Reads one report; the error names the file.
pub fn read_run(path: &Path) -> Result<AuditReport> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(memlife_diff::parse(&bytes, &path.display().to_string())?)
}

/// Prints the table on stdout, in colour when it is a terminal (and NO_COLOR is not set).
pub fn print_table(diff: &Diff) -> Result<()> {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = std::io::stdout().lock();
    out.write_all(memlife_diff::text::table(diff, color).as_bytes())?;
    Ok(())
}

/// Refuses output paths of the wrong kind before anything is read.
fn check_outputs(args: &DiffArgs) -> Result<()> {
    if let Some(dir) = args.report.as_deref().filter(|d| d.exists() && !d.is_dir()) {
        bail!(
            "--report {}: exists and is not a directory (the report is DIR/index.html)",
            dir.display()
        );
    }
    for (flag, path) in [("--markdown", &args.markdown), ("--json", &args.json)] {
        if let Some(p) = path.as_deref().filter(|p| p.is_dir()) {
            bail!("{flag} {}: is a directory, not a file", p.display());
        }
    }
    Ok(())
}

/// An output that could not be written: the flag, the path and the whole chain of causes (the
/// operating system's reason included).
fn failure(flag: &str, path: &Path, error: impl Into<anyhow::Error>) -> String {
    format!("{flag} {}: {:#}", path.display(), error.into())
}

/// What [`write_outputs`] did: how many outputs were asked for and the failures.
struct Written {
    requested: usize,
    failures: Vec<String>,
}

/// Writes every output asked for, each atomically and on its own.
fn write_outputs(args: &DiffArgs, diff: &Diff, base: &AuditReport, head: &AuditReport) -> Written {
    let mut written = Written {
        requested: 0,
        failures: Vec::new(),
    };
    if let Some(path) = &args.markdown {
        written.requested += 1;
        let md = memlife_diff::text::markdown(diff);
        if let Err(e) = memlife_core::output::write_atomic(path, md.as_bytes()) {
            written.failures.push(failure("--markdown", path, e));
        }
    }
    if let Some(path) = &args.json {
        written.requested += 1;
        let json = serde_json::to_vec_pretty(diff)
            .map_err(anyhow::Error::from)
            .and_then(|json| Ok(memlife_core::output::write_atomic(path, &json)?));
        if let Err(e) = json {
            written.failures.push(failure("--json", path, e));
        }
    }
    if let Some(dir) = &args.report {
        written.requested += 1;
        match memlife_render::write_diff_report(diff, base, head, dir) {
            Ok(page) => eprintln!("memlife diff: report written to {}", page.display()),
            Err(e) => written.failures.push(failure("--report", dir, e)),
        }
    }
    written
}

/// The closing error when outputs failed: how many, and whether any other was written.
fn outputs_error(written: &Written) -> String {
    let failed = written.failures.len();
    match written.requested - failed {
        0 if failed == 1 => "the diff's output could not be written".to_string(),
        0 => format!("none of the diff's {failed} outputs could be written"),
        1 => format!("{failed} of the diff's outputs could not be written (the other one was)"),
        ok => format!("{failed} of the diff's outputs could not be written (the other {ok} were)"),
    }
}

pub fn run(args: DiffArgs) -> Result<ExitCode> {
    check_outputs(&args)?;
    let budgets = budgets(args.config.as_deref())?;
    let base = read_run(&args.base)?;
    let head = read_run(&args.head)?;
    let names = (
        args.base.display().to_string(),
        args.head.display().to_string(),
    );
    let diff = memlife_diff::diff(&base, &head, (&names.0, &names.1), &budgets)?;
    print_table(&diff)?;
    let written = write_outputs(&args, &diff, &base, &head);
    for f in &written.failures {
        eprintln!("error: {f}");
    }
    if !written.failures.is_empty() {
        bail!("{}", outputs_error(&written));
    }
    Ok(ExitCode::from(diff.exit_code() as u8))
}
