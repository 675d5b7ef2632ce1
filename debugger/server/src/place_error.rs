//! [`PlaceError`]: why a client's path is refused (see [`crate::places`]). Apart from `places`
//! because the server's error carries it and `places` returns the server's error.

use std::path::PathBuf;

/// Why a client's path is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlaceError {
    /// Absolute, with `..`, or empty.
    #[error(
        "`{}`: give a relative path without `..`; files are written under the server's dump directory (--dump-dir)",
        shown(.0)
    )]
    NotRelative(String),
    /// A name with a character that hides or rewrites what a terminal shows.
    #[error(
        "`{}`: a file name may not hold control, bidirectional or zero-width characters",
        shown(.0)
    )]
    HiddenCharacter(String),
    /// A symbolic link (or a file) where a directory is written.
    #[error(
        "{} is a symbolic link or not a directory; the server writes only inside its dump directory",
        .0.display()
    )]
    Link(PathBuf),
    /// Not a script this server runs: missing, not a regular `.rhai` file, or outside the
    /// script directories (which of them is not said).
    #[error(
        "cannot run `{}`: it does not exist, is not a Rhai script (*.rhai), or is outside the script directories this server was started with (--script-dir)",
        shown(.0)
    )]
    NoScript(String),
}

/// A client's path as an error shows it: every control, bidirectional and zero-width character
/// escaped (tabs and newlines too: a name is one line).
pub(crate) fn shown(path: &str) -> String {
    memlife_core::text::printable(&path.escape_debug().to_string()).into_owned()
}
