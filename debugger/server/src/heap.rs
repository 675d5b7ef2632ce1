//! Walking the heap of a halted target and writing dumps; shared by `memlife heap` and the
//! monitor commands.

use std::path::Path;

use memlife_core::Target;
use memlife_dwarf::Symbols;
use memlife_heap::{HeapState, HeapWalker, LinkState, render};

use crate::error::{Context, Result};

/// Walks the heap as `link` says and renders it with the context of where the target stands.
pub fn walk_rendered(
    target: &mut dyn Target,
    symbols: &Symbols,
    walker: &dyn HeapWalker,
    link: &mut LinkState,
) -> Result<(HeapState, serde_json::Value, String)> {
    let walked =
        memlife_heap::walk_halted(walker, symbols, target, link).context("walking the heap")?;
    let (state, link) = (walked.state, walked.link);
    let ctx = render::Context::of(target, symbols, link);
    let json = render::json(&state, Some(&ctx));
    let text = render::text(&state, &ctx);
    Ok((state, json, text))
}

/// Writes `value` as pretty JSON to `path` atomically (see [`memlife_core::output`]).
pub fn write_json_atomically(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = format!("{value:#}\n");
    memlife_core::output::write_atomic(path, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn atomic_write_leaves_only_the_file() {
        let dir = std::env::temp_dir().join(format!("memlife-server-dump-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub/d.json");
        write_json_atomically(&path, &serde_json::json!({ "total_free": 5 })).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back["total_free"], 5);
        assert_eq!(std::fs::read_dir(dir.join("sub")).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
