//! The RTOS task-exit traps: functions a task's entry function returns to and no code calls,
//! where a walk of the stack ends. Found in the symbol table when [`Symbols`](crate::Symbols)
//! loads an image; read by `unwind`.

use crate::elf::{ElfSymbol, SymbolKind};

/// Functions an RTOS gives a task's entry function as its return address, so that a task that
/// returns lands in them; no code calls them. FreeRTOS's Cortex-M ports put `prvTaskExitError`
/// in a new task's `lr` (`portTASK_RETURN_ADDRESS`, unless the firmware sets
/// `configTASK_RETURN_ADDRESS`). A return address at one of them ends the walk at the task's
/// entry function ([`UnwindEnd::TaskEntry`](crate::UnwindEnd::TaskEntry)): read as a call, it would be looked up two bytes
/// before the trap, in whatever function the linker put there (`xPortPendSVHandler` in the
/// Cortex-M3 port's own order), a frame that never was.
pub const TASK_EXIT_TRAPS: &[&str] = &["prvTaskExitError"];

/// The entry addresses (thumb bit cleared) of the [`TASK_EXIT_TRAPS`] among `symbols`.
pub(crate) fn task_exit_traps(symbols: &[ElfSymbol]) -> Vec<u64> {
    symbols
        .iter()
        .filter(|s| s.kind == SymbolKind::Function && TASK_EXIT_TRAPS.contains(&s.name.as_str()))
        .map(|s| s.address & !1)
        .collect()
}
