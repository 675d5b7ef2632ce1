//! The files an audit writes (`--json`, `--junit`, `--report DIR`, `--trace`), all from one
//! [`AuditReport`].
//!
//! - A path that names the wrong kind of thing (a directory for a file, a file for `--report`'s
//!   directory) is a usage error, refused before anything runs.
//! - When the audit starts, every output is replaced by the report of an unfinished run
//!   ([`AuditReport::unfinished`]): an audit that is interrupted or crashes (even by SIGKILL)
//!   leaves outputs that say it did not finish, never an earlier run's results that look like
//!   this run's. Replacing rather than deleting keeps a CI job that reads the JUnit file from
//!   mistaking a missing file for "no tests". An output that cannot be written then is reported
//!   and the audit runs on.
//! - At the end every output is written, each on its own: one that fails is reported with its
//!   cause and the others are still written; the run then exits 2.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use memlife_audit::AuditReport;
use memlife_plan::Outputs;

/// One requested output.
#[derive(Debug, Clone)]
struct Output {
    flag: &'static str,
    path: PathBuf,
}

/// The outputs requested on the command line.
#[derive(Debug, Clone)]
pub struct AuditOutputs {
    json: Option<PathBuf>,
    junit: Option<PathBuf>,
    report: Option<PathBuf>,
    trace: Option<PathBuf>,
}

/// An output that could not be written.
#[derive(Debug)]
pub struct OutputFailure {
    /// The flag that asked for it.
    pub flag: &'static str,
    /// The path given.
    pub path: PathBuf,
    /// Why, with its causes.
    pub error: anyhow::Error,
}

impl std::fmt::Display for OutputFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {:#}", self.flag, self.path.display(), self.error)
    }
}

impl AuditOutputs {
    /// The outputs the plan asks for.
    pub fn new(outputs: &Outputs) -> Self {
        AuditOutputs {
            json: outputs.json.clone(),
            junit: outputs.junit.clone(),
            report: outputs.report.clone(),
            trace: outputs.trace.clone(),
        }
    }

    fn files(&self) -> impl Iterator<Item = Output> + '_ {
        [
            ("--json", &self.json),
            ("--junit", &self.junit),
            ("--trace", &self.trace),
        ]
        .into_iter()
        .filter_map(|(flag, p)| p.clone().map(|path| Output { flag, path }))
    }

    /// Refuses paths that name the wrong kind of thing: usage errors, before anything runs.
    pub fn check_kinds(&self) -> Result<()> {
        if let Some(dir) = self.report.as_deref().filter(|d| d.exists() && !d.is_dir()) {
            bail!(
                "--report {}: exists and is not a directory (the report is DIR/index.html)",
                dir.display()
            );
        }
        for out in self.files() {
            if out.path.is_dir() {
                bail!(
                    "{} {}: is a directory, not a file",
                    out.flag,
                    out.path.display()
                );
            }
        }
        Ok(())
    }

    /// Writes every output from `report`; each one that fails is returned, the others are
    /// written regardless. `announce` says where the report and the trace went.
    pub fn write(&self, report: &AuditReport, announce: bool) -> Vec<OutputFailure> {
        let mut failures = Vec::new();
        let mut attempt = |flag: &'static str, path: &Path, result: Result<()>| {
            if let Err(error) = result {
                failures.push(OutputFailure {
                    flag,
                    path: path.to_path_buf(),
                    error,
                });
            }
        };
        if let Some(path) = &self.json {
            attempt("--json", path, report.write_json(path).map_err(Into::into));
        }
        if let Some(path) = &self.junit {
            attempt(
                "--junit",
                path,
                memlife_render::write_junit(report, path).map_err(Into::into),
            );
        }
        if let Some(dir) = &self.report {
            let written = memlife_render::write_html_report(report, dir);
            if let (true, Ok(page)) = (announce, &written) {
                eprintln!("memlife audit: report written to {}", page.display());
            }
            attempt("--report", dir, written.map(drop).map_err(Into::into));
        }
        if let Some(path) = &self.trace {
            let written = memlife_render::write_trace(report, path);
            if announce && written.is_ok() {
                eprintln!(
                    "memlife audit: trace written to {} (open it in ui.perfetto.dev)",
                    path.display()
                );
            }
            attempt("--trace", path, written.map_err(Into::into));
        }
        failures
    }
}
