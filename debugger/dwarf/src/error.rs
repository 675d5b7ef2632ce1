//! Errors while reading an ELF and its DWARF, and the crate's [`Result`].

/// Crate result type.
pub type Result<T, E = SymbolError> = std::result::Result<T, E>;

/// Why symbols could not be loaded. The parser's own error is the [`source`](std::error::Error::source),
/// not part of the message, so a chain printed with `{:#}` names it once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The path as given.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not an object file at all.
    #[error("{path} is not an ELF file")]
    NotElf {
        /// The path as given.
        path: String,
        /// What the parser said.
        #[source]
        source: object::read::Error,
    },
    /// The file is an object file of another format (PE, Mach-O...).
    #[error("{path} is not an ELF file ({format} format)")]
    OtherFormat {
        /// The path as given.
        path: String,
        /// The format found.
        format: String,
    },
    /// DWARF is present but cannot be parsed.
    #[error("{path}: damaged DWARF")]
    Dwarf {
        /// The path as given.
        path: String,
        /// What gimli said.
        #[source]
        source: gimli::Error,
    },
}
