//! pc → function and file:line, through `addr2line` (line tables parsed on first use).

use crate::elf::Reader;
use crate::{Result, SymbolError};

/// One frame of a source lookup (inlined frames come first, the outer function last).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceLocation {
    /// Function name.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
}

impl std::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.function.as_deref().unwrap_or("??"))?;
        if let Some(file) = &self.file {
            let short = file.rsplit('/').next().unwrap_or(file);
            write!(f, " at {short}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
        }
        Ok(())
    }
}

pub(crate) struct SourceIndex {
    ctx: addr2line::Context<Reader>,
}

impl SourceIndex {
    pub fn new(dwarf: gimli::Dwarf<Reader>, path: &str) -> Result<Self> {
        let ctx = addr2line::Context::from_dwarf(dwarf).map_err(|source| SymbolError::Dwarf {
            path: path.to_string(),
            source,
        })?;
        Ok(SourceIndex { ctx })
    }

    pub fn locate(&self, pc: u64) -> Vec<SourceLocation> {
        let mut out = Vec::new();
        let mut frames = match self.ctx.find_frames(pc) {
            addr2line::LookupResult::Output(Ok(frames)) => frames,
            _ => return out,
        };
        // Bounded: damaged DWARF must not spin here.
        for _ in 0..64 {
            let Ok(Some(frame)) = frames.next() else {
                break;
            };
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.raw_name().ok().map(|n| n.into_owned()));
            let (file, line) = frame
                .location
                .map(|l| (l.file.map(str::to_string), l.line))
                .unwrap_or((None, None));
            out.push(SourceLocation {
                function,
                file,
                line,
            });
        }
        out
    }

    /// The line table's rows for the code in `[start, end)`: `(address, line, file path)`, in
    /// address order; rows without a line or a file are left out. Bounded like `locate`.
    pub fn rows(&self, start: u64, end: u64) -> Vec<(u64, u32, String)> {
        let mut out = Vec::new();
        let Ok(iter) = self.ctx.find_location_range(start, end) else {
            return out;
        };
        for (addr, _len, loc) in iter.take(1 << 16) {
            if let (Some(file), Some(line)) = (loc.file, loc.line) {
                out.push((addr, line, file.to_string()));
            }
        }
        out
    }
}
