//! Where the trace breaks: the allocator's traced entry points (the walker's
//! [`memlife_heap::EntryPoint`]s) resolved in the ELF. An allocation's block is read at the
//! allocator's return instructions when they can be found (r0 the block, its size from the
//! block's header), else at the caller's return address. The size asked is only in a register
//! at the entry: a stop there too when someone reads it, none otherwise (one stop per
//! allocation).

use memlife_core::cortex_m::thumb;
use memlife_dwarf::{FunctionRange, Symbols};
use memlife_heap::{EntryRole, HeapWalker};

use crate::error::AuditError;
use crate::events::TraceRole;

/// Whether `walker` sizes a traced block from the size asked rather than from a header (an
/// allocator that keeps none: linked_list_allocator): its allocations need the entry's stop.
pub fn sizes_blocks_from_requests(walker: &dyn HeapWalker) -> bool {
    // The walker's contract: `None` wherever a header is read instead.
    walker.block_from_request(0, 1).is_some()
}

/// The trace's breakpoints for this allocator: (address, role) each. With `requests`, an
/// allocation also stops at the allocator's entry for the size asked.
pub fn tracing_roles(
    walker: &dyn HeapWalker,
    symbols: &Symbols,
    requests: bool,
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
                    continue;
                }
                if requests {
                    // The entry too, for the requested size (r0 no longer holds it at the
                    // return): one more stop per call, and `events[].request` is known.
                    roles.push((addr, TraceRole::MallocRequest { size_arg }));
                } else {
                    // Armed only on a target too short of breakpoints for the returns.
                    roles.push((addr, TraceRole::MallocLean { size_arg }));
                }
                roles.extend(exits.into_iter().map(|a| (a, TraceRole::MallocExit)));
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
