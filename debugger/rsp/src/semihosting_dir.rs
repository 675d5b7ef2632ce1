//! The one host directory a firmware's semihosting calls may use (`--semihosting-dir DIR`).
//!
//! Without it memlife refuses every host file access (see `packets::fileio`). With it, the
//! firmware may open, read, write, seek, close, remove, rename and stat regular files under DIR
//! and nowhere else:
//!
//! - a path is relative to DIR: absolute paths, empty components and `..` are refused before
//!   anything is opened;
//! - the walk goes one component at a time from a descriptor of DIR (`openat` with
//!   `O_NOFOLLOW`, through rustix), so a symbolic link anywhere in the path, planted by the
//!   firmware or anyone else, is never followed; no directories are created;
//! - only regular files are opened (a FIFO or a device under DIR is refused, and `O_NONBLOCK`
//!   keeps the open itself from waiting on one), and never one with a second name: a hard link
//!   may be a file outside DIR; truncation waits until these checks passed;
//! - a remove takes only what open would (a regular file with one name);
//! - a rename moves a regular, single-named file to a name under DIR that is free or another
//!   such file; `stat` answers for such files and for directories under DIR, `fstat` for the
//!   files the firmware opened; links are refused as for open;
//! - the bytes written in all are capped ([`SemihostingDir::max_write`]), and so is the number
//!   of files open at once.
//!
//! Errors are GDB File-I/O errno values, the firmware's to handle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::packets::fileio::errno;

/// Bytes a firmware may write under the directory in one session unless told otherwise.
pub const DEFAULT_MAX_WRITE: u64 = 64 * 1024 * 1024;

/// Files a firmware may hold open at once.
const MAX_OPEN: usize = 32;

/// Longest path a firmware may name (bytes, without the terminating NUL).
pub(crate) const MAX_PATH: u64 = 1024;

/// First descriptor handed to the firmware: 0-2 are the console.
const FIRST_FD: u64 = 3;

/// Why a path was refused outright (said once to the user).
pub(crate) const OUTSIDE: &str = "leave the semihosting directory";

/// GDB File-I/O open flags (protocol values, not the host's).
mod flags {
    pub const ACCMODE: u64 = 3;
    pub const WRONLY: u64 = 1;
    pub const RDWR: u64 = 2;
    pub const APPEND: u64 = 0x8;
    pub const CREAT: u64 = 0x200;
    pub const TRUNC: u64 = 0x400;
    pub const EXCL: u64 = 0x800;
}

/// The directory, and the files the firmware opened in it.
#[derive(Debug)]
pub struct SemihostingDir {
    root: PathBuf,
    #[cfg(unix)]
    dir: rustix::fd::OwnedFd,
    #[cfg(unix)]
    files: BTreeMap<u64, std::fs::File>,
    #[cfg(not(unix))]
    files: BTreeMap<u64, ()>,
    written: u64,
    max_write: u64,
}

/// A failed call: the errno for the firmware, and whether it was a path leading out (which
/// memlife reports to the user).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Denied {
    pub errno: u32,
    pub outside: bool,
}

impl Denied {
    fn errno(errno: u32) -> Self {
        Denied {
            errno,
            outside: false,
        }
    }
    fn outside() -> Self {
        Denied {
            errno: errno::EACCES,
            outside: true,
        }
    }
}

/// Checks a firmware's path and splits it into components: relative, no `..`, no `.`-only or
/// empty parts, no NUL. Every refusal here is a path leading out (or nowhere).
pub(crate) fn components(path: &[u8]) -> Result<Vec<&[u8]>, Denied> {
    let path = path.strip_suffix(b"\0").unwrap_or(path);
    if path.is_empty() || path.len() as u64 > MAX_PATH || path.contains(&0) {
        return Err(Denied::errno(errno::EINVAL));
    }
    if path.starts_with(b"/") || path.starts_with(b"\\") {
        return Err(Denied::outside());
    }
    let mut parts = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(Denied::outside()),
            p if p.contains(&b'\\') => return Err(Denied::outside()),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(Denied::errno(errno::EINVAL));
    }
    Ok(parts)
}

impl SemihostingDir {
    /// Opens `root` (which must be an existing directory) with the default write cap.
    pub fn open(root: &Path) -> std::io::Result<SemihostingDir> {
        Self::with_max_write(root, DEFAULT_MAX_WRITE)
    }

    /// Opens `root` with a cap of `max_write` bytes written in all.
    pub fn with_max_write(root: &Path, max_write: u64) -> std::io::Result<SemihostingDir> {
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            // The user named DIR: a link there is theirs to follow. Below it, nothing is.
            let dir = rustix::fs::open(
                root,
                OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            Ok(SemihostingDir {
                root: root.to_path_buf(),
                dir,
                files: BTreeMap::new(),
                written: 0,
                max_write,
            })
        }
        #[cfg(not(unix))]
        {
            let _ = (root, max_write);
            Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "--semihosting-dir needs a Unix host",
            ))
        }
    }

    /// The directory as the user named it.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Bytes the firmware may write in all.
    pub fn max_write(&self) -> u64 {
        self.max_write
    }

    /// Bytes the firmware wrote so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Whether `fd` is a file the firmware opened here.
    pub(crate) fn owns(&self, fd: u64) -> bool {
        self.files.contains_key(&fd)
    }

    fn free_fd(&self) -> Result<u64, Denied> {
        if self.files.len() >= MAX_OPEN {
            return Err(Denied::errno(errno::EMFILE));
        }
        (FIRST_FD..)
            .find(|fd| !self.files.contains_key(fd))
            .ok_or(Denied::errno(errno::EMFILE))
    }
}

#[cfg(unix)]
mod imp {
    use std::io::{Read, Seek, SeekFrom, Write};

    use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use rustix::io::Errno;

    use super::{Denied, SemihostingDir, components, flags};
    use crate::packets::fileio::{FileStat, errno};

    fn to_denied(e: Errno) -> Denied {
        let errno = match e {
            // A link where the path goes on (or ends): it is not followed.
            Errno::LOOP | Errno::MLINK => return Denied::outside(),
            Errno::NOENT => errno::ENOENT,
            Errno::EXIST => errno::EEXIST,
            Errno::NOTDIR => errno::ENOTDIR,
            Errno::ISDIR => errno::EISDIR,
            Errno::ACCESS | Errno::PERM => errno::EACCES,
            Errno::NOSPC => errno::ENOSPC,
            Errno::NAMETOOLONG => errno::ENAMETOOLONG,
            Errno::ROFS => errno::EROFS,
            Errno::INVAL => errno::EINVAL,
            _ => errno::EUNKNOWN,
        };
        Denied::errno(errno)
    }

    impl SemihostingDir {
        /// Opens the directory holding the last component, never following a link.
        fn parent(&self, parts: &[&[u8]]) -> Result<Option<OwnedFd>, Denied> {
            let mut current: Option<OwnedFd> = None;
            for part in parts {
                let at: BorrowedFd<'_> = match &current {
                    Some(fd) => fd.as_fd(),
                    None => self.dir.as_fd(),
                };
                let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
                let next = rustix::fs::openat(at, *part, flags, Mode::empty()).map_err(|e| {
                    // O_NOFOLLOW|O_DIRECTORY on a link gives ELOOP or ENOTDIR: both a refusal.
                    match e {
                        Errno::NOTDIR => Denied::outside(),
                        e => to_denied(e),
                    }
                })?;
                current = Some(next);
            }
            Ok(current)
        }

        /// `open,path,flags,mode`: the firmware's descriptor.
        pub(crate) fn open_file(
            &mut self,
            path: &[u8],
            gflags: u64,
            mode: u64,
        ) -> Result<u64, Denied> {
            let parts = components(path)?;
            let fd = self.free_fd()?;
            let (last, dirs) = parts.split_last().ok_or(Denied::errno(errno::EINVAL))?;
            let parent = self.parent(dirs)?;
            let at = parent.as_ref().map_or(self.dir.as_fd(), |d| d.as_fd());
            let mut oflags = match gflags & flags::ACCMODE {
                flags::WRONLY => OFlags::WRONLY,
                flags::RDWR => OFlags::RDWR,
                _ => OFlags::RDONLY,
            };
            // O_TRUNC waits for the checks below: a file that turns out not to be ours to
            // write is never emptied.
            for (g, o) in [
                (flags::APPEND, OFlags::APPEND),
                (flags::CREAT, OFlags::CREATE),
                (flags::EXCL, OFlags::EXCL),
            ] {
                if gflags & g != 0 {
                    oflags |= o;
                }
            }
            oflags |= OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
            // Never executable, never set-id: read and write bits only.
            let mode = Mode::from_raw_mode((mode & 0o666) as rustix::fs::RawMode);
            let file = rustix::fs::openat(at, *last, oflags, mode).map_err(to_denied)?;
            let stat = rustix::fs::fstat(&file).map_err(to_denied)?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                return Err(Denied::errno(errno::EACCES));
            }
            // A second name means a hard link, which may be a file outside the directory.
            if stat.st_nlink > 1 {
                return Err(Denied::outside());
            }
            if gflags & flags::TRUNC != 0 && gflags & flags::ACCMODE != 0 {
                rustix::fs::ftruncate(&file, 0).map_err(to_denied)?;
            }
            self.files.insert(fd, std::fs::File::from(file));
            Ok(fd)
        }

        /// `read,fd,...`: up to `len` bytes.
        pub(crate) fn read(&mut self, fd: u64, len: usize) -> Result<Vec<u8>, Denied> {
            let file = self.files.get_mut(&fd).ok_or(Denied::errno(errno::EBADF))?;
            let mut buf = vec![0; len];
            let n = file.read(&mut buf).map_err(io_denied)?;
            buf.truncate(n);
            Ok(buf)
        }

        /// How many more bytes the firmware may write.
        pub(crate) fn write_allowance(&self) -> u64 {
            self.max_write.saturating_sub(self.written)
        }

        /// `write,fd,...`: the bytes, within the cap (`EFBIG` past it).
        pub(crate) fn write(&mut self, fd: u64, bytes: &[u8]) -> Result<u64, Denied> {
            if !self.files.contains_key(&fd) {
                return Err(Denied::errno(errno::EBADF));
            }
            if !bytes.is_empty() && self.write_allowance() == 0 {
                return Err(Denied::errno(errno::EFBIG));
            }
            let allowed = bytes
                .len()
                .min(usize::try_from(self.write_allowance()).unwrap_or(usize::MAX));
            let file = self.files.get_mut(&fd).ok_or(Denied::errno(errno::EBADF))?;
            let n = file.write(&bytes[..allowed]).map_err(io_denied)?;
            self.written = self.written.saturating_add(n as u64);
            Ok(n as u64)
        }

        /// `lseek,fd,offset,whence`: the new offset.
        pub(crate) fn seek(&mut self, fd: u64, offset: u64, whence: u64) -> Result<u64, Denied> {
            let file = self.files.get_mut(&fd).ok_or(Denied::errno(errno::EBADF))?;
            let signed = i64::try_from(offset).map_err(|_| Denied::errno(errno::EINVAL))?;
            let to = match whence {
                0 => SeekFrom::Start(offset),
                1 => SeekFrom::Current(signed),
                2 => SeekFrom::End(signed),
                _ => return Err(Denied::errno(errno::EINVAL)),
            };
            file.seek(to).map_err(io_denied)
        }

        /// `close,fd`.
        pub(crate) fn close(&mut self, fd: u64) -> Result<(), Denied> {
            self.files
                .remove(&fd)
                .map(drop)
                .ok_or(Denied::errno(errno::EBADF))
        }

        /// `unlink,path`: removes a regular file with one name, as open would take it; a
        /// symbolic link, a second name of a file (which may be a file's only name inside
        /// DIR while it lives on outside), a FIFO or a device is refused like open refuses it.
        pub(crate) fn remove(&mut self, path: &[u8]) -> Result<(), Denied> {
            let (parent, last) = self.locate(path)?;
            check_kind(&self.stat_at(&parent, last)?, false)?;
            let at = parent.as_ref().map_or(self.dir.as_fd(), |d| d.as_fd());
            rustix::fs::unlinkat(at, last, AtFlags::empty()).map_err(to_denied)
        }
    }

    /// The firmware's view of a host `stat`.
    #[allow(clippy::useless_conversion)] // the fields are narrower than i64 on some hosts
    fn file_stat(st: &rustix::fs::Stat) -> FileStat {
        let kind = if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            FileStat::DIRECTORY
        } else {
            FileStat::REGULAR
        };
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        FileStat {
            mode: kind | (st.st_mode & 0o777),
            size: n(st.st_size),
            blksize: n(st.st_blksize.into()),
            blocks: n(st.st_blocks.into()),
            times: [st.st_atime, st.st_mtime, st.st_ctime].map(i64::from),
        }
    }

    /// What may be looked at or moved: a regular file with one name (a link of either kind may
    /// lead out), or, when `dir_ok`, a directory.
    fn check_kind(st: &rustix::fs::Stat, dir_ok: bool) -> Result<(), Denied> {
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => Err(Denied::outside()),
            FileType::RegularFile if st.st_nlink > 1 => Err(Denied::outside()),
            FileType::RegularFile => Ok(()),
            FileType::Directory if dir_ok => Ok(()),
            FileType::Directory => Err(Denied::errno(errno::EISDIR)),
            _ => Err(Denied::errno(errno::EACCES)),
        }
    }

    impl SemihostingDir {
        /// The directory holding `path`'s last component (walked without following links),
        /// and that component.
        fn locate<'p>(&self, path: &'p [u8]) -> Result<(Option<OwnedFd>, &'p [u8]), Denied> {
            let parts = components(path)?;
            let (last, dirs) = parts.split_last().ok_or(Denied::errno(errno::EINVAL))?;
            Ok((self.parent(dirs)?, last))
        }

        /// The entry `name` in `parent` (or the root), not following a link.
        fn stat_at(
            &self,
            parent: &Option<OwnedFd>,
            name: &[u8],
        ) -> Result<rustix::fs::Stat, Denied> {
            let at = parent.as_ref().map_or(self.dir.as_fd(), |d| d.as_fd());
            rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW).map_err(to_denied)
        }

        /// `stat,path,buf`: a regular file or a directory under the root.
        pub(crate) fn stat_path(&self, path: &[u8]) -> Result<FileStat, Denied> {
            let (parent, last) = self.locate(path)?;
            let st = self.stat_at(&parent, last)?;
            check_kind(&st, true)?;
            Ok(file_stat(&st))
        }

        /// `fstat,fd,buf`: a file the firmware opened here.
        pub(crate) fn fstat(&self, fd: u64) -> Result<FileStat, Denied> {
            let file = self.files.get(&fd).ok_or(Denied::errno(errno::EBADF))?;
            let st = rustix::fs::fstat(file).map_err(to_denied)?;
            Ok(file_stat(&st))
        }

        /// `rename,from,to`: both under the root; `from` a single-named regular file, `to` free
        /// or another such file. Should either change between the checks and the rename,
        /// `renameat` still moves only names inside the root: it follows no link and writes
        /// no file's contents.
        pub(crate) fn rename(&mut self, from: &[u8], to: &[u8]) -> Result<(), Denied> {
            let (from_dir, from_name) = self.locate(from)?;
            let (to_dir, to_name) = self.locate(to)?;
            check_kind(&self.stat_at(&from_dir, from_name)?, false)?;
            match self.stat_at(&to_dir, to_name) {
                Ok(st) => check_kind(&st, false)?,
                Err(Denied {
                    errno: errno::ENOENT,
                    ..
                }) => {}
                Err(e) => return Err(e),
            }
            let from_at = from_dir.as_ref().map_or(self.dir.as_fd(), |d| d.as_fd());
            let to_at = to_dir.as_ref().map_or(self.dir.as_fd(), |d| d.as_fd());
            rustix::fs::renameat(from_at, from_name, to_at, to_name).map_err(to_denied)
        }
    }

    fn io_denied(e: std::io::Error) -> Denied {
        match e.raw_os_error() {
            Some(raw) => to_denied(Errno::from_raw_os_error(raw)),
            None => Denied::errno(errno::EUNKNOWN),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn paths_leading_out_are_refused_before_anything_is_opened() {
        for bad in [
            &b"/etc/passwd"[..],
            b"../x",
            b"a/../../x",
            b"a/..",
            b"\\x",
            b"a\\..\\b",
        ] {
            assert_eq!(components(bad), Err(Denied::outside()), "{bad:?}");
        }
        assert_eq!(components(b"").unwrap_err().errno, errno::EINVAL);
        assert_eq!(components(b"a\0b").unwrap_err().errno, errno::EINVAL);
        assert_eq!(components(b"./a//b/\0").unwrap(), vec![&b"a"[..], b"b"]);
    }

    /// What the walk itself refuses: links of every kind, and past the write cap.
    #[cfg(unix)]
    #[test]
    fn links_are_not_followed_and_the_cap_holds() {
        let base = std::env::temp_dir().join(format!("memlife-shdir-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("dir");
        let outside = base.join("outside");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let victim = outside.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("soft")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("sub/out")).unwrap();
        std::fs::hard_link(&victim, dir.join("hard")).unwrap();

        let mut d = SemihostingDir::with_max_write(&dir, 6).unwrap();
        const W: u64 = flags::WRONLY | flags::CREAT | flags::TRUNC;
        for path in [&b"soft"[..], b"hard", b"sub/out/new", b"sub/out/victim"] {
            assert_eq!(
                d.open_file(path, W, 0o644),
                Err(Denied::outside()),
                "{path:?}"
            );
        }
        assert_eq!(d.remove(b"sub/out/victim"), Err(Denied::outside()));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

        let fd = d.open_file(b"sub/f.txt\0", W, 0o777).unwrap();
        assert_eq!(d.write(fd, b"12345678"), Ok(6));
        assert_eq!(d.write(fd, b"9").unwrap_err().errno, errno::EFBIG);
        d.close(fd).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/f.txt")).unwrap(),
            "123456"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("sub/f.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0, "executable bits given: {mode:o}");
        assert_eq!(d.close(fd).unwrap_err().errno, errno::EBADF);
        // Only what open would take is removed: not a link of either kind, not a FIFO.
        assert_eq!(d.remove(b"soft"), Err(Denied::outside()));
        assert_eq!(d.remove(b"hard"), Err(Denied::outside()));
        assert!(dir.join("soft").symlink_metadata().is_ok() && dir.join("hard").exists());
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join("fifo"))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(d.remove(b"fifo").unwrap_err().errno, errno::EACCES);
        assert!(dir.join("fifo").symlink_metadata().is_ok());
        d.remove(b"sub/f.txt").unwrap();
        assert!(!dir.join("sub/f.txt").exists());
        assert!(victim.exists());
        let _ = std::fs::remove_dir_all(&base);
    }

    /// `stat` (which no ARM semihosting call sends, but a File-I/O server may get) and
    /// `rename` follow open's rules; `fstat` answers only for the firmware's own files.
    #[cfg(unix)]
    #[test]
    fn stat_fstat_and_rename_keep_to_the_directory() {
        use crate::packets::fileio::FileStat;
        let base = std::env::temp_dir().join(format!("memlife-shdir-meta-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("dir");
        let outside = base.join("outside");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let victim = outside.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::fs::write(dir.join("f.txt"), "12345").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("soft")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("out")).unwrap();
        std::fs::hard_link(&victim, dir.join("hard")).unwrap();
        let mut d = SemihostingDir::open(&dir).unwrap();

        let st = d.stat_path(b"f.txt\0").unwrap();
        assert_eq!(st.size, 5);
        assert_eq!(st.mode & !0o777, FileStat::REGULAR);
        assert_eq!(
            d.stat_path(b"sub").unwrap().mode & !0o777,
            FileStat::DIRECTORY
        );
        for path in [
            &b"soft"[..],
            b"hard",
            b"out/victim",
            b"../outside/victim",
            b"/etc/passwd",
        ] {
            assert_eq!(d.stat_path(path), Err(Denied::outside()), "{path:?}");
        }
        assert_eq!(d.stat_path(b"missing").unwrap_err().errno, errno::ENOENT);

        let fd = d.open_file(b"f.txt", 0, 0).unwrap();
        assert_eq!(d.fstat(fd).unwrap().size, 5);
        d.close(fd).unwrap();
        assert_eq!(d.fstat(fd).unwrap_err().errno, errno::EBADF);

        d.rename(b"f.txt", b"sub/g.txt").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/g.txt")).unwrap(),
            "12345"
        );
        for (from, to) in [
            (&b"sub/g.txt"[..], &b"../g.txt"[..]),
            (b"sub/g.txt", b"out/g.txt"),
            (b"sub/g.txt", b"hard"),
            (b"sub/g.txt", b"soft"),
            (b"soft", b"moved"),
            (b"hard", b"moved"),
        ] {
            assert_eq!(
                d.rename(from, to),
                Err(Denied::outside()),
                "{from:?} -> {to:?}"
            );
        }
        assert_eq!(d.rename(b"sub", b"sub2").unwrap_err().errno, errno::EISDIR);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        assert!(dir.join("sub/g.txt").exists());
        let _ = std::fs::remove_dir_all(&base);
    }
}
