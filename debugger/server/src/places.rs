//! Where `memlife serve` may write and read on behalf of a gdb client. A client is not trusted
//! with the file system (any local user can connect to a loopback port): dumps and reports go
//! under one dump directory, by plain relative paths (no root, no `..`, no symbolic link on
//! the way), and `monitor audit FILE` reads only `.rhai` scripts inside the script directories
//! the server was started with.

use std::path::{Component, Path, PathBuf};

use crate::error::{Context, Result, ServeError};

macro_rules! bail {
    ($($t:tt)*) => {
        return Err(ServeError::Command(format!($($t)*)))
    };
}

/// The directories a server works in.
#[derive(Debug, Clone)]
pub struct Places {
    /// Dumps, reports and the files scripts write go under here.
    pub dump_dir: PathBuf,
    /// `monitor audit FILE` reads scripts only below these.
    pub script_dirs: Vec<PathBuf>,
}

impl Default for Places {
    /// The working directory for both.
    fn default() -> Self {
        Places {
            dump_dir: PathBuf::from("."),
            script_dirs: vec![PathBuf::from(".")],
        }
    }
}

/// Checks that a client's path is plain and relative (no root, no `..`).
pub fn check_relative(path: &str) -> Result<&Path> {
    let p = Path::new(path);
    let plain = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        bail!(
            "`{}`: give a relative path without `..`; files are written under the server's dump directory (--dump-dir)",
            path.escape_debug()
        );
    }
    Ok(p)
}

impl Places {
    /// A directory under the dump directory for a client's `rel` (created), refusing a
    /// symbolic link anywhere below the dump directory.
    pub fn dir_under(&self, rel: &str) -> Result<PathBuf> {
        let rel = check_relative(rel)?;
        let mut at = self.dump_dir.clone();
        for c in rel.components() {
            at.push(c);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => bail!(
                    "{} is a symbolic link; the server writes only inside its dump directory",
                    at.display()
                ),
                Ok(_) => {}
                Err(_) => {
                    std::fs::create_dir(&at).context(format!("cannot create {}", at.display()))?
                }
            }
        }
        Ok(at)
    }

    /// The script at `path`, if it is a `.rhai` file inside a script directory (after
    /// resolving links). The error names the path, never the file's content.
    pub fn script(&self, path: &str) -> Result<PathBuf> {
        let shown = path.escape_debug();
        let real = std::fs::canonicalize(path).context(format!("cannot read script {shown}"))?;
        if real.extension().and_then(|e| e.to_str()) != Some("rhai") {
            bail!("{shown} is not a Rhai script (*.rhai)");
        }
        let inside = self
            .script_dirs
            .iter()
            .any(|d| std::fs::canonicalize(d).is_ok_and(|d| real.starts_with(d)));
        if !inside {
            bail!(
                "{shown} is outside the script directories this server was started with (--script-dir)"
            );
        }
        Ok(real)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("memlife-places-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn client_paths_stay_in_the_dump_directory() {
        assert!(check_relative("dumps/a.json").is_ok());
        for bad in ["/etc/passwd", "../x.json", "a/../../x", ""] {
            assert!(check_relative(bad).is_err(), "{bad}");
        }
        let root = temp("dirs");
        let places = Places {
            dump_dir: root.join("dumps"),
            script_dirs: vec![],
        };
        std::fs::create_dir_all(&places.dump_dir).unwrap();
        std::os::unix::fs::symlink("/tmp", places.dump_dir.join("out")).unwrap();
        assert!(places.dir_under("out").is_err());
        assert!(places.dir_under("report/a").unwrap().is_dir());
    }

    #[test]
    fn scripts_only_from_script_directories() {
        let root = temp("scripts");
        std::fs::create_dir_all(root.join("ok")).unwrap();
        std::fs::write(root.join("ok/a.rhai"), "1").unwrap();
        std::fs::write(root.join("secret.rhai"), "1").unwrap();
        std::fs::write(root.join("ok/hostname"), "secret-word").unwrap();
        std::os::unix::fs::symlink(root.join("secret.rhai"), root.join("ok/link.rhai")).unwrap();
        let places = Places {
            dump_dir: root.clone(),
            script_dirs: vec![root.join("ok")],
        };
        assert!(
            places
                .script(root.join("ok/a.rhai").to_str().unwrap())
                .is_ok()
        );
        for bad in [
            "secret.rhai",
            "ok/link.rhai",
            "ok/hostname",
            "ok/../secret.rhai",
        ] {
            let err = places.script(root.join(bad).to_str().unwrap()).unwrap_err();
            assert!(!format!("{err}").contains("secret-word"), "{bad}");
        }
        assert!(places.script("/etc/hostname").is_err());
    }
}
