//! `memlife snapshot`: save RAM and registers for offline analysis (`--snapshot FILE`).
//!
//! Saved: every writable section of the ELF (`.data`, `.bss`...), the heap arena the walker
//! finds (newlib's heap sits above `.bss`; an ESP-IDF heap has several regions), the stack from
//! sp up to `_estack` when the linker script defines it, and any `--region`. Overlapping ranges
//! are merged.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use memlife_core::{Register, Snapshot};

use crate::cli::SnapshotArgs;
use crate::session::Session;

pub fn run(args: SnapshotArgs) -> Result<ExitCode> {
    let symbols = super::load_symbols(&args.elf)?;
    let mut walks = super::environment::link(args.heap.walk, &super::environment::read()?);
    let mut session = Session::open(&args.target, &args.elf, args.stop.leave)?;
    let target = session.target()?;
    crate::runto::stop_where_asked(target, &symbols, &args.stop)?;
    let mut ranges: Vec<(u64, u64)> = symbols
        .writable_sections()
        .iter()
        .map(|(_, a, s)| (*a, *s))
        .collect();
    let walker = super::walker(
        &symbols,
        args.heap.allocator,
        &args.heap.walker_options(),
        Some(&mut *target),
    )?;
    let (state, _) = super::walk(target, &symbols, walker.as_ref(), &mut walks)?;
    if state.regions.is_empty() {
        if state.heap_size > 0 {
            ranges.push((state.heap_start, state.heap_size));
        }
    } else {
        // Multi-heap allocators: every region whole (its state, control structure and pool).
        ranges.extend(state.regions.iter().map(|r| (r.start, r.end - r.start)));
    }
    if let (Ok(sp), Some(top)) = (
        target.read_register(Register::StackPointer),
        symbols.elf_symbol("_estack").map(|s| s.address),
    ) && top > sp
        && top - sp < (1 << 20)
    {
        ranges.push((sp, top - sp));
    }
    ranges.extend(&args.region);
    let mut snap = Snapshot {
        description: format!(
            "{}{}",
            target.describe(),
            args.stop
                .at
                .as_ref()
                .map(|f| format!(" at entry {} of {f}", args.stop.hit))
                .unwrap_or_default()
        ),
        elf: Some(args.elf.display().to_string()),
        registers: target.read_all_registers().context("reading registers")?,
        regions: Vec::new(),
    };
    for (start, end) in merge(ranges) {
        let data = target
            .as_memory()
            .read_vec(start, (end - start) as usize)
            .with_context(|| format!("reading {start:#010x}..{end:#010x}"))?;
        snap.add_region(start, data)?;
    }
    session.close()?;
    snap.save(&args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let total: usize = snap.regions.iter().map(|r| r.data.len()).sum();
    writeln!(
        std::io::stdout(),
        "wrote {} ({} regions, {total} bytes, {} registers)",
        args.output.display(),
        snap.regions.len(),
        snap.registers.len()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Sorts and merges overlapping or touching ranges into `(start, end)` pairs.
fn merge(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.retain(|(_, l)| *l > 0);
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (start, len) in ranges {
        let end = start.saturating_add(len);
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::merge;

    #[test]
    fn merges_overlapping_and_touching() {
        assert_eq!(
            merge(vec![(10, 5), (0, 4), (4, 2), (12, 10), (40, 0)]),
            vec![(0, 6), (10, 22)]
        );
    }
}
