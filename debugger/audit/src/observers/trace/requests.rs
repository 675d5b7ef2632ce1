//! Sizes asked at an allocator's entry whose return instruction is still to come: the block is
//! read at the return, the size asked only at the entry.

/// The requests in flight, innermost last, each with the stack pointer at its entry.
#[derive(Debug, Default)]
pub struct Requests {
    stack: Vec<(u64, u64)>,
}

impl Requests {
    /// The size requested at an allocator's entry with the stack pointer at `sp`.
    pub fn push(&mut self, sp: u64, size: u64) {
        self.stack.push((sp, size));
    }

    /// The size requested by the call whose return instruction is at a stop with the stack
    /// pointer at `sp`: the innermost entry at or above it (the allocator's frame is below its
    /// entry's). Entries deeper than `sp` never reached a return instruction (a longjmp, an
    /// abort) and are dropped.
    pub fn pop(&mut self, sp: u64) -> Option<u64> {
        while let Some((entry_sp, size)) = self.stack.pop() {
            if entry_sp >= sp {
                return Some(size);
            }
        }
        None
    }

    /// Forgets them (tracing turned off, the target reset).
    pub fn clear(&mut self) {
        self.stack.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_return_takes_the_innermost_request_at_or_above_its_stack_pointer() {
        let mut r = Requests::default();
        r.push(0x1000, 16);
        // An entry that never returned (a longjmp out of the allocator), deeper.
        r.push(0x0e00, 99);
        assert_eq!(r.pop(0x0f00), Some(16), "the deeper stale entry is dropped");
        assert_eq!(r.pop(0x0f00), None);
    }
}
