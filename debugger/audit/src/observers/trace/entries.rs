//! Where the trace breaks: the allocator's traced entry points (the walker's
//! [`memlife_heap::EntryPoint`]s) resolved in the ELF. An allocation's block is read at the
//! allocator's return instructions when they can be found (one stop per call, r0 the block),
//! else at the caller's return address.

use memlife_core::cortex_m::thumb;
use memlife_dwarf::{FunctionRange, Symbols};
use memlife_heap::{EntryRole, HeapWalker};

use crate::error::AuditError;
use crate::events::TraceRole;

/// The trace's breakpoints for this allocator: (address, role) each.
pub fn tracing_roles(
    walker: &dyn HeapWalker,
    symbols: &Symbols,
) -> Result<Vec<(u64, TraceRole)>, AuditError> {
    let entries = walker.entry_points();
    let mut roles: Vec<(u64, TraceRole)> = Vec::new();
    let mut found = false;
    for e in entries {
        let Some(FunctionRange { entry: addr, size }) = symbols.function(e.function) else {
            continue;
        };
        match e.role {
            EntryRole::Malloc { size_arg } => {
                found = true;
                let size_arg = usize::from(size_arg);
                // The block is in r0 at the allocator's return instructions: one stop per
                // call. Without them, at the caller's return address.
                let exits = symbols
                    .code(addr, size as usize)
                    .map(|code| thumb::return_instructions(code, addr))
                    .unwrap_or_default();
                if exits.is_empty() {
                    roles.push((addr, TraceRole::Malloc { size_arg }));
                } else {
                    // The entry too, for the requested size (r0 no longer holds it at the
                    // return): one more stop per call, and `events[].request` is known.
                    roles.push((addr, TraceRole::MallocRequest { size_arg }));
                    roles.extend(exits.into_iter().map(|a| (a, TraceRole::MallocExit)));
                }
            }
            EntryRole::Free { ptr_arg } => {
                let ptr_arg = usize::from(ptr_arg);
                roles.push((addr, TraceRole::Free { ptr_arg }));
            }
            EntryRole::OtherAlloc | EntryRole::OtherFree => {}
        }
    }
    if !found {
        return Err(AuditError::Config(format!(
            "tracing needs the allocator's malloc entry ({}) in the ELF; use --method sample",
            entries
                .iter()
                .filter(|e| matches!(e.role, EntryRole::Malloc { .. }))
                .map(|e| e.function)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(roles)
}
