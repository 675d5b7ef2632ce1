//! Walking the heap of a halted target for the monitor commands, rendered the way `memlife
//! heap` renders it (`memlife_heap::render`, and TensorFlow Lite Micro's arenas with
//! `memlife_tflm::render`).

use memlife_core::Target;
use memlife_dwarf::Symbols;
use memlife_heap::{HeapState, HeapWalker, LinkState, render};

use crate::error::{Context, Result};

/// One walk of the heap, in each view a monitor command prints.
#[derive(Debug, Clone)]
pub struct RenderedHeap {
    /// The walked heap.
    pub state: HeapState,
    /// As `memlife heap --json` prints it.
    pub json: serde_json::Value,
    /// As `memlife heap` prints it.
    pub text: String,
}

/// Walks the heap as `link` says and renders it with the context of where the target stands.
pub fn walk_rendered(
    target: &mut dyn Target,
    symbols: &Symbols,
    walker: &dyn HeapWalker,
    link: &mut LinkState,
) -> Result<RenderedHeap> {
    let walked =
        memlife_heap::walk_halted(walker, symbols, target, link).context("walking the heap")?;
    let ctx = render::Context::of(target, symbols, walked.link);
    let mut json = render::json(&walked.state, Some(&ctx));
    let mut text = render::text(&walked.state, &ctx);
    // TensorFlow Lite Micro's arenas, as `memlife heap` shows them.
    match memlife_audit::observers::arena::in_heap(target.as_memory(), symbols, &walked.state) {
        Ok(Some(arenas)) => {
            memlife_tflm::render::insert_json(&mut json, &arenas);
            text.push('\n');
            text.push_str(&memlife_tflm::render::text(&arenas));
        }
        Ok(None) => {}
        Err(e) => tracing::warn!("TensorFlow Lite Micro's arenas not read: {e}"),
    }
    Ok(RenderedHeap {
        state: walked.state,
        json,
        text,
    })
}
