//! The list a wide run audits: the `[[matrix]]` entries of one memlife.toml (read and checked
//! by `memlife_plan::matrix`), or one target per `--config` file; then the part of it this
//! machine runs (`--shard I/N`). Each target's name is its output folder's, checked here.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use memlife_audit::PeakMethod;
use memlife_heap::AllocatorKind;
use memlife_plan::matrix::{MatrixEntry, expected_by};

pub use memlife_plan::matrix::Expected;

/// One target of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Unique; the name of its output folder and of its JUnit test suite.
    pub name: String,
    /// The memlife.toml its audit reads.
    pub config: PathBuf,
    /// The firmware, when the entry names it (else the config's `elf`).
    pub elf: Option<PathBuf>,
    /// The script, when the entry names it (else the SCRIPT argument).
    pub script: Option<PathBuf>,
    /// The verdict `--expect` compares with.
    pub expect: Option<Expected>,
    /// Flags for this target only, after the shared ones.
    pub overrides: Overrides,
}

/// An entry's own settings, which win over the command line's shared flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub qemu: Option<String>,
    pub method: Option<PeakMethod>,
    pub timeout: Option<f64>,
    pub allocator: Option<AllocatorKind>,
    pub budgets: Vec<(String, f64)>,
    /// Further `memlife audit` flags, verbatim.
    pub args: Vec<String>,
    /// The matrix file's `fail_on_skip`, passed on as `--fail-on-skip`.
    pub fail_on_skip: bool,
}

/// `--shard I/N`: the I-th of N parts, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` with 1 <= I <= N.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let parsed = s
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) if index >= 1 && index <= count => Ok(Shard { index, count }),
            _ => Err(format!("`{s}` is not I/N with 1 <= I <= N (e.g. 1/2)")),
        }
    }

    /// Round robin over the list's order, so every machine gets a mix of the list and the parts
    /// of N machines are disjoint and cover it, whatever the list's length.
    pub fn select<T>(self, list: Vec<T>) -> Vec<T> {
        list.into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.count == self.index - 1)
            .map(|(_, t)| t)
            .collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The matrix entries of `path`, or none when it has no `[[matrix]]`.
pub fn matrix(path: &Path) -> Result<Vec<Target>> {
    let targets = memlife_plan::matrix::read(path)?
        .into_iter()
        .map(Target::from)
        .collect::<Vec<_>>();
    check_names(&targets, path)?;
    check_args(&targets, path)?;
    Ok(targets)
}

impl From<MatrixEntry> for Target {
    fn from(e: MatrixEntry) -> Self {
        Target {
            name: e.name,
            config: e.config,
            elf: e.elf,
            script: e.script,
            expect: e.expect,
            overrides: Overrides {
                qemu: e.qemu,
                method: e.method,
                timeout: e.timeout,
                allocator: e.allocator,
                budgets: e.budgets,
                args: e.args,
                fail_on_skip: e.fail_on_skip,
            },
        }
    }
}

/// One target per file, named after its folder (`examples/healthy/memlife.toml` is `healthy`)
/// or its stem when that is not `memlife`; a name taken twice gets `-2`, `-3`.
pub fn from_configs(paths: &[PathBuf]) -> Result<Vec<Target>> {
    let mut targets: Vec<Target> = Vec::new();
    for path in paths {
        if !matrix(path)?.is_empty() {
            bail!(
                "{} has a [[matrix]]: give it as the only --config (matrices do not nest)",
                path.display()
            );
        }
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("target");
        let base = if stem == "memlife" {
            path.canonicalize()
                .ok()
                .and_then(|p| Some(p.parent()?.file_name()?.to_str()?.to_string()))
                .unwrap_or_else(|| stem.to_string())
        } else {
            stem.to_string()
        };
        let base = sanitize(&base);
        let mut name = base.clone();
        let mut n = 1;
        // The run's own output files are taken too: OUT/NAME/ must not be one of them.
        while targets.iter().any(|t| t.name == name) || RESERVED.contains(&name.as_str()) {
            n += 1;
            name = format!("{base}-{n}");
        }
        targets.push(Target {
            name,
            config: path.clone(),
            elf: None,
            script: None,
            expect: expected_by(path),
            overrides: Overrides::default(),
        });
    }
    Ok(targets)
}

/// Names of the run's own files in OUT, which no target's folder may take.
const RESERVED: [&str; 2] = ["junit.xml", "summary.json"];

/// A name is a folder name: letters, digits, `.`, `_`, `-`.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if is_name(&s) { s } else { format!("t{s}") }
}

fn check_names(targets: &[Target], path: &Path) -> Result<()> {
    for (i, t) in targets.iter().enumerate() {
        if !is_name(&t.name) {
            bail!(
                "{}: [[matrix]] name `{}` is not a folder name (letters, digits, `.`, `_`, `-`)",
                path.display(),
                t.name
            );
        }
        if RESERVED.contains(&t.name.as_str()) {
            bail!(
                "{}: [[matrix]] name `{}` is the run's own output file: choose another",
                path.display(),
                t.name
            );
        }
        if targets[..i].iter().any(|o| o.name == t.name) {
            bail!(
                "{}: [[matrix]] name `{}` is given twice",
                path.display(),
                t.name
            );
        }
        if let Some(o) = targets[..i]
            .iter()
            .find(|o| o.name.eq_ignore_ascii_case(&t.name))
        {
            bail!(
                "{}: [[matrix]] names `{}` and `{}` differ only in case: on a file system that ignores case (macOS, Windows) their output folders would be one",
                path.display(),
                o.name,
                t.name
            );
        }
    }
    Ok(())
}

/// The flags a wide run gives each target's audit itself, with what to write instead. An
/// entry's `args` giving one would reach the child twice.
const SET_BY_THE_RUN: &[(&str, &str)] = &[
    ("--config", "the entry's `config = ...`"),
    ("--elf", "the entry's `elf = ...`"),
    ("--one-target", "nothing: every target is audited alone"),
    ("--out", "nothing: the target's folder is OUT/NAME"),
    (
        "--json",
        "nothing: the target's JSON is OUT/NAME/audit.json",
    ),
    (
        "--junit",
        "nothing: the target's JUnit is OUT/NAME/junit.xml",
    ),
    (
        "--report",
        "nothing: the target's report is OUT/NAME/report/",
    ),
    (
        "--trace",
        "nothing: the target's trace is OUT/NAME/trace.json",
    ),
    ("--shard", "`--shard` on the wide run's own command line"),
    ("--jobs", "`-j` on the wide run's own command line"),
    ("-j", "`-j` on the wide run's own command line"),
];

/// Refuses an entry's `args` that give a flag the run sets itself (`--config x`, `--config=x`).
fn check_args(targets: &[Target], path: &Path) -> Result<()> {
    for t in targets {
        for arg in &t.overrides.args {
            // `--config=x` and the short form glued to its value (`-j2`) name the same flag.
            let flag = match arg.split('=').next().unwrap_or(arg) {
                f if f.starts_with("-j") && !f.starts_with("--") => "-j",
                f => f,
            };
            if let Some((flag, instead)) = SET_BY_THE_RUN.iter().find(|(f, _)| *f == flag) {
                bail!(
                    "{}: [[matrix]] `{}`: args may not give {flag}, which the wide run sets for each target (use {instead})",
                    path.display(),
                    t.name
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn shards_partition_the_list_in_order() {
        let list: Vec<usize> = (0..7).collect();
        let parts: Vec<Vec<usize>> = (1..=3)
            .map(|i| Shard { index: i, count: 3 }.select(list.clone()))
            .collect();
        assert_eq!(parts, vec![vec![0, 3, 6], vec![1, 4], vec![2, 5]]);
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["0/2", "3/2", "1", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matrix_paths_are_relative_to_the_file_and_names_are_checked() {
        let dir = std::env::temp_dir().join(format!("memlife-matrix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.toml");
        std::fs::write(
            &file,
            "[[matrix]]\nname = \"a\"\nelf = \"a.elf\"\nscript = \"/s.rhai\"\nexpect = \"fail\"\nbudgets = { cycles = 2 }\n\
             [[matrix]]\nname = \"b\"\nconfig = \"b/memlife.toml\"\n",
        )
        .unwrap();
        let t = matrix(&file).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].elf.as_deref(), Some(dir.join("a.elf").as_path()));
        assert_eq!(t[0].script.as_deref(), Some(Path::new("/s.rhai")));
        assert_eq!(t[0].config, file);
        assert_eq!(t[0].expect, Some(Expected::Fail));
        assert_eq!(t[0].overrides.budgets, vec![("cycles".to_string(), 2.0)]);
        assert_eq!(t[1].config, dir.join("b/memlife.toml"));
        std::fs::write(&file, "[[matrix]]\nname = \"../x\"\n").unwrap();
        assert!(
            matrix(&file)
                .unwrap_err()
                .to_string()
                .contains("folder name")
        );
        std::fs::write(
            &file,
            "[[matrix]]\nname = \"a\"\n[[matrix]]\nname = \"a\"\n",
        )
        .unwrap();
        assert!(matrix(&file).unwrap_err().to_string().contains("twice"));
        std::fs::write(
            &file,
            "[[matrix]]\nname = \"board\"\n[[matrix]]\nname = \"Board\"\n",
        )
        .unwrap();
        let e = matrix(&file).unwrap_err().to_string();
        assert!(e.contains("`board` and `Board` differ only in case"), "{e}");
        for args in [
            r#"["--config", "x.toml"]"#,
            r#"["--json=x.json"]"#,
            r#"["-j", "2"]"#,
        ] {
            std::fs::write(&file, format!("[[matrix]]\nname = \"a\"\nargs = {args}\n")).unwrap();
            let e = matrix(&file).unwrap_err().to_string();
            assert!(
                e.contains("args may not give") && e.contains("`a`"),
                "{args}: {e}"
            );
        }
        std::fs::write(
            &file,
            "[[matrix]]\nname = \"a\"\nargs = [\"--timeout\", \"3\"]\n",
        )
        .unwrap();
        assert_eq!(matrix(&file).unwrap()[0].overrides.args, ["--timeout", "3"]);
        std::fs::write(&file, "[[matrix]]\nname = \"junit.xml\"\n").unwrap();
        assert!(
            matrix(&file)
                .unwrap_err()
                .to_string()
                .contains("output file")
        );
        std::fs::write(&file, "[[matrix]]\nname = \"a\"\ntimeout = -1.0\n").unwrap();
        let e = matrix(&file).unwrap_err().to_string();
        assert!(e.contains("`a`") && e.contains("timeout -1"), "{e}");
        std::fs::write(&file, "[[matrix]]\nname = \"a\"\nelff = \"x\"\n").unwrap();
        assert!(matrix(&file).unwrap_err().to_string().contains("elff"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn config_files_are_named_after_their_folder_or_stem_and_expect_their_exit() {
        let dir = std::env::temp_dir().join(format!("memlife-configs-{}", std::process::id()));
        for sub in ["healthy", "other/healthy"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
            std::fs::write(dir.join(sub).join("memlife.toml"), "[expect]\nexit = 1\n").unwrap();
        }
        std::fs::write(dir.join("board b.toml"), "").unwrap();
        let paths = [
            dir.join("healthy/memlife.toml"),
            dir.join("other/healthy/memlife.toml"),
            dir.join("board b.toml"),
        ];
        let t = from_configs(&paths).unwrap();
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["healthy", "healthy-2", "board_b"]);
        assert_eq!(t[0].expect, Some(Expected::Fail));
        assert_eq!(t[2].expect, None);
        // A config named like the run's own output file does not get that folder name.
        std::fs::write(dir.join("summary.json.toml"), "").unwrap();
        let t = from_configs(&[dir.join("summary.json.toml")]).unwrap();
        assert_eq!(t[0].name, "summary.json-2");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
