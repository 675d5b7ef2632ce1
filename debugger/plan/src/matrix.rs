//! The `[[matrix]]` entries of a memlife.toml: the targets of a wide run, each with its own
//! firmware, script, settings file and expected verdict. Paths in an entry are relative to the
//! matrix file, as every path in memlife.toml is. What an entry says is checked here, before
//! anything runs, naming the entry (a child audit would only name its flag).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memlife_audit::PeakMethod;
use memlife_heap::AllocatorKind;
use serde::Deserialize;

use crate::error::PlanError;
use crate::file::ConfigFile;

/// What a target's audit is expected to say (`--expect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expected {
    /// Exit 0: every check passed.
    Pass,
    /// Exit 1: a check failed.
    Fail,
}

/// One `[[matrix]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    name: String,
    elf: Option<PathBuf>,
    script: Option<PathBuf>,
    config: Option<PathBuf>,
    expect: Option<Expected>,
    qemu: Option<String>,
    method: Option<PeakMethod>,
    timeout: Option<f64>,
    allocator: Option<String>,
    #[serde(default)]
    budgets: BTreeMap<String, f64>,
    #[serde(default)]
    args: Vec<String>,
}

/// Only the matrix of a memlife.toml and what applies to every entry; the rest is each
/// audit's own (checked by each child).
#[derive(Debug, Deserialize)]
struct MatrixFile {
    #[serde(default)]
    matrix: Vec<Written>,
    /// The run's `fail_on_skip`: every entry's audit gets it, as it gets `--fail-on-skip`
    /// (an entry with its own `config` would not read it there).
    #[serde(default)]
    fail_on_skip: bool,
}

/// One target of a wide run, as its entry says it (paths resolved).
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixEntry {
    /// Its name (the caller checks it is one for an output folder).
    pub name: String,
    /// The memlife.toml its audit reads: the entry's `config`, else the matrix file itself.
    pub config: PathBuf,
    /// The firmware, when the entry names it.
    pub elf: Option<PathBuf>,
    /// The script, when the entry names it.
    pub script: Option<PathBuf>,
    /// The verdict expected: the entry's `expect`, else its settings file's `[expect] exit`.
    pub expect: Option<Expected>,
    /// A QEMU machine for this target.
    pub qemu: Option<String>,
    /// A peak method for this target.
    pub method: Option<PeakMethod>,
    /// Seconds per breakpoint for this target (checked).
    pub timeout: Option<f64>,
    /// The allocator of this target.
    pub allocator: Option<AllocatorKind>,
    /// Budgets for this target, by name.
    pub budgets: Vec<(String, f64)>,
    /// Further `memlife audit` flags, verbatim.
    pub args: Vec<String>,
    /// The matrix file's `fail_on_skip = true`: a skipped check fails this audit.
    pub fail_on_skip: bool,
}

/// The matrix entries of `path`, or none when it has no `[[matrix]]`.
pub fn read(path: &Path) -> Result<Vec<MatrixEntry>, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlanError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let invalid = |message: String| PlanError::Invalid {
        path: path.display().to_string(),
        message,
    };
    let file: MatrixFile =
        toml::from_str(&text).map_err(|e| invalid(e.to_string().trim().replace('\n', " ")))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let near = |p: PathBuf| if p.is_relative() { dir.join(p) } else { p };
    file.matrix
        .into_iter()
        .map(|e| {
            let entry = |m: String| invalid(format!("[[matrix]] `{}`: {m}", e.name));
            if let Some(t) = e.timeout {
                memlife_core::limits::timeout_secs(t).map_err(entry)?;
            }
            let allocator = e
                .allocator
                .as_deref()
                .map(str::parse::<AllocatorKind>)
                .transpose()
                .map_err(entry)?;
            let config = e.config.map_or_else(|| path.to_path_buf(), near);
            Ok(MatrixEntry {
                expect: e.expect.or_else(|| expected_by(&config)),
                name: e.name,
                config,
                elf: e.elf.map(near),
                script: e.script.map(near),
                qemu: e.qemu,
                method: e.method,
                timeout: e.timeout,
                allocator,
                budgets: e.budgets.into_iter().collect(),
                args: e.args,
                fail_on_skip: file.fail_on_skip,
            })
        })
        .collect()
}

/// `[expect] exit` of a settings file (0 pass, 1 fail). A file that cannot be read says nothing
/// here: its own audit reports why.
pub fn expected_by(config: &Path) -> Option<Expected> {
    match ConfigFile::load(config).ok()?.expect?.exit {
        0 => Some(Expected::Pass),
        1 => Some(Expected::Fail),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_resolve_their_paths_and_check_their_values() {
        let dir = std::env::temp_dir().join(format!("memlife-plan-matrix-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("b")).unwrap();
        std::fs::write(dir.join("b/memlife.toml"), "[expect]\nexit = 0\n").unwrap();
        let file = dir.join("m.toml");
        std::fs::write(
            &file,
            "[[matrix]]\nname = \"a\"\nelf = \"a.elf\"\nscript = \"/s.rhai\"\nexpect = \"fail\"\nallocator = \"nano\"\nmethod = \"sample\"\nbudgets = { cycles = 2 }\n\
             [[matrix]]\nname = \"b\"\nconfig = \"b/memlife.toml\"\n",
        )
        .unwrap();
        let t = read(&file).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].elf.as_deref(), Some(dir.join("a.elf").as_path()));
        assert_eq!(t[0].script.as_deref(), Some(Path::new("/s.rhai")));
        assert_eq!(t[0].config, file);
        assert_eq!(t[0].expect, Some(Expected::Fail));
        assert_eq!(t[0].allocator, Some(AllocatorKind::Nano));
        assert_eq!(t[0].method, Some(PeakMethod::Sample));
        assert_eq!(t[0].budgets, vec![("cycles".to_string(), 2.0)]);
        assert_eq!(t[1].config, dir.join("b/memlife.toml"));
        assert_eq!(t[1].expect, Some(Expected::Pass));
        for (entry, wanted) in [
            ("timeout = -1.0", "timeout -1"),
            ("allocator = \"umm\"", "unknown allocator `umm`"),
            ("elff = \"x\"", "elff"),
        ] {
            std::fs::write(&file, format!("[[matrix]]\nname = \"a\"\n{entry}\n")).unwrap();
            let e = read(&file).unwrap_err().to_string();
            assert!(e.contains(wanted), "{entry}: {e}");
            if !entry.starts_with("elff") {
                assert!(e.contains("[[matrix]] `a`"), "{e}");
            }
        }
        std::fs::write(&file, "elf = \"x.elf\"\n").unwrap();
        assert!(read(&file).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
