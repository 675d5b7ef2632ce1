//! Errors while reading an ELF and its DWARF.

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::error::Error as _;

    use crate::Symbols;

    use super::*;

    #[test]
    fn causes_are_sources_named_once() {
        let e = Symbols::load(std::path::Path::new("/nonexistent/fw.elf")).unwrap_err();
        assert_eq!(e.to_string(), "cannot read /nonexistent/fw.elf");
        assert!(e.source().unwrap().is::<std::io::Error>());

        let e = Symbols::parse(b"#!/bin/sh\necho not an ELF\n".to_vec(), "x.sh").unwrap_err();
        assert_eq!(e.to_string(), "x.sh is not an ELF file");
        assert!(e.source().unwrap().is::<object::read::Error>(), "{e:?}");

        let e = SymbolError::Dwarf {
            path: "fw.elf".into(),
            source: gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(0)),
        };
        assert_eq!(e.to_string(), "fw.elf: damaged DWARF");
        assert!(e.source().unwrap().is::<gimli::Error>());
    }
}
