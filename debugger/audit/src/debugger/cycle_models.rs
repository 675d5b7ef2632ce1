//! Keying observed cycles by model (see [`crate::observers::models`]): which role's call gives
//! a cycle its key, the key and its name read at that call's entry, and the cycle's end handed
//! to the models observer with the free bytes it ended with.

use memlife_core::Memory;
use memlife_dwarf::{SymbolKind, Symbols};

use super::cycle_run::{PhaseCall, PresentRoles};
use super::facade::Debugger;
use crate::observers::ModelMemory;
use crate::session::Regs;

/// The firmware's memory as the models observer reads it: constant data from the ELF (no read
/// over the link), the rest from the target.
struct FirmwareMemory<'a> {
    symbols: &'a Symbols,
    memory: &'a mut dyn Memory,
}

impl ModelMemory for FirmwareMemory<'_> {
    fn is_const(&self, addr: u64) -> bool {
        self.symbols.rodata(addr, 1).is_some() || self.symbols.code(addr, 1).is_some()
    }

    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        if let Some((start, data)) = self.symbols.rodata_section(addr) {
            // What the section holds from there, up to `len` (a name near its end is shorter).
            let off = usize::try_from(addr.checked_sub(start)?).ok()?;
            let end = off.saturating_add(len).min(data.len());
            return data.get(off..end).map(<[u8]>::to_vec);
        }
        if let Some(code) = self.symbols.code(addr, len) {
            return Some(code.to_vec());
        }
        let mut buf = vec![0; len];
        self.memory.read(addr, &mut buf).ok()?;
        Some(buf)
    }

    fn symbol_at(&self, addr: u64) -> Option<(String, u64)> {
        let sym = self.symbols.elf_symbols().iter().find(|s| {
            s.kind == SymbolKind::Data
                && addr >= s.address
                && addr < s.address.saturating_add(s.size.max(1))
        })?;
        let name = memlife_dwarf::demangle::demangle(&sym.name).unwrap_or_else(|| sym.name.clone());
        Some((name, addr - sym.address))
    }
}

impl Debugger {
    /// The role whose first call in a cycle gives the cycle its model key, of the `roles`
    /// present with `start_role` the one that begins cycles; `None` when cycles are not keyed.
    pub(super) fn model_role(&self, roles: &PresentRoles, start_role: &str) -> Option<String> {
        let present: Vec<&str> = roles.0.iter().map(|(r, _, _)| r.as_str()).collect();
        self.models
            .key()
            .role(&present, start_role)
            .map(str::to_string)
    }

    /// The model key and name of a call of the keyed role entered with `regs`, when its
    /// arguments give one.
    pub(super) fn model_at(&mut self, regs: &Regs) -> Option<(u64, String)> {
        let symbols = self.session.symbols_rc();
        let mut mem = FirmwareMemory {
            symbols: &symbols,
            memory: self.session.memory(),
        };
        let key = self.models.key_of(regs, &mem)?;
        let name = self.models.name_of(key, &mut mem);
        Some((key, name))
    }

    /// Cycle `index` of `model` completed with `calls`, its end heap having `end_free` bytes
    /// free: the free bytes it ended with (after its last release, else `end_free`) go to the
    /// models observer.
    pub(super) fn model_cycle_done(
        &mut self,
        index: u64,
        model: Option<(u64, String)>,
        calls: &[PhaseCall],
        end_free: u64,
    ) {
        let free = calls
            .iter()
            .rev()
            .find(|c| c.role == "release")
            .map_or(end_free, |c| c.after.total_free);
        self.models.cycle_done(index, model, free);
    }
}
