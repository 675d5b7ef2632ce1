//! Walking the heap of a halted target and writing dumps; shared by `memlife heap` and the
//! monitor commands.

use std::path::Path;

use anyhow::{Context, Result};
use memlife_core::{LinkStats, Register, Target};
use memlife_dwarf::Symbols;
use memlife_heap::{HeapState, HeapWalker};

use crate::render;

/// The pc and the function that holds it.
pub fn where_stopped(target: &mut dyn Target, symbols: &Symbols) -> Option<(u64, Option<String>)> {
    let pc = target.read_register(Register::ProgramCounter).ok()?;
    Some((pc, symbols.function_at(pc).map(|s| s.name.clone())))
}

/// Walks the heap of a halted target, with busy detection from the pc, and what it cost.
pub fn walk(
    target: &mut dyn Target,
    symbols: &Symbols,
    walker: &dyn HeapWalker,
) -> Result<(HeapState, LinkStats)> {
    let walked = memlife_heap::walk_halted(walker, symbols, target).context("walking the heap")?;
    Ok((walked.state, walked.link))
}

/// Walks the heap and renders it with the context of where the target stands.
pub fn walk_rendered(
    target: &mut dyn Target,
    symbols: &Symbols,
    walker: &dyn HeapWalker,
) -> Result<(HeapState, serde_json::Value, String)> {
    let (state, link) = walk(target, symbols, walker)?;
    let ctx = render::Context {
        target: target.describe(),
        at: None,
        pc: where_stopped(target, symbols),
        link,
    };
    let json = render::json(&state, &ctx);
    let text = render::text(&state, &ctx);
    Ok((state, json, text))
}

/// Writes `value` as pretty JSON to `path` atomically: a temporary file next to it, then a rename.
pub fn write_json_atomically(path: &Path, value: &serde_json::Value) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {}", dir.display()))?;
    }
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dump".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot rename {} to {}", tmp.display(), path.display())
    })?;
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
