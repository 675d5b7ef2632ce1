//! Heap dumps a client asks for: `monitor dump` once, `monitor dump-on` at every stop at a
//! function's entry. A dump-on is the client's: it ends when that client leaves, and after
//! `--max-dumps` dumps, so a client cannot leave the server writing files without end.

use memlife_core::BreakpointKind;

use crate::bridge::Bridge;
pub(crate) use crate::dump_on::DumpOn;
use crate::error::{Capability, Context, Result, ServeError};
use crate::event::{DumpOnEnd, ServeEvent};

impl Bridge {
    /// Walks the heap and writes its JSON to `path` under the dump directory (a client's
    /// path: relative, no `..`, no link out; see [`crate::places`]).
    pub(crate) fn write_dump(&mut self, path: &str) -> Result<()> {
        let rel = crate::places::check_relative(path)?;
        let heap = self.walk()?;
        let text = format!("{:#}\n", heap.json);
        memlife_core::output::write_under(&self.places.dump_dir, rel, text.as_bytes())?;
        Ok(())
    }

    /// `monitor dump [PATH]`.
    pub(crate) fn dump(&mut self, path: Option<String>) -> Result<String> {
        let path = match path {
            Some(p) => p,
            None => {
                self.dumps = self.dumps.saturating_add(1);
                format!("memlife-dump-{}.json", self.dumps)
            }
        };
        self.write_dump(&path)?;
        Ok(format!("heap dump written to {path}\n"))
    }

    /// The dumps asked for at `pc`, then the end of those that reached the limit.
    pub(crate) fn dump_at(&mut self, pc: u64) {
        let mut full = Vec::new();
        for i in 0..self.dump_on.len() {
            let Some(d) = self.dump_on.get_mut(i).filter(|d| d.addr == pc) else {
                continue;
            };
            // Counts stops the firmware makes: saturates rather than overflow.
            d.written = d.written.saturating_add(1);
            let path = d.path.replace("{n}", &d.written.to_string());
            let symbol = d.symbol.clone();
            if d.written >= self.max_dumps {
                full.push(symbol.clone());
            }
            match self.write_dump(&path) {
                Ok(()) => tracing::info!("dump at {symbol} written to {path}"),
                Err(e) => self.notify(ServeEvent::DumpFailed {
                    symbol,
                    path,
                    error: crate::error::chain(&e),
                }),
            }
        }
        for symbol in full {
            if let Some(i) = self.dump_on.iter().position(|d| d.symbol == symbol)
                && let Err(e) = self.end_dump_on(i, Some(DumpOnEnd::Limit))
            {
                tracing::warn!("{}", crate::error::chain(&e));
            }
        }
    }

    /// `monitor dump-on SYMBOL [PATH]`.
    pub(crate) fn dump_on_symbol(&mut self, symbol: &str, path: Option<String>) -> Result<String> {
        let path = path.unwrap_or_else(|| format!("memlife-{symbol}-{{n}}.json"));
        crate::places::check_relative(&path)?;
        let addr = self
            .symbols
            .function(symbol)
            .ok_or_else(|| ServeError::UnknownFunction(symbol.to_string()))?
            .entry;
        if !self.dump_on.iter().any(|d| d.addr == addr) {
            self.target
                .breakpoints()
                .ok_or(ServeError::Lacks(Capability::Breakpoints))?
                .add_breakpoint(addr, BreakpointKind::Software)
                .context(format!("setting a breakpoint at {symbol} ({addr:#010x})"))?;
        }
        self.dump_on.retain(|d| d.symbol != symbol);
        self.dump_on.push(DumpOn {
            symbol: symbol.to_string(),
            addr,
            path: path.clone(),
            written: 0,
        });
        Ok(format!(
            "dumping the heap to {path} at every stop at {symbol} ({addr:#010x}), {} at most\n",
            self.max_dumps
        ))
    }

    /// `monitor dump-off SYMBOL`.
    pub(crate) fn dump_off_symbol(&mut self, symbol: &str) -> Result<String> {
        let i = self
            .dump_on
            .iter()
            .position(|d| d.symbol == symbol)
            .ok_or_else(|| ServeError::NoDumpOn(symbol.to_string()))?;
        let d = self.end_dump_on(i, None)?;
        Ok(format!(
            "no more dumps at {symbol} ({} written)\n",
            d.written
        ))
    }

    /// Ends every dump-on (their client left).
    pub(crate) fn end_dump_ons(&mut self, why: DumpOnEnd) {
        while !self.dump_on.is_empty() {
            if let Err(e) = self.end_dump_on(0, Some(why)) {
                tracing::warn!("{}", crate::error::chain(&e));
            }
        }
    }

    /// Removes the dump-on at `i` and its breakpoint (unless gdb or another dump-on has one
    /// there); says so when it ended by itself (`why`).
    fn end_dump_on(&mut self, i: usize, why: Option<DumpOnEnd>) -> Result<DumpOn> {
        if i >= self.dump_on.len() {
            return Err(ServeError::Command("no such dump-on".into()));
        }
        let d = self.dump_on.remove(i);
        if let Some(why) = why {
            self.notify(ServeEvent::DumpOnEnded {
                symbol: d.symbol.clone(),
                written: d.written,
                why,
            });
        }
        let still_needed = self.dump_on.iter().any(|o| o.addr == d.addr)
            || self
                .gdb_breakpoints
                .contains(&(d.addr, BreakpointKind::Software));
        if !still_needed && let Some(b) = self.target.breakpoints() {
            b.remove_breakpoint(d.addr, BreakpointKind::Software)
                .context("removing memlife's breakpoint")?;
        }
        Ok(d)
    }
}
