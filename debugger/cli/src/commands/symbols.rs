//! `memlife symbols`: what memlife resolved from the ELF, so a user can see why it walks what it walks.

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use memlife_dwarf::{FunctionRange, Type};
use memlife_heap::AllocatorKind;

use crate::cli::SymbolsArgs;

/// The lifecycle functions memlife breaks on by default.
pub const PHASE_FUNCTIONS: &[&str] = &[
    "model_load",
    "graph_build",
    "inference_run",
    "model_release",
    "model_switch",
    "op_init",
    "op_invoke",
];

/// A struct's name and its members as (name, offset, size).
type StructLayout = (String, Vec<(String, u64, u64)>);

/// The structs that make up the detected allocator's heap: only its own, so that a newlib
/// `malloc_chunk` linked into an ESP-IDF firmware is not shown as if it were the heap.
fn heap_layouts(allocator: AllocatorKind) -> &'static [&'static str] {
    match allocator {
        AllocatorKind::Heap4 | AllocatorKind::Heap5 => &["BlockLink_t"],
        AllocatorKind::Nano | AllocatorKind::Dlmalloc => &["malloc_chunk"],
        AllocatorKind::EspIdfTlsf => &[
            "heap_t_",
            "multi_heap_info",
            "control_t",
            "block_header_t",
            "poison_head_t",
        ],
        // Rust's allocators keep their state in one static of a generic type: no C struct.
        AllocatorKind::RustLlff | AllocatorKind::RustTlsf => &[],
    }
}

pub fn run(args: SymbolsArgs) -> Result<ExitCode> {
    let symbols = super::load_symbols(&args.elf)?;
    let walker = super::walker(
        &symbols,
        args.heap.allocator,
        &args.heap.walker_options(),
        None,
    )?;
    let types = symbols.types();
    let phases: Vec<(String, Option<FunctionRange>)> = PHASE_FUNCTIONS
        .iter()
        .map(|f| (f.to_string(), symbols.function(f)))
        .collect();
    let entry: Vec<(String, u64)> = walker
        .entry_points()
        .iter()
        .filter_map(|e| {
            symbols
                .function(e.function)
                .map(|f| (e.function.to_string(), f.entry))
        })
        .collect();
    let mut globals: Vec<(String, String, u64, u64, String)> = symbols
        .variables()
        .iter()
        .filter_map(|v| {
            let addr = v.address?;
            let ty = v.type_id;
            Some((
                v.name.clone(),
                v.cu.rsplit('/').next().unwrap_or(&v.cu).to_string(),
                addr,
                ty.and_then(|t| types.size_of(t)).unwrap_or(0),
                ty.map(|t| types.name_of(t)).unwrap_or_else(|| "?".into()),
            ))
        })
        .collect();
    globals.sort_by_key(|g| g.2);
    let layouts: Vec<StructLayout> = heap_layouts(walker.kind())
        .iter()
        .chain(&["tensor_info_t", "engine_t"])
        .filter_map(|name| {
            let id = types.find_struct(name)?;
            let Some((_, Type::Struct { members, .. })) = types.resolve(id) else {
                return None;
            };
            Some((
                name.to_string(),
                members
                    .iter()
                    .map(|m| {
                        (
                            m.name.clone().unwrap_or_default(),
                            m.offset,
                            m.type_id.and_then(|t| types.size_of(t)).unwrap_or(0),
                        )
                    })
                    .collect(),
            ))
        })
        .collect();

    let out = if args.json {
        let v = serde_json::json!({
            "elf": args.elf.display().to_string(),
            "allocator": walker.name(),
            "allocator_symbols": walker.resolved().iter().map(|r| serde_json::json!({"name": r.name, "address": r.address, "size": r.size, "type": r.type_name})).collect::<Vec<_>>(),
            "allocator_entry_points": entry.iter().map(|(n, a)| serde_json::json!({"name": n, "address": a})).collect::<Vec<_>>(),
            "phase_functions": phases.iter().map(|(n, f)| serde_json::json!({"name": n, "address": f.map(|x| x.entry), "size": f.map(|x| x.size)})).collect::<Vec<_>>(),
            "layouts": layouts.iter().map(|(n, m)| serde_json::json!({"name": n, "members": m.iter().map(|(mn, o, s)| serde_json::json!({"name": mn, "offset": o, "size": s})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
            "globals": globals.iter().map(|(n, cu, a, s, t)| serde_json::json!({"name": n, "cu": cu, "address": a, "size": s, "type": t})).collect::<Vec<_>>(),
        });
        format!("{}\n", serde_json::to_string_pretty(&v)?)
    } else {
        let mut o = String::new();
        let _ = writeln!(o, "elf        {}", args.elf.display());
        let _ = writeln!(o, "allocator  {} (detected)", walker.name());
        for r in walker.resolved() {
            let (n, a, s, t) = (r.name, r.address, r.size, r.type_name);
            let _ = writeln!(o, "  {n:<34} {a:#010x} {s:>7}  {t}");
        }
        for (n, a) in &entry {
            let _ = writeln!(o, "  entry {n:<28} {a:#010x}");
        }
        let _ = writeln!(o, "\nphase functions");
        for (n, f) in &phases {
            match f {
                Some(FunctionRange { entry: a, size: s }) => {
                    let _ = writeln!(o, "  {n:<16} {a:#010x} ({s} bytes)");
                }
                None => {
                    let _ = writeln!(o, "  {n:<16} not found");
                }
            }
        }
        let _ = writeln!(o, "\nlayouts");
        for (n, members) in &layouts {
            let _ = writeln!(o, "  {n}");
            for (mn, off, sz) in members {
                let _ = writeln!(o, "    +{off:<4} {mn} ({sz} bytes)");
            }
        }
        let _ = writeln!(o, "\nglobals ({})", globals.len());
        for (n, cu, a, s, t) in &globals {
            let _ = writeln!(o, "  {a:#010x} {s:>7}  {n:<32} {t}  [{cu}]");
        }
        o
    };
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::{AllocatorKind, heap_layouts};

    #[test]
    fn only_the_detected_allocators_structs_are_its_heap() {
        // ESP-IDF links newlib too, whose malloc_chunk can be in DWARF: not the heap there.
        assert!(!heap_layouts(AllocatorKind::EspIdfTlsf).contains(&"malloc_chunk"));
        assert!(heap_layouts(AllocatorKind::EspIdfTlsf).contains(&"block_header_t"));
        assert_eq!(heap_layouts(AllocatorKind::Nano), ["malloc_chunk"]);
        assert_eq!(heap_layouts(AllocatorKind::Heap5), ["BlockLink_t"]);
    }
}
