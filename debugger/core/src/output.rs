//! Writing output files (reports, dumps, snapshots): whole or not at all, and never through a
//! link someone else planted.
//!
//! Every file memlife writes goes through [`write_atomic`] or, for paths a script names under an
//! output directory, [`write_under`]; [`write_atomic_new`] is [`write_atomic`] for a file that
//! must not exist yet (`memlife init -o` without `--force`). A log written as it goes (the
//! firmware's serial output) is [`create_log`]: not atomic, but never opened through a link.
//! What the others guarantee:
//!
//! - **Atomic.** The bytes go to a temporary file in the destination's own directory, which is
//!   then renamed over the destination: a reader sees the old file or the new one, never half of
//!   one, and a crash of memlife leaves the old one (a crash of the machine may leave either:
//!   there is no `fsync`, dumps are many and cheap).
//! - **Unique, exclusive temporary files.** The temporary name carries the process id, a counter
//!   and a random part, and is created with `O_CREAT | O_EXCL | O_NOFOLLOW`: a file or a
//!   symbolic link planted at that name makes the creation fail (and another name is tried), it
//!   is never opened, followed or overwritten.
//! - **Nothing left behind.** A failed write removes its temporary file.
//! - **Never replace, when asked** ([`write_atomic_new`]): the finished temporary file is
//!   hard-linked under the final name, which fails if anything is there (a file, a directory, a
//!   symbolic link, even a dangling one), so a file created by someone else meanwhile is not
//!   overwritten either; the temporary name is then removed. Where the file system has no hard
//!   links, the name is checked and the file renamed, which leaves a short window.
//! - **No way out of an output directory** ([`write_under`]): the relative path may not be
//!   absolute or contain `..`, the output directory itself is opened with `O_NOFOLLOW`, and
//!   every directory below it relative to the one before with `O_NOFOLLOW`, so a symbolic link
//!   at the output directory's own name or inside it (to a folder elsewhere, planted before or
//!   during the write) is refused rather than followed. The rename replaces a link at the final
//!   name itself; it does not write through it.
//!
//! The directories of a path the user gives (`--json out/run.json`, and the parents of an output
//! directory) are the user's choice and are followed as given; only the final name and the
//! temporary file are guarded there.
//!
//! On Unix the directory walk uses `openat`/`mkdirat`/`renameat` (through rustix, no `unsafe`).
//! Elsewhere the same rules are checked with `symlink_metadata` before use, which leaves a
//! window in which a directory can be swapped.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a file could not be written: the path and the operating system's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}", path.display())]
pub struct WriteError {
    /// The destination.
    pub path: PathBuf,
    /// What failed.
    #[source]
    pub source: std::io::Error,
}

impl WriteError {
    fn new(path: &Path, source: std::io::Error) -> Self {
        WriteError {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Attempts at a fresh temporary name before giving up (each collision is another process's
/// file or something planted).
const TEMP_ATTEMPTS: u32 = 16;

/// Writes `bytes` to `path` atomically (see the module docs). Missing parent directories are
/// created.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_placed(path, bytes, Place::Replace)
}

/// Writes `bytes` to `path` atomically, as [`write_atomic`] does, only if nothing is at `path`:
/// fails with [`std::io::ErrorKind::AlreadyExists`] (and leaves what is there untouched) when a
/// file, directory or symbolic link has that name, also one created during the write.
pub fn write_atomic_new(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_placed(path, bytes, Place::New)
}

/// `path` split into its directory (created when missing) and file name, then written there.
fn write_placed(path: &Path, bytes: &[u8], place: Place) -> Result<(), WriteError> {
    let name = path.file_name().ok_or_else(|| {
        WriteError::new(
            path,
            invalid("the path names no file (it ends in `..` or `/`)"),
        )
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| WriteError::new(path, in_directory(dir, e)))?;
    imp::write_in(dir, Base::Followed, &[], Path::new(name), bytes, place)
        .map_err(|e| WriteError::new(path, e))
}

/// Creates (or empties) `path` for a log that is written as it goes, such as the firmware's
/// serial output: missing parent directories are created, and a symbolic link at its name is
/// refused rather than followed (`O_NOFOLLOW`), so the log cannot be sent over someone else's
/// file.
pub fn create_log(path: &Path) -> Result<std::fs::File, WriteError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| WriteError::new(path, e))?;
    }
    imp::create_log(path).map_err(|e| WriteError::new(path, e))
}

/// How the finished temporary file takes the final name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Renamed over whatever is there.
    Replace,
    /// Only if the name is free.
    New,
}

fn already_exists() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "a file is already there".to_string(),
    )
}

/// How the first directory of a write is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    /// Through whatever link the user gave (`--json out/run.json`: `out` is the user's choice).
    Followed,
    /// Refused when it is itself a symbolic link (an output directory: a link planted at its
    /// name would carry every file written under it elsewhere).
    NoLink,
}

/// Writes `bytes` to `root/rel` atomically, where `rel` comes from someone memlife does not
/// trust with the file system (a script, a gdb client): `rel` must be relative and plain (no
/// `..`, no root), and neither `root` itself nor any directory on the way below it may be a
/// symbolic link (`root`'s parents are followed). Missing directories are created (also
/// `root`). Returns the path written.
pub fn write_under(root: &Path, rel: &Path, bytes: &[u8]) -> Result<PathBuf, WriteError> {
    let target = root.join(rel);
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p),
            _ => {
                return Err(WriteError::new(
                    &target,
                    invalid(
                        "only a relative path without `..` may name a file under the output directory",
                    ),
                ));
            }
        }
    }
    let Some((name, dirs)) = parts.split_last() else {
        return Err(WriteError::new(&target, invalid("the path is empty")));
    };
    std::fs::create_dir_all(root).map_err(|e| WriteError::new(&target, in_directory(root, e)))?;
    imp::write_in(
        root,
        Base::NoLink,
        dirs,
        Path::new(name),
        bytes,
        Place::Replace,
    )
    .map_err(|e| WriteError::new(&target, e))?;
    Ok(target)
}

/// An error creating `dir`, saying which directory (the OS's "File exists" alone reads as if the
/// output file itself were in the way).
fn in_directory(dir: &Path, e: std::io::Error) -> std::io::Error {
    let why = if dir.exists() && !dir.is_dir() {
        format!("{} is not a directory", dir.display())
    } else {
        format!("cannot create the directory {}: {e}", dir.display())
    };
    std::io::Error::new(e.kind(), why)
}

fn invalid(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_string())
}

/// A temporary name beside `name`: hidden, unique in this process (counter), distinct between
/// processes (pid) and not guessable in advance (a random part).
fn temp_name(name: &Path) -> PathBuf {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name.as_os_str());
    tmp.push(format!(
        ".{}-{n}-{:016x}.tmp~",
        std::process::id(),
        h.finish()
    ));
    PathBuf::from(tmp)
}

/// Creates a temporary file with `create` under the first of `names` that is free: a name that
/// exists (another writer's file, or something planted) is passed over, not opened.
fn create_exclusive<F>(
    mut names: impl FnMut() -> PathBuf,
    mut create: impl FnMut(&Path) -> std::io::Result<F>,
) -> std::io::Result<(F, PathBuf)> {
    let mut attempt = 0;
    loop {
        let tmp = names();
        match create(&tmp) {
            Ok(file) => return Ok((file, tmp)),
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists && attempt + 1 < TEMP_ATTEMPTS =>
            {
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

fn symlink_refused(dir: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!(
            "{} is a symbolic link or not a directory; memlife does not follow links out of its output directory",
            dir.display()
        ),
    )
}

#[cfg(unix)]
mod imp {
    use std::io::Write as _;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::{Path, PathBuf};

    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;

    use super::{Base, Place, already_exists, create_exclusive, symlink_refused, temp_name};

    /// Opens `path` for writing, created or emptied, refusing a symbolic link at its name.
    pub(super) fn create_log(path: &Path) -> std::io::Result<std::fs::File> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::open(path, flags, Mode::from_bits_truncate(0o644)) {
            Ok(fd) => Ok(std::fs::File::from(fd)),
            Err(Errno::LOOP) => Err(symlink_refused(path)),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens `base` (following a link there only with [`Base::Followed`]), then each of `dirs`
    /// below it without following links, creating what is missing, and writes `name` there.
    pub(super) fn write_in(
        base: &Path,
        how: Base,
        dirs: &[&std::ffi::OsStr],
        name: &Path,
        bytes: &[u8],
        place: Place,
    ) -> std::io::Result<()> {
        let mut dir_flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
        if how == Base::NoLink {
            dir_flags |= OFlags::NOFOLLOW;
        }
        let mut dir: OwnedFd = match rustix::fs::open(base, dir_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(symlink_refused(base)),
            Err(e) => return Err(e.into()),
        };
        let mut walked = base.to_path_buf();
        for part in dirs {
            walked.push(part);
            dir = open_child_dir(&dir, part, &walked)?;
        }
        write_file(&dir, name, bytes, || temp_name(name), place)
    }

    fn open_child_dir(
        parent: &OwnedFd,
        part: &std::ffi::OsStr,
        shown: &Path,
    ) -> std::io::Result<OwnedFd> {
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        match rustix::fs::openat(parent, part, flags, Mode::empty()) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOENT) => {}
            // O_NOFOLLOW on a link gives ELOOP; a link or a file where a directory should be
            // gives ENOTDIR.
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(symlink_refused(shown)),
            Err(e) => return Err(e.into()),
        }
        match rustix::fs::mkdirat(parent, part, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        rustix::fs::openat(parent, part, flags, Mode::empty()).map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR => symlink_refused(shown),
            e => e.into(),
        })
    }

    /// Writes `name` in `dir` through a temporary file named by `temp_names`.
    pub(super) fn write_file(
        dir: &OwnedFd,
        name: &Path,
        bytes: &[u8],
        temp_names: impl FnMut() -> PathBuf,
        place: Place,
    ) -> std::io::Result<()> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let (fd, tmp) = create_exclusive(temp_names, |tmp| {
            rustix::fs::openat(dir, tmp, flags, Mode::from_raw_mode(0o666)).map_err(Into::into)
        })?;
        let written = std::fs::File::from(fd)
            .write_all(bytes)
            .and_then(|()| match place {
                Place::Replace => rustix::fs::renameat(dir, &tmp, dir, name).map_err(Into::into),
                Place::New => link_new(dir, &tmp, name),
            });
        if written.is_err() || place == Place::New {
            // Our own file (created exclusively above): remove it, whatever went wrong; after
            // a link it is the second name of the file just placed.
            let _ = rustix::fs::unlinkat(dir.as_fd(), &tmp, AtFlags::empty());
        }
        written
    }

    /// Gives the file at `tmp` the name `name` too, only if `name` is free.
    fn link_new(dir: &OwnedFd, tmp: &Path, name: &Path) -> std::io::Result<()> {
        match rustix::fs::linkat(dir, tmp, dir, name, AtFlags::empty()) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => Err(already_exists()),
            // No hard links here (FAT, some network file systems): check, then rename.
            // (NOTSUP and OPNOTSUPP are one value on Linux, two elsewhere.)
            Err(e) if [Errno::PERM, Errno::NOTSUP, Errno::OPNOTSUPP, Errno::MLINK].contains(&e) => {
                match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(_) => Err(already_exists()),
                    Err(Errno::NOENT) => {
                        rustix::fs::renameat(dir, tmp, dir, name).map_err(Into::into)
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use std::path::Path;

    use super::{Base, Place, already_exists, create_exclusive, symlink_refused, temp_name};

    /// Opens `path` for writing, created or emptied, refusing a symbolic link at its name.
    pub(super) fn create_log(path: &Path) -> std::io::Result<std::fs::File> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(symlink_refused(path));
        }
        std::fs::File::create(path)
    }

    pub(super) fn write_in(
        base: &Path,
        how: Base,
        dirs: &[&std::ffi::OsStr],
        name: &Path,
        bytes: &[u8],
        place: Place,
    ) -> std::io::Result<()> {
        if how == Base::NoLink && std::fs::symlink_metadata(base)?.file_type().is_symlink() {
            return Err(symlink_refused(base));
        }
        let mut dir = base.to_path_buf();
        for part in dirs {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(symlink_refused(&dir)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&dir)?,
                Err(e) => return Err(e),
            }
        }
        let (mut file, tmp) = create_exclusive(
            || dir.join(temp_name(name)),
            |tmp| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(tmp)
            },
        )?;
        let target = dir.join(name);
        let written = std::io::Write::write_all(&mut file, bytes).and_then(|()| {
            if place == Place::New && std::fs::symlink_metadata(&target).is_ok() {
                return Err(already_exists());
            }
            std::fs::rename(&tmp, &target)
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A fresh directory for one test.
    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("memlife-output-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_the_file_and_leaves_nothing_else() {
        let dir = scratch("replace");
        let path = dir.join("sub/report.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(&dir.join("sub")), ["report.json"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn links_planted_at_the_old_temporary_names_are_left_alone() {
        let dir = scratch("planted");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let path = dir.join("r.json");
        // What the four earlier writers used: PATH.tmp~, PATH with extension tmp~, .NAME.tmp-PID.
        let planted = [
            "r.json.tmp~".to_string(),
            "r.tmp~".to_string(),
            format!(".r.json.tmp-{}", std::process::id()),
        ];
        for p in &planted {
            std::os::unix::fs::symlink(&victim, dir.join(p)).unwrap();
        }
        write_atomic(&path, b"report").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read(&path).unwrap(), b"report");
        for p in &planted {
            assert!(dir.join(p).is_symlink(), "{p} still the planted link");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_chosen_temporary_name_is_never_opened() {
        use std::os::fd::OwnedFd;
        let dir = scratch("temp-link");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("taken")).unwrap();
        std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling")).unwrap();
        let fd: OwnedFd = std::fs::File::open(&dir).unwrap().into();
        let mut offered = vec!["fresh", "dangling", "taken"];
        imp::write_file(
            &fd,
            Path::new("out"),
            b"data",
            || PathBuf::from(offered.pop().unwrap()),
            Place::Replace,
        )
        .unwrap();
        assert!(offered.is_empty(), "both planted names were skipped");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(
            !dir.join("nowhere").exists(),
            "the dangling link was not followed"
        );
        assert_eq!(std::fs::read(dir.join("out")).unwrap(), b"data");
        assert_eq!(names(&dir), ["dangling", "out", "taken", "victim"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_new_file_is_written_once_and_never_replaces_anything() {
        let dir = scratch("new");
        let path = dir.join("memlife.toml");
        write_atomic_new(&path, b"first").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let err = write_atomic_new(&path, b"second").unwrap_err();
        assert_eq!(err.source.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        // A directory there is not replaced either, and nothing is left behind.
        std::fs::create_dir(dir.join("d")).unwrap();
        let err = write_atomic_new(&dir.join("d"), b"x").unwrap_err();
        assert_eq!(err.source.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(names(&dir), ["d", "memlife.toml"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_does_not_go_through_or_over_a_link() {
        let dir = scratch("new-link");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling")).unwrap();
        for name in ["link", "dangling"] {
            let err = write_atomic_new(&dir.join(name), b"x").unwrap_err();
            assert_eq!(
                err.source.kind(),
                std::io::ErrorKind::AlreadyExists,
                "{name}"
            );
            assert!(dir.join(name).is_symlink(), "{name} still the link");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!dir.join("nowhere").exists());
        assert_eq!(names(&dir), ["dangling", "link", "victim"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_log_is_created_or_emptied_and_never_opened_through_a_link() {
        use std::io::Write as _;
        let dir = scratch("log");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("serial.txt")).unwrap();
        let err = create_log(&dir.join("serial.txt")).unwrap_err();
        assert!(err.to_string().contains("serial.txt"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let log = dir.join("sub/serial.txt");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(&log, "an earlier run's lines").unwrap();
        let mut f = create_log(&log).unwrap();
        f.write_all(b"boot\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "boot\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = scratch("failed");
        // A non-empty directory where the file should go: the rename fails.
        std::fs::create_dir_all(dir.join("report.json/inside")).unwrap();
        let err = write_atomic(&dir.join("report.json"), b"x").unwrap_err();
        assert_eq!(err.path, dir.join("report.json"));
        assert_eq!(names(&dir), ["report.json"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn paths_under_the_output_directory_stay_under_it() {
        let dir = scratch("under");
        let out = dir.join("out");
        let written = write_under(&out, Path::new("a/b/heap.json"), b"{}").unwrap();
        assert_eq!(written, out.join("a/b/heap.json"));
        assert_eq!(std::fs::read(&written).unwrap(), b"{}");
        for bad in [
            "../escape.json",
            "/tmp/abs.json",
            "a/../../x.json",
            "",
            "./x/../y",
        ] {
            let err = write_under(&out, Path::new(bad), b"{}").unwrap_err();
            assert_eq!(err.source.kind(), std::io::ErrorKind::InvalidInput, "{bad}");
        }
        assert!(!dir.join("escape.json").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_folder_inside_the_output_directory_is_not_followed() {
        let dir = scratch("linked-folder");
        let out = dir.join("out");
        let outside = dir.join("outside");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("sub")).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("deeper")).unwrap();
        for rel in ["sub/heap.json", "sub/x/heap.json"] {
            let err = write_under(&out, Path::new(rel), b"{}").unwrap_err();
            assert_eq!(
                err.source.kind(),
                std::io::ErrorKind::PermissionDenied,
                "{rel}"
            );
            assert!(err.source.to_string().contains("symbolic link"), "{err:#?}");
        }
        assert!(names(&outside).is_empty(), "nothing was written outside");
        // A link at the final name is replaced, not written through.
        std::os::unix::fs::symlink(outside.join("f"), out.join("final.json")).unwrap();
        write_under(&out, Path::new("final.json"), b"{}").unwrap();
        assert!(!out.join("final.json").is_symlink());
        assert!(names(&outside).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A link planted at the output directory's own name (`DUMP_DIR/memlife-out`) is refused
    /// like one inside it; the directories above it are the user's and are followed.
    #[cfg(unix)]
    #[test]
    fn a_link_at_the_output_directory_itself_is_not_followed() {
        let dir = scratch("linked-root");
        let outside = dir.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("out")).unwrap();
        let err = write_under(&dir.join("out"), Path::new("heap.json"), b"{}").unwrap_err();
        assert_eq!(err.source.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(err.source.to_string().contains("symbolic link"), "{err:#?}");
        assert!(names(&outside).is_empty(), "nothing was written outside");
        // A linked parent is the user's choice.
        std::os::unix::fs::symlink(&outside, dir.join("parent")).unwrap();
        write_under(&dir.join("parent/out"), Path::new("heap.json"), b"{}").unwrap();
        assert!(outside.join("out/heap.json").is_file());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
