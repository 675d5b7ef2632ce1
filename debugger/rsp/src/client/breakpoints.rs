//! Breakpoints and watchpoints: `Z`/`z`, remembered so that stepping can lift them.

use memlife_core::{BreakpointKind, Result, WatchKind};

use super::GdbRemote;
use crate::packets::breakpoints::{Point, SetPoint};

/// Breakpoint kind for thumb code (the only kind a Cortex-M runs).
const THUMB_KIND: u64 = 2;

impl GdbRemote {
    /// Sends one `Z`/`z` and checks its `OK`.
    fn set_point(&mut self, set: SetPoint) -> Result<()> {
        self.check_halted()?;
        let reply = self.request(&set.encode())?;
        set.parse_reply(reply)
    }

    pub(crate) fn insert_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        if !self.breakpoints.contains(&(addr, kind.into())) {
            self.set_point(SetPoint {
                insert: true,
                point: Point::Break(kind),
                addr,
                kind: THUMB_KIND,
            })?;
            self.breakpoints.insert((addr, kind.into()));
        }
        Ok(())
    }

    pub(crate) fn delete_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        if self.breakpoints.contains(&(addr, kind.into())) {
            self.set_point(SetPoint {
                insert: false,
                point: Point::Break(kind),
                addr,
                kind: THUMB_KIND,
            })?;
            self.breakpoints.remove(&(addr, kind.into()));
        }
        Ok(())
    }

    pub(crate) fn breakpoint_list(&self) -> Vec<(u64, BreakpointKind)> {
        self.breakpoints
            .iter()
            .map(|&(a, k)| (a, k.into()))
            .collect()
    }

    pub(crate) fn insert_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        if !self.watchpoints.contains(&(addr, len, kind)) {
            self.set_point(SetPoint {
                insert: true,
                point: Point::Watch(kind),
                addr,
                kind: len,
            })?;
            self.watchpoints.push((addr, len, kind));
        }
        Ok(())
    }

    pub(crate) fn delete_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        if let Some(i) = self
            .watchpoints
            .iter()
            .position(|w| *w == (addr, len, kind))
        {
            self.set_point(SetPoint {
                insert: false,
                point: Point::Watch(kind),
                addr,
                kind: len,
            })?;
            self.watchpoints.remove(i);
        }
        Ok(())
    }
}
