//! `monitor ...` commands: a line parsed once into a [`MonitorCommand`] (see `command`), then
//! run on the [`Bridge`]: the heap views, dumps, dump-on-stop, audits, reset.

mod command;

use std::rc::Rc;

use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd};
use memlife_core::BreakpointKind;
use memlife_heap::{EntryRole, HeapWalker, WalkerOptions};

pub use command::{COMMANDS, HeapView, MAX_LINE, MonitorCommand, ParseError, Spec, help};

use crate::bridge::Bridge;
use crate::error::{Capability, Context, Result, ServeError};
use crate::guard::{Guarded, Watch};
use crate::heap::RenderedHeap;

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

    /// The heap of the halted target, in every view.
    pub(crate) fn walk(&mut self) -> Result<RenderedHeap> {
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

    /// `monitor allocator`.
    fn allocator(&mut self) -> Result<String> {
        self.ensure_halted().context("halting the target")?;
        let w = self.walker()?;
        let names = |pick: fn(EntryRole) -> bool| {
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
            names(EntryRole::allocates),
            names(EntryRole::frees)
        ))
    }

    /// The dump-on breakpoints inserted again, in a backend started afresh (none is in it).
    pub(crate) fn set_dump_on_again(&mut self) -> Result<()> {
        for d in &self.dump_on {
            if let Some(b) = self.target.breakpoints() {
                b.add_breakpoint(d.addr, BreakpointKind::Software)
                    .context("setting the dump-on breakpoints again")?;
            }
        }
        Ok(())
    }

    /// `monitor reset` after the firmware ended: a new backend (or the old one reset), memlife's
    /// dump-on breakpoints set again, running unless `halt`.
    fn start_again(&mut self, halt: bool) -> Result<String> {
        let how = self.ended.map(|h| crate::event::ended_text(&h));
        match self.restart.as_mut() {
            Some(restart) => {
                self.target = restart()?;
            }
            None => {
                let c = self
                    .target
                    .control()
                    .ok_or(ServeError::Lacks(Capability::RunControl))?;
                c.reset(true).context("resetting the target")?;
            }
        }
        self.ended = None;
        self.set_dump_on_again()?;
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

    /// `monitor reset [halt]` on a live target.
    fn reset(&mut self, halt: bool) -> Result<String> {
        if self.ended.is_some() {
            return self.start_again(halt);
        }
        let c = self
            .target
            .control()
            .ok_or(ServeError::Lacks(Capability::RunControl))?;
        c.reset(halt).context("resetting the target")?;
        Ok(if halt {
            "target reset, halted at the reset vector\n".into()
        } else {
            "target reset and running; interrupt it (Ctrl-C) to look at it\n".into()
        })
    }

    /// `monitor audit FILE` under the audit deadline and the client's interrupt (see
    /// [`crate::guard`]): the backend is lent to the audit wrapped, and taken back unwrapped
    /// however the audit ended.
    fn guarded_audit(&mut self, script: &str) -> Result<String> {
        let watch = Watch::new(self.audit_deadline, self.client.clone());
        let placeholder = || Box::new(memlife_core::Snapshot::default());
        let inner = std::mem::replace(&mut self.target, placeholder());
        self.target = Box::new(Guarded::new(inner, Rc::clone(&watch)));
        let outcome = self.audit(script);
        // Dropping the wrapper hands the backend to the watch (also when the engine kept it).
        drop(std::mem::replace(&mut self.target, placeholder()));
        self.target = watch.take_target().ok_or_else(|| {
            ServeError::Command("internal error: the audit kept the target".into())
        })?;
        let Some(cause) = watch.cause() else {
            return outcome;
        };
        // The engine removed its breakpoints on the way out; the core stays halted for gdb.
        self.ensure_halted().context("halting the target")?;
        let mut text = match outcome {
            Ok(text) => text,
            Err(e) => format!("error: {}\n", crate::error::chain(&e)),
        };
        text.push_str(&format!(
            "audit stopped: {cause}; memlife's breakpoints are removed and the target is halted\n"
        ));
        Ok(text)
    }

    /// Runs one monitor command line (the bytes gdb sent); the text goes to gdb's console.
    pub fn monitor(&mut self, line: &[u8]) -> Result<String> {
        let command = MonitorCommand::parse(line)?;
        if let Some(msg) = self.ended_message()
            && !command.works_when_ended()
        {
            return Ok(msg);
        }
        let out = self.run(command);
        // A command may have run or reset the target: the stop's threads are read again.
        self.forget_stop();
        out
    }

    /// Runs a parsed command.
    pub fn run(&mut self, command: MonitorCommand) -> Result<String> {
        match command {
            MonitorCommand::Help => Ok(help()),
            MonitorCommand::Heap(HeapView::Table) => Ok(self.walk()?.text),
            MonitorCommand::Heap(HeapView::Blocks) => {
                Ok(memlife_heap::render::blocks(&self.walk()?.state))
            }
            MonitorCommand::Heap(HeapView::Json) => Ok(format!("{:#}\n", self.walk()?.json)),
            MonitorCommand::Allocator => self.allocator(),
            MonitorCommand::Tasks => self.tasks_table(),
            MonitorCommand::Dump { path } => self.dump(path),
            MonitorCommand::DumpOn { symbol, path } => self.dump_on_symbol(&symbol, path),
            MonitorCommand::DumpOff { symbol } => self.dump_off_symbol(&symbol),
            MonitorCommand::Phases if self.phases.is_empty() => Ok(
                "no phases recorded in this session (`monitor audit FILE` records them)\n".into(),
            ),
            MonitorCommand::Phases => Ok(self.phases.join("\n") + "\n"),
            MonitorCommand::Audit { script } => self.guarded_audit(&script),
            MonitorCommand::Report { dir } => self.report(&dir),
            MonitorCommand::Reset { halt } => self.reset(halt),
            MonitorCommand::Shutdown => {
                self.shutdown = true;
                Ok("memlife serve ends when this gdb session ends\n".into())
            }
        }
    }
}

impl MonitorCmd for Bridge {
    fn handle_monitor_cmd(
        &mut self,
        cmd: &[u8],
        mut out: ConsoleOutput<'_>,
    ) -> Result<(), ServeError> {
        let text = match self.monitor(cmd) {
            Ok(text) => text,
            Err(e) => format!("error: {}\n", crate::error::chain(&e)),
        };
        // gdb prints console output raw: what a client typed (echoed in errors), paths and
        // target strings must not drive the user's terminal nor hide what it says.
        out.write_raw(memlife_core::text::printable(&text).as_bytes());
        Ok(())
    }
}
