//! FreeRTOS's task-exit return address, shown to clients as 0.
//!
//! The Cortex-M ports give a task's entry function `prvTaskExitError` as its return address
//! (`memlife_dwarf::unwind::TASK_EXIT_TRAPS`). No code calls it: a debugger that unwinds
//! through it looks up the caller just before it, in whatever function the linker put there
//! (`xPortPendSVHandler` on the Cortex-M3 build), and gdb then gives up with "previous frame
//! identical to this frame (corrupt stack?)". gdb and LLDB stop a chain cleanly only where the
//! firmware's CFI marks the return address undefined (the firmware's to change, with
//! `configTASK_RETURN_ADDRESS`) or at a return address of 0; so memlife serve answers 0 where
//! the kernel planted the trap, while it holds it:
//! - the word below a task's initial stack top, where its entry function saves `lr`: the
//!   ports start a task with sp at `pxEndOfStack` (the stack's last word, aligned down to 8
//!   bytes; `pxPortInitialiseStack` leaves that word and stacks the first context below it);
//! - `lr` in a task's registers (a task that never ran, a task stopped at its entry's first
//!   instruction).
//!
//! LLDB then ends a task's backtrace at its entry function; gdb shows one more frame,
//! `0x00000000 in ?? ()`, as for any chain whose return address is 0. memlife's own commands
//! (`monitor tasks`, `monitor heap`) read memory unchanged, and `--no-threads` turns this off
//! with the threads.

use std::collections::HashMap;

use memlife_core::cortex_m::{CoreRegisters, LR};

use super::ThreadView;

/// Where tasks keep the task-exit return address, by TCB. A task's stack does not move while it
/// lives, so the words are kept across stops; every read of all tasks replaces them, and a
/// word is shown as 0 only while it holds the address, so one left from a deleted task hides
/// nothing else.
#[derive(Debug, Default)]
pub(crate) struct ExitSlots {
    by_task: HashMap<u64, u32>,
}

impl ExitSlots {
    /// The words of every task in `view` (none without a task-exit address).
    pub fn replace(&mut self, view: &ThreadView, exit: Option<u32>) {
        self.by_task.clear();
        if exit.is_none() {
            return;
        }
        for t in &view.threads {
            if let (Some(tcb), Some(slot)) = (t.tcb, t.stack_top.and_then(slot_below)) {
                self.by_task.insert(tcb, slot);
            }
        }
    }

    /// Whether the task with this TCB has its word.
    pub fn knows(&self, tcb: u64) -> bool {
        self.by_task.contains_key(&tcb)
    }

    /// Adds a task's word from its `pxEndOfStack`.
    pub fn add(&mut self, tcb: u64, end_of_stack: u64) {
        if let Some(slot) = end_of_stack.checked_add(4).and_then(slot_below) {
            self.by_task.insert(tcb, slot);
        }
    }

    /// Zeroes, in `data` read at `start`, the bytes of the words that hold `exit` (as a return
    /// address, thumb bit set).
    pub fn hide(&self, exit: u32, start: u32, data: &mut [u8]) {
        let word = (exit | 1).to_le_bytes();
        let start = u64::from(start);
        let end = start + data.len() as u64;
        for &slot in self.by_task.values() {
            let slot = u64::from(slot);
            let (lo, hi) = (slot.max(start), (slot + 4).min(end));
            if lo >= hi {
                continue;
            }
            // Both ranges are within `data` and the word: the casts cannot truncate.
            let (a, b) = ((lo - start) as usize, (hi - start) as usize);
            let (wa, wb) = ((lo - slot) as usize, (hi - slot) as usize);
            if let (Some(bytes), Some(want)) = (data.get_mut(a..b), word.get(wa..wb))
                && bytes == want
            {
                bytes.fill(0);
            }
        }
    }
}

/// The word below a task's initial stack top, from the stack's top (one past its last byte).
pub(crate) fn slot_below(stack_high: u64) -> Option<u32> {
    let end_of_stack = stack_high.checked_sub(4)? & !7;
    u32::try_from(end_of_stack.checked_sub(4)?).ok()
}

/// `lr` as clients see it: 0 where it holds the task-exit return address.
pub(crate) fn hide_in_lr(regs: &mut CoreRegisters, exit: Option<u32>) {
    if let Some(exit) = exit
        && regs.r[LR] & !1 == exit & !1
    {
        regs.r[LR] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXIT: u32 = 0x3c84;

    fn slots(pairs: &[(u64, u32)]) -> ExitSlots {
        ExitSlots {
            by_task: pairs.iter().copied().collect(),
        }
    }

    #[test]
    fn the_word_below_the_aligned_top() {
        // A 256-word stack at 0x2000_1000: its last word 0x2000_13fc aligned down to 8 bytes
        // is pxEndOfStack, 0x2000_13f8 (memlife-rtos gives the top as pxEndOfStack + 4, a
        // heap block or an array its full end); the task starts with sp there.
        assert_eq!(slot_below(0x2000_1400), Some(0x2000_13f4));
        assert_eq!(slot_below(0x2000_13fc), Some(0x2000_13f4));
        // A stack whose last word is 8-byte aligned keeps it.
        assert_eq!(slot_below(0x2000_1404), Some(0x2000_13fc));
        assert_eq!(slot_below(0), None);
        assert_eq!(slot_below(4), None);
    }

    #[test]
    fn only_words_that_hold_the_return_address_are_hidden() {
        let s = slots(&[(1, 0x2000_0008), (2, 0x2000_0010)]);
        let mut data = vec![0u8; 0x18];
        data[8..12].copy_from_slice(&(EXIT | 1).to_le_bytes());
        data[0x10..0x14].copy_from_slice(&0x0800_1235u32.to_le_bytes());
        data[0x14..0x18].copy_from_slice(&(EXIT | 1).to_le_bytes());
        let before = data.clone();
        s.hide(EXIT, 0x2000_0000, &mut data);
        assert_eq!(data[8..12], [0, 0, 0, 0]);
        assert_eq!(
            data[0x10..],
            before[0x10..],
            "other words, and unlisted ones, stay"
        );
        assert_eq!(data[..8], before[..8]);
    }

    #[test]
    fn a_read_over_part_of_the_word_hides_that_part() {
        let s = slots(&[(1, 0x2000_0008)]);
        let word = (EXIT | 1).to_le_bytes();
        let mut tail = word[2..].to_vec();
        s.hide(EXIT, 0x2000_000a, &mut tail);
        assert_eq!(tail, [0, 0]);
        let mut head = vec![0xa5, 0xa5, word[0], word[1]];
        s.hide(EXIT, 0x2000_0006, &mut head);
        assert_eq!(head, [0xa5, 0xa5, 0, 0]);
        // At the ends of the address space nothing overflows.
        let mut edge = vec![0xff; 8];
        slots(&[(1, u32::MAX - 3)]).hide(EXIT, u32::MAX - 7, &mut edge);
        assert_eq!(edge, [0xff; 8]);
    }

    #[test]
    fn lr_holding_the_return_address_reads_as_zero() {
        let mut r = CoreRegisters::default();
        r.r[LR] = EXIT | 1;
        hide_in_lr(&mut r, None);
        assert_eq!(r.r[LR], EXIT | 1, "no task-exit address known");
        hide_in_lr(&mut r, Some(EXIT));
        assert_eq!(r.r[LR], 0);
        r.r[LR] = 0x0800_0101;
        hide_in_lr(&mut r, Some(EXIT));
        assert_eq!(r.r[LR], 0x0800_0101);
    }
}
