//! The running task's stack margin at phase and span boundaries: the stack fill (0xa5) left
//! between the stack's lowest address and the deepest point the task ever reached, read at each
//! boundary, and where it was first seen at its smallest. The fill only ever shrinks, so each
//! read covers only what the last one found unused (and never past the stack pointer): the
//! reads get shorter as the margin does.

use std::collections::BTreeMap;

use crate::model::StackMargin;

/// Where a boundary is: the phase call, and the span that just returned (if one did).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// `inference_run#2`.
    pub phase: Option<String>,
    /// `op_invoke#7`.
    pub span: Option<String>,
    /// The span's argument that tells spans apart.
    pub arg: Option<u64>,
    /// The span's name.
    pub label: Option<String>,
}

/// One task's stack as watched.
#[derive(Debug, Clone)]
struct Watched {
    /// Unused bytes at the last read (`None` after a reset: read again in full).
    current: Option<u64>,
    /// The smallest seen, and where it was first seen (`None`: at the first read, so reached
    /// before the audit saw this task).
    least: u64,
    at: Option<Place>,
}

/// Every task's stack margin seen so far, by task name and stack address (a task deleted and
/// created again under its name has a stack of its own).
#[derive(Debug, Default)]
pub struct StackWatch {
    tasks: BTreeMap<(String, u64), Watched>,
}

/// Tasks watched at most (tasks created without end under new names are not all kept).
const MAX_TASKS: usize = 4096;

impl StackWatch {
    /// How many bytes from `low` a read needs at most: what the last read found unused, and
    /// never past the stack pointer `sp` (the unused part is below it).
    pub fn read_limit(&self, task: &str, low: u64, sp: u64) -> u64 {
        let below_sp = sp.saturating_sub(low);
        match self
            .tasks
            .get(&(task.to_string(), low))
            .and_then(|w| w.current)
        {
            Some(current) => current.min(below_sp),
            None => below_sp,
        }
    }

    /// `unused` bytes of `task`'s stack at `low` are still filled, at `place`.
    pub fn observe(&mut self, task: &str, low: u64, unused: u64, place: &Place) {
        let key = (task.to_string(), low);
        let full = self.tasks.len() >= MAX_TASKS;
        match self.tasks.entry(key) {
            std::collections::btree_map::Entry::Occupied(mut e) => {
                let w = e.get_mut();
                if unused < w.least {
                    w.least = unused;
                    w.at = Some(place.clone());
                }
                w.current = Some(unused);
            }
            std::collections::btree_map::Entry::Vacant(e) if !full => {
                e.insert(Watched {
                    current: Some(unused),
                    least: unused,
                    at: None,
                });
            }
            std::collections::btree_map::Entry::Vacant(_) => {}
        }
    }

    /// The target was reset: the stacks are filled again.
    pub fn on_reset(&mut self) {
        for w in self.tasks.values_mut() {
            w.current = None;
        }
    }

    /// Each task's least margin (the smallest over its stacks), by task name; `word` is the
    /// stack word's size.
    pub fn margins(&self, word: u64) -> BTreeMap<String, StackMargin> {
        let mut out: BTreeMap<String, StackMargin> = BTreeMap::new();
        for ((task, _), w) in &self.tasks {
            if out.get(task).is_some_and(|m| m.bytes <= w.least) {
                continue;
            }
            let at = w.at.clone().unwrap_or_default();
            out.insert(
                task.clone(),
                StackMargin {
                    bytes: w.least,
                    words: w.least / word.max(1),
                    phase: at.phase,
                    span: at.span,
                    arg: at.arg,
                    label: at.label,
                },
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(span: &str, arg: u64) -> Place {
        Place {
            phase: Some("inference_run#1".into()),
            span: Some(span.into()),
            arg: Some(arg),
            label: None,
        }
    }

    #[test]
    fn the_least_margin_is_kept_with_where_it_was_first_reached() {
        let mut w = StackWatch::default();
        let low = 0x2000_1000;
        assert_eq!(
            w.read_limit("Infer", low, low + 4000),
            4000,
            "first read: up to sp"
        );
        w.observe("Infer", low, 3000, &Place::default());
        assert_eq!(w.read_limit("Infer", low, low + 4000), 3000);
        assert_eq!(
            w.read_limit("Infer", low, low + 2000),
            2000,
            "never past sp"
        );
        w.observe("Infer", low, 2900, &at("op_invoke#1", 0));
        w.observe("Infer", low, 24, &at("op_invoke#8", 7));
        // Later layers and cycles reach no deeper: the place stays the first.
        w.observe("Infer", low, 24, &at("op_invoke#23", 7));
        let m = &w.margins(4)["Infer"];
        assert_eq!((m.bytes, m.words), (24, 6));
        assert_eq!(m.span.as_deref(), Some("op_invoke#8"));
        assert_eq!(m.arg, Some(7));
        // A stack never seen to shrink: reached before the audit saw it.
        w.observe("Logger", 0x2000_3000, 500, &at("op_invoke#2", 1));
        assert_eq!(w.margins(4)["Logger"].phase, None);
        w.on_reset();
        assert_eq!(w.read_limit("Infer", low, low + 4000), 4000);
    }
}
