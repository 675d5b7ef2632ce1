//! `memlife diff BASE.json HEAD.json`: memory regressions between two builds, from their audit
//! JSON reports (the logic is `memlife-diff`; this reads the files, prints and exits 0 within
//! budget, 1 over budget, 2 on error).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use memlife_diff::{AuditRun, Budgets, Diff};

/// `memlife diff`.
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
}

/// The budgets of `--config FILE`, else of ./memlife.toml when it exists, else the defaults.
pub fn budgets(config: Option<&Path>) -> Result<Budgets> {
    let path = match config {
        Some(p) => Some(p.to_path_buf()),
        None => Some(PathBuf::from("memlife.toml")).filter(|p| p.is_file()),
    };
    Ok(match path {
        Some(p) => memlife_audit::AuditConfig::load(&p)?.diff,
        None => Budgets::default(),
    })
}

/// Reads one report; the error names the file.
pub fn read_run(path: &Path) -> Result<AuditRun> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(AuditRun::parse(&bytes, &path.display().to_string())?)
}

/// Prints the table on stdout, in colour when it is a terminal (and NO_COLOR is not set).
pub fn print_table(diff: &Diff) -> Result<()> {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = std::io::stdout().lock();
    out.write_all(memlife_diff::text::table(diff, color).as_bytes())?;
    Ok(())
}

pub fn run(args: DiffArgs) -> Result<ExitCode> {
    let budgets = budgets(args.config.as_deref())?;
    let base = read_run(&args.base)?;
    let head = read_run(&args.head)?;
    let names = (
        args.base.display().to_string(),
        args.head.display().to_string(),
    );
    let diff = memlife_diff::diff(&base, &head, (&names.0, &names.1), &budgets)?;
    print_table(&diff)?;
    Ok(ExitCode::from(diff.exit_code() as u8))
}
