//! The tasks of an RTOS firmware as an audit saw them: what each did on the heap (from the
//! allocations traced, each made by the task running then) and the smallest stack margin each
//! reached, with where.

use serde::{Deserialize, Serialize};

/// One task (or `ISR n`, or `main` before the scheduler started) over the whole audit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct TaskRecord {
    /// The task's name, `ISR n` for exception handler n, `main` before the scheduler started.
    pub task: String,
    /// Allocations it made (traced).
    pub allocs: u64,
    /// Their bytes, in the allocator's accounting.
    pub allocated_bytes: u64,
    /// Releases it made (traced), whoever allocated the block.
    pub frees: u64,
    /// Their bytes.
    pub freed_bytes: u64,
    /// Blocks it allocated that were still allocated at the end of the audit.
    pub live_blocks: u64,
    /// Their bytes.
    pub live_bytes: u64,
    /// The least stack it had left, when its stack was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack_margin: Option<StackMargin>,
}

/// The least stack a task had left (the 0xa5 fill never overwritten, counted from the stack's
/// lowest address), and where the audit first saw it that low.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct StackMargin {
    /// Bytes left.
    pub bytes: u64,
    /// The same in stack words, as `uxTaskGetStackHighWaterMark` says it.
    pub words: u64,
    /// The phase call it was reached in (`inference_run#2`), if any.
    pub phase: Option<String>,
    /// The span it was reached in (`op_invoke#7`), if any.
    pub span: Option<String>,
    /// That span's argument that tells spans apart (the layer).
    pub arg: Option<u64>,
    /// That span's name (the layer's), from `[labels]`.
    pub label: Option<String>,
}

impl StackMargin {
    /// `inference_run#2 / op_invoke#7 (layer 7 conv_b)`, or what is known of it.
    pub fn place(&self) -> String {
        let mut out = self.phase.clone().unwrap_or_else(|| "no phase".into());
        if let Some(span) = &self.span {
            out.push_str(" / ");
            out.push_str(span);
            match (self.arg, &self.label) {
                (Some(a), Some(l)) => out.push_str(&format!(" (layer {a} {l})")),
                (Some(a), None) => out.push_str(&format!(" (layer {a})")),
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_margin_says_where_it_was_reached() {
        let m = StackMargin {
            bytes: 12,
            words: 3,
            phase: Some("inference_run#1".into()),
            span: Some("op_invoke#8".into()),
            arg: Some(7),
            label: Some("conv_b".into()),
        };
        assert_eq!(m.place(), "inference_run#1 / op_invoke#8 (layer 7 conv_b)");
        assert_eq!(StackMargin::default().place(), "no phase");
    }
}
