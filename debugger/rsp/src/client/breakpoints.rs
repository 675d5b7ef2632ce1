//! Breakpoints and watchpoints: `Z`/`z`, remembered so that stepping can lift them.

use memlife_core::{BreakpointKind, Result, WatchKind};

use super::GdbRemote;

/// Breakpoint kind for thumb code (the only kind a Cortex-M runs).
const THUMB_KIND: u32 = 2;

impl GdbRemote {
    pub(super) fn z_packet(insert: bool, ty: u8, addr: u64, kind: u64) -> String {
        format!("{}{ty},{addr:x},{kind:x}", if insert { 'Z' } else { 'z' })
    }

    pub(super) fn send_z(
        &mut self,
        insert: bool,
        ty: u8,
        addr: u64,
        kind: u64,
        what: &'static str,
    ) -> Result<()> {
        self.check_halted()?;
        let req = Self::z_packet(insert, ty, addr, kind);
        self.request_ok(req.as_bytes(), what)
    }

    pub(crate) fn insert_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        let (ty, what) = match kind {
            BreakpointKind::Software => (0, "software breakpoints"),
            BreakpointKind::Hardware => (1, "hardware breakpoints"),
        };
        if !self.breakpoints.contains(&(addr, kind.into())) {
            self.send_z(true, ty, addr, u64::from(THUMB_KIND), what)?;
            self.breakpoints.insert((addr, kind.into()));
        }
        Ok(())
    }

    pub(crate) fn delete_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        let ty = match kind {
            BreakpointKind::Software => 0,
            BreakpointKind::Hardware => 1,
        };
        if self.breakpoints.contains(&(addr, kind.into())) {
            self.send_z(
                false,
                ty,
                addr,
                u64::from(THUMB_KIND),
                "removing breakpoints",
            )?;
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

    pub(super) fn watch_type(kind: WatchKind) -> u8 {
        match kind {
            WatchKind::Write => 2,
            WatchKind::Read => 3,
            WatchKind::Access => 4,
        }
    }

    pub(crate) fn insert_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        if !self.watchpoints.contains(&(addr, len, kind)) {
            self.send_z(true, Self::watch_type(kind), addr, len, "watchpoints")?;
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
            self.send_z(
                false,
                Self::watch_type(kind),
                addr,
                len,
                "removing watchpoints",
            )?;
            self.watchpoints.remove(i);
        }
        Ok(())
    }
}
