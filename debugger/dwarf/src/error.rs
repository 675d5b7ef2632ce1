//! Errors while reading an ELF and its DWARF.

/// Why symbols could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not an ELF image.
    #[error("{path} is not an ELF file ({reason})")]
    NotElf {
        /// The path as given.
        path: String,
        /// What the parser said.
        reason: String,
    },
    /// DWARF is present but cannot be parsed.
    #[error("{path}: damaged DWARF: {reason}")]
    Dwarf {
        /// The path as given.
        path: String,
        /// What gimli said.
        reason: String,
    },
}
