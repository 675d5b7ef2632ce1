//! Where `memlife serve` may write and read on behalf of a gdb client. A client is not trusted
//! with the file system (any local user can connect to a loopback port): dumps and reports go
//! under one dump directory, by plain relative paths (no root, no `..`, no symbolic link on
//! the way, the dump directory's own name included, no control, bidirectional or zero-width
//! character in a name), and `monitor audit FILE` reads only regular `.rhai` files inside the
//! script directories the server was started with. A script the server will not read gets one
//! error whatever the reason, so that a client cannot learn which host paths exist.

use std::path::{Component, Path, PathBuf};

use crate::error::{Context, Result};
pub use crate::place_error::PlaceError;

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

/// Checks that a client's path is plain and relative (no root, no `..`) and that no name in it
/// holds a character a terminal would not show as it is.
pub fn check_relative(path: &str) -> Result<&Path, PlaceError> {
    if path
        .chars()
        .any(|c| c.is_control() || memlife_core::text::is_deceptive(c))
    {
        return Err(PlaceError::HiddenCharacter(path.to_string()));
    }
    let p = Path::new(path);
    let plain = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return Err(PlaceError::NotRelative(path.to_string()));
    }
    Ok(p)
}

/// Whether `path` is a symbolic link (a missing path is not).
fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

impl Places {
    /// A directory under the dump directory for a client's `rel` (created), refusing a
    /// symbolic link at the dump directory itself or anywhere below it.
    pub fn dir_under(&self, rel: &str) -> Result<PathBuf> {
        let rel = check_relative(rel)?;
        if is_link(&self.dump_dir) {
            return Err(PlaceError::Link(self.dump_dir.clone()).into());
        }
        let mut at = self.dump_dir.clone();
        for c in rel.components() {
            at.push(c);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(PlaceError::Link(at).into()),
                Err(_) => {
                    std::fs::create_dir(&at).context(format!("cannot create {}", at.display()))?
                }
            }
        }
        Ok(at)
    }

    /// The script at `path`, if it is a regular `.rhai` file inside a script directory (after
    /// resolving links). Every refusal is the same [`PlaceError::NoScript`]: a missing file, a
    /// file elsewhere and a file of another kind cannot be told apart, and the error never
    /// shows the file's content.
    pub fn script(&self, path: &str) -> Result<PathBuf, PlaceError> {
        let refused = || PlaceError::NoScript(path.to_string());
        let real = std::fs::canonicalize(path).map_err(|_| refused())?;
        let inside = self
            .script_dirs
            .iter()
            .any(|d| std::fs::canonicalize(d).is_ok_and(|d| real.starts_with(d)));
        let rhai = real.extension().and_then(|e| e.to_str()) == Some("rhai");
        // A FIFO or a device named *.rhai would block or never end the read.
        let regular = std::fs::metadata(&real).is_ok_and(|m| m.is_file());
        if inside && rhai && regular {
            Ok(real)
        } else {
            Err(refused())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::place_error::shown;

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
            assert!(
                matches!(check_relative(bad), Err(PlaceError::NotRelative(_))),
                "{bad}"
            );
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
        // The dump directory itself planted as a link.
        std::os::unix::fs::symlink(root.join("dumps"), root.join("linked")).unwrap();
        let linked = Places {
            dump_dir: root.join("linked"),
            script_dirs: vec![],
        };
        assert!(linked.dir_under("report").is_err());
    }

    /// ESC, a right-to-left override and a zero-width space in a name: refused, and the error
    /// shows them escaped.
    #[test]
    fn names_with_hidden_characters_are_refused() {
        for bad in [
            "a\u{1b}[2J.json",
            "evil\u{202e}nosj.exe",
            "he\u{200b}ap.json",
            "tab\there.json",
            "new\nline.json",
            "bom\u{feff}.json",
        ] {
            let err = check_relative(bad).unwrap_err();
            assert!(matches!(err, PlaceError::HiddenCharacter(_)), "{bad:?}");
            let shown = err.to_string();
            assert!(
                !shown
                    .chars()
                    .any(|c| c.is_control() || memlife_core::text::is_deceptive(c)),
                "{shown:?}"
            );
        }
        assert!(check_relative("caf\u{e9}/\u{5e9}.json").is_ok());
    }

    #[test]
    fn scripts_only_from_script_directories() {
        let root = temp("scripts");
        std::fs::create_dir_all(root.join("ok")).unwrap();
        std::fs::write(root.join("ok/a.rhai"), "1").unwrap();
        std::fs::write(root.join("secret.rhai"), "1").unwrap();
        std::fs::write(root.join("ok/hostname"), "secret-word").unwrap();
        std::os::unix::fs::symlink(root.join("secret.rhai"), root.join("ok/link.rhai")).unwrap();
        std::fs::create_dir_all(root.join("ok/dir.rhai")).unwrap();
        let places = Places {
            dump_dir: root.clone(),
            script_dirs: vec![root.join("ok")],
        };
        assert!(
            places
                .script(root.join("ok/a.rhai").to_str().unwrap())
                .is_ok()
        );
        let refusal = |p: &str| {
            let e = places.script(p).unwrap_err();
            // The same words whatever the reason, with the path given.
            e.to_string().replace(&shown(p), "PATH")
        };
        let missing = refusal(root.join("ok/missing.rhai").to_str().unwrap());
        for bad in [
            "secret.rhai",
            "ok/link.rhai",
            "ok/hostname",
            "ok/../secret.rhai",
            "ok/dir.rhai",
            "nowhere/x.rhai",
        ] {
            let shown = refusal(root.join(bad).to_str().unwrap());
            assert!(!shown.contains("secret-word"), "{bad}");
            assert_eq!(shown, missing, "{bad}");
        }
        assert_eq!(refusal("/etc/hostname"), missing);
        assert_eq!(refusal("/etc"), missing);
    }
}
