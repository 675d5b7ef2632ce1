//! Files memlife reads because the user named them (the ELF, a snapshot, a script, a config, a
//! report to compare): only regular files, and only up to a size. A device (`/dev/zero`) would
//! be read without end until the kernel's out-of-memory killer stops memlife, and a FIFO would
//! block the read forever; a symbolic link to a regular file is fine.

use std::io::Read;
use std::path::Path;

/// The largest ELF memlife reads: firmware with full DWARF is tens of MiB; 1 GiB is no firmware.
pub const MAX_ELF_BYTES: u64 = 1 << 30;
/// The largest snapshot, report or other data file: a snapshot holds the target's RAM.
pub const MAX_DATA_BYTES: u64 = 1 << 30;
/// The largest script or settings file: text a person wrote.
pub const MAX_TEXT_BYTES: u64 = 16 << 20;

/// Reads `path`, a regular file of at most `limit` bytes. The error says which rule the file
/// broke (`not a regular file (a FIFO)`, `larger than 1 GiB`) in the `io::Error`'s message.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    // Checked before opening: opening a FIFO for reading already blocks.
    check_kind(&std::fs::metadata(path)?)?;
    let file = std::fs::File::open(path)?;
    // And again on what was opened, should the name have been swapped in between.
    let meta = file.metadata()?;
    check_kind(&meta)?;
    if meta.len() > limit {
        return Err(too_large(limit));
    }
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // A file that grows while it is read stops at the limit all the same.
    file.take(limit.saturating_add(1)).read_to_end(&mut data)?;
    if data.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(data)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, limit)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

fn check_kind(meta: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    let kind = if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("not a regular file ({kind})"),
    ))
}

fn too_large(limit: u64) -> std::io::Error {
    let size = if limit >= 1 << 30 && limit.is_multiple_of(1 << 30) {
        format!("{} GiB", limit >> 30)
    } else if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit} bytes")
    };
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("larger than {size}, which no file of this kind is"),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn dir(test: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("memlife-input-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn devices_directories_and_fifos_are_refused_without_reading() {
        let e = read_regular(Path::new("/dev/zero"), MAX_ELF_BYTES).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let d = dir("kinds");
        let e = read_regular(&d, MAX_ELF_BYTES).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let fifo = d.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Would block forever if it were opened.
        let e = read_regular(&fifo, MAX_ELF_BYTES).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn files_and_links_to_them_are_read_up_to_the_limit() {
        let d = dir("limit");
        let f = d.join("f");
        std::fs::write(&f, b"12345").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(read_regular(&link, 5).unwrap(), b"12345");
        let e = read_regular(&f, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "larger than 4 bytes, which no file of this kind is"
        );
        assert_eq!(
            too_large(MAX_TEXT_BYTES).to_string(),
            "larger than 16 MiB, which no file of this kind is"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
