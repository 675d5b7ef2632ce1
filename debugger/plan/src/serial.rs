//! [`SerialChoice`]: where the serial output of the QEMU memlife starts goes (`--serial`), as
//! the flags give it and the target plan resolves it.

use std::path::PathBuf;

/// Where the serial output of the QEMU memlife starts goes (`--serial`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SerialChoice {
    /// Into this file (created or emptied).
    File(PathBuf),
    /// To memlife's standard output.
    Stdio,
    /// Discarded.
    None,
}

impl SerialChoice {
    /// `file:PATH`, `stdio` or `none`.
    pub fn parse(s: &str) -> Result<SerialChoice, String> {
        match s {
            "stdio" => Ok(SerialChoice::Stdio),
            "none" => Ok(SerialChoice::None),
            _ => match s.strip_prefix("file:") {
                Some("") => Err("file: needs a path, e.g. file:serial.txt".into()),
                Some(path) => Ok(SerialChoice::File(PathBuf::from(path))),
                None => Err(format!(
                    "`{s}`: file:PATH, stdio or none (where the firmware's serial output goes)"
                )),
            },
        }
    }
}

impl std::fmt::Display for SerialChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SerialChoice::File(p) => write!(f, "file:{}", p.display()),
            SerialChoice::Stdio => f.write_str("stdio"),
            SerialChoice::None => f.write_str("none"),
        }
    }
}
