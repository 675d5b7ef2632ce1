//! `monitor ...` commands: the heap views, dumps, dump-on-stop, reset.

use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd};
use memlife_core::BreakpointKind;
use memlife_heap::{HeapWalker, WalkerOptions};

use crate::bridge::{Bridge, DumpOn};
use crate::error::{Context, Result, ServeError};

/// `monitor help`.
pub const HELP: &str = "\
memlife monitor commands:
  help                       this list
  heap                       the heap table (as `memlife heap` prints it)
  heap blocks                only the block list
  heap json                  the heap as JSON (as `memlife heap --json`)
  allocator                  the allocator memlife detected and its entry points
  dump [PATH]                write the heap JSON to PATH (default memlife-dump-N.json)
  dump-on SYMBOL [PATH]      write a dump every time the target stops at SYMBOL's entry,
                             before gdb hears of the stop; {n} in PATH counts the dumps
                             (default memlife-SYMBOL-{n}.json); memlife continues on its own
                             when gdb has no breakpoint there
  dump-off SYMBOL            stop dumping at SYMBOL
  phases                     the lifecycle phases recorded in this session
  report DIR                 write the last audit's HTML report to DIR/index.html
  audit FILE                 run a Rhai audit script (as `memlife audit`, dumps under
                             memlife-out/) and record its phases
  reset                      reset the target and let it run (after the firmware exited:
                             start it again)
  reset halt                 reset the target and halt it at the reset vector
  shutdown                   end memlife serve after this gdb session (the target runs on)
";

impl Bridge {
    fn walker(&mut self) -> Result<&dyn HeapWalker> {
        if self.walker.is_none() {
            let w = memlife_heap::detect(
                &self.symbols,
                None,
                &WalkerOptions::default(),
                Some(self.target.as_memory()),
            )
            .context("detecting the allocator")?;
            self.walker = Some(w);
        }
        self.walker
            .as_deref()
            .context("no allocator was detected in the ELF")
    }

    fn walk(&mut self) -> Result<(memlife_heap::HeapState, serde_json::Value, String)> {
        self.ensure_halted().context("halting the target")?;
        self.walker()?;
        let walker = self.walker.take().context("no allocator")?;
        let out = crate::heap::walk_rendered(
            self.target.as_mut(),
            &self.symbols,
            walker.as_ref(),
            &mut self.link,
        );
        self.walker = Some(walker);
        out
    }

    /// Walks the heap and writes its JSON to `path` under the dump directory (a client's
    /// path: relative, no `..`, no link out; see [`crate::places`]).
    pub(crate) fn write_dump(&mut self, path: &str) -> Result<()> {
        let rel = crate::places::check_relative(path)?;
        let (_, json, _) = self.walk()?;
        let text = format!("{json:#}\n");
        memlife_core::output::write_under(&self.places.dump_dir, rel, text.as_bytes())?;
        Ok(())
    }

    /// `monitor reset` after the firmware ended: a new backend (or the old one reset), memlife's
    /// dump-on breakpoints set again, running unless `halt`.
    fn start_again(&mut self, halt: bool) -> Result<String> {
        let how = self.ended.map(|h| crate::bridge::ended_text(&h));
        match self.restart.as_mut() {
            Some(restart) => {
                self.target = restart().map_err(ServeError::Command)?;
            }
            None => {
                let c = self
                    .target
                    .control()
                    .context("this target has no run control (an offline snapshot?)")?;
                c.reset(true).context("resetting the target")?;
            }
        }
        self.ended = None;
        for d in &self.dump_on {
            if let Some(b) = self.target.breakpoints() {
                b.add_breakpoint(d.addr, BreakpointKind::Software)
                    .context("setting the dump-on breakpoints again")?;
            }
        }
        if !halt
            && let Some(c) = self.target.control()
            && c.is_halted()
        {
            c.resume().context("starting the firmware")?;
        }
        Ok(format!(
            "{}; started again, {}; `flushregs` makes gdb read its registers again\n",
            how.unwrap_or_default(),
            if halt {
                "halted at the reset vector"
            } else {
                "running"
            }
        ))
    }

    /// Runs one monitor command; the text goes to gdb's console.
    pub fn monitor(&mut self, line: &str) -> Result<String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(msg) = self.ended_message()
            && !matches!(
                words.as_slice(),
                [] | ["help"] | ["reset"] | ["reset", "halt"] | ["shutdown"]
            )
        {
            return Ok(msg);
        }
        match words.as_slice() {
            [] | ["help"] => Ok(HELP.to_string()),
            ["reset"] | ["reset", "halt"] if self.ended.is_some() => {
                self.start_again(words.len() == 2)
            }
            ["heap"] => Ok(self.walk()?.2),
            ["heap", "blocks"] => Ok(memlife_heap::render::blocks(&self.walk()?.0)),
            ["heap", "json"] => {
                let (_, json, _) = self.walk()?;
                Ok(format!("{json:#}\n"))
            }
            ["allocator"] => {
                self.ensure_halted().context("halting the target")?;
                let w = self.walker()?;
                let names = |pick: fn(memlife_heap::EntryRole) -> bool| {
                    let names: Vec<&str> = w
                        .entry_points()
                        .iter()
                        .filter(|e| pick(e.role))
                        .map(|e| e.function)
                        .collect();
                    names.join(", ")
                };
                Ok(format!(
                    "allocator  {}\nallocate   {}\nfree       {}\n",
                    w.name(),
                    names(memlife_heap::EntryRole::allocates),
                    names(memlife_heap::EntryRole::frees)
                ))
            }
            ["dump"] | ["dump", _] => {
                let path = match words.get(1) {
                    Some(p) => (*p).to_string(),
                    None => {
                        self.dumps = self.dumps.saturating_add(1);
                        format!("memlife-dump-{}.json", self.dumps)
                    }
                };
                self.write_dump(&path)?;
                Ok(format!("heap dump written to {path}\n"))
            }
            ["dump-on", symbol] | ["dump-on", symbol, _] => {
                let path = words
                    .get(2)
                    .map_or_else(|| format!("memlife-{symbol}-{{n}}.json"), |p| p.to_string());
                self.dump_on_symbol(symbol, path)
            }
            ["dump-off", symbol] => self.dump_off_symbol(symbol),
            ["phases"] if self.phases.is_empty() => Ok(
                "no phases recorded in this session (`monitor audit FILE` records them)\n".into(),
            ),
            ["phases"] => Ok(self.phases.join("\n") + "\n"),
            ["audit", path] => self.audit(path),
            ["report", dir] => self.report(dir),
            ["reset"] | ["reset", "halt"] => {
                let halt = words.len() == 2;
                let c = self
                    .target
                    .control()
                    .context("this target has no run control (an offline snapshot?)")?;
                c.reset(halt).context("resetting the target")?;
                Ok(if halt {
                    "target reset, halted at the reset vector\n".into()
                } else {
                    "target reset and running; interrupt it (Ctrl-C) to look at it\n".into()
                })
            }
            ["shutdown"] => {
                self.shutdown = true;
                Ok("memlife serve ends when this gdb session ends\n".into())
            }
            _ => Err(ServeError::Command(format!(
                "unknown monitor command `{line}`; `monitor help` lists them"
            ))),
        }
    }

    fn dump_on_symbol(&mut self, symbol: &str, path: String) -> Result<String> {
        crate::places::check_relative(&path)?;
        let (addr, _) = self.symbols.function(symbol).context(format!(
            "function `{symbol}` is not in the ELF's symbol table"
        ))?;
        if !self.dump_on.iter().any(|d| d.addr == addr) {
            self.target
                .breakpoints()
                .context("this target cannot set breakpoints (an offline snapshot?)")?
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
            "dumping the heap to {path} at every stop at {symbol} ({addr:#010x})\n"
        ))
    }

    fn dump_off_symbol(&mut self, symbol: &str) -> Result<String> {
        let Some(i) = self.dump_on.iter().position(|d| d.symbol == symbol) else {
            return Err(ServeError::Command(format!(
                "no dump-on is set for `{symbol}`"
            )));
        };
        let d = self.dump_on.remove(i);
        let still_needed = self.dump_on.iter().any(|o| o.addr == d.addr)
            || self
                .gdb_breakpoints
                .contains(&(d.addr, BreakpointKind::Software));
        if !still_needed && let Some(b) = self.target.breakpoints() {
            b.remove_breakpoint(d.addr, BreakpointKind::Software)
                .context("removing memlife's breakpoint")?;
        }
        Ok(format!(
            "no more dumps at {symbol} ({} written)\n",
            d.written
        ))
    }
}

impl MonitorCmd for Bridge {
    fn handle_monitor_cmd(
        &mut self,
        cmd: &[u8],
        mut out: ConsoleOutput<'_>,
    ) -> Result<(), ServeError> {
        let line = String::from_utf8_lossy(cmd);
        let text = match self.monitor(&line) {
            Ok(text) => text,
            Err(e) => format!("error: {e:#}\n"),
        };
        // gdb prints console output raw: what a client typed (echoed in errors), paths and
        // target strings must not drive the user's terminal.
        out.write_raw(memlife_core::text::printable(&text).as_bytes());
        Ok(())
    }
}
