//! Choosing a walker: from the symbols, or as the user says.

use memlife_core::Memory;
use memlife_dwarf::Symbols;

pub use crate::kind::AllocatorKind;
pub use crate::options::WalkerOptions;
use crate::walkers::embedded_alloc::{
    self, LLFF_TYPE, TLSF_TYPE, llff::LlffWalker, tlsf::TlsfWalker as RustTlsfWalker,
};
use crate::walkers::{
    dlmalloc::DlmallocWalker, freertos::FreeRtosWalker, nano::NanoWalker, tlsf::TlsfWalker,
};
use crate::{HeapError, HeapWalker};

/// What detection looks for, for error messages.
const LOOKED_FOR: &str = "FreeRTOS heap_4 (xStart, pxEnd, ucHeap), heap_5 (xStart, pxEnd, vPortDefineHeapRegions), \
newlib-nano (__malloc_free_list, __malloc_sbrk_start), newlib dlmalloc (__malloc_av_, __malloc_sbrk_base), \
ESP-IDF heap (registered_heaps), \
Rust embedded-alloc (a static of type embedded_alloc::llff::Heap or embedded_alloc::tlsf::Heap)";

/// Picks and builds the walker. `mem` is only used by heap_5 to read the application's region
/// table; pass `None` offline without one.
pub fn detect(
    symbols: &Symbols,
    forced: Option<AllocatorKind>,
    opts: &WalkerOptions,
    mem: Option<&mut dyn Memory>,
) -> Result<Box<dyn HeapWalker>, HeapError> {
    check_options(opts)?;
    let kind = match forced {
        Some(k) => k,
        None => detect_kind(symbols).ok_or(HeapError::NotFound {
            looked_for: LOOKED_FOR.to_string(),
        })?,
    };
    Ok(match kind {
        AllocatorKind::Heap4 => Box::new(FreeRtosWalker::heap4(symbols)?),
        AllocatorKind::Heap5 => Box::new(FreeRtosWalker::heap5(symbols, &opts.heap_regions, mem)?),
        AllocatorKind::Nano => Box::new(NanoWalker::from_symbols(symbols, opts)?),
        AllocatorKind::Dlmalloc => Box::new(DlmallocWalker::from_symbols(symbols, opts)?),
        AllocatorKind::EspIdfTlsf => Box::new(TlsfWalker::from_symbols(symbols, opts.poisoning)?),
        AllocatorKind::RustLlff => Box::new(LlffWalker::from_symbols(symbols)?),
        AllocatorKind::RustTlsf => Box::new(RustTlsfWalker::from_symbols(symbols)?),
    })
}

/// The break and the limit the user gives are addresses the walk adds to, like the symbols'
/// (`walkers::check_in_32_bits`); heap_5's regions are checked with the region table's.
fn check_options(opts: &WalkerOptions) -> Result<(), HeapError> {
    for (flag, value) in [
        ("--heap-break", opts.heap_break),
        ("--heap-limit", opts.heap_limit),
    ] {
        if let Some(v) = value.filter(|v| *v > crate::walkers::ADDRESS_SPACE_END) {
            return Err(HeapError::Config(format!(
                "{flag} {v:#x} lies above 4 GiB; memlife walks the heaps of 32-bit targets only"
            )));
        }
    }
    Ok(())
}

/// The allocator the symbols show: ESP-IDF first (its FreeRTOS maps pvPortMalloc to
/// heap_caps_malloc, and its newlib's malloc too), then FreeRTOS (firmware that has both calls
/// pvPortMalloc).
pub fn detect_kind(symbols: &Symbols) -> Option<AllocatorKind> {
    let has = |n: &str| symbols.has_symbol(n);
    let types = symbols.types();
    if has("registered_heaps")
        && (types.find_struct("heap_t_").is_some()
            || types.find_struct("multi_heap_info").is_some()
            || has("multi_heap_register")
            || has("heap_caps_malloc"))
    {
        return Some(AllocatorKind::EspIdfTlsf);
    }
    if has("xStart") && has("pxEnd") {
        if has("ucHeap") {
            return Some(AllocatorKind::Heap4);
        }
        if has("vPortDefineHeapRegions") {
            return Some(AllocatorKind::Heap5);
        }
    }
    if has("__malloc_free_list") && has("__malloc_sbrk_start") {
        return Some(AllocatorKind::Nano);
    }
    if has("__malloc_av_") && has("__malloc_sbrk_base") {
        return Some(AllocatorKind::Dlmalloc);
    }
    // Rust: the global allocator static, by its type.
    if embedded_alloc::has_heap_static(symbols, LLFF_TYPE) {
        return Some(AllocatorKind::RustLlff);
    }
    if embedded_alloc::has_heap_static(symbols, TLSF_TYPE) {
        return Some(AllocatorKind::RustTlsf);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walkers add target words to the ELF's addresses with plain `+`: a 64-bit image with
    /// its heap near 2^64 would overflow them, so it is refused before a walker exists.
    #[test]
    fn heap_symbols_above_4_gib_are_refused() {
        let dir = memlife_testkit::process::tempdir("heap-above-4gib");
        let elf = memlife_testkit::host_elf::heap4_near_top_of_64_bits(&dir);
        let symbols = Symbols::load(&elf).unwrap();
        assert_eq!(detect_kind(&symbols), Some(AllocatorKind::Heap4));
        let err = detect(&symbols, None, &WalkerOptions::default(), None).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, HeapError::Config(_)), "{msg}");
        assert!(
            msg.contains(
                "freertos-heap4: `ucHeap` at 0xffffffffffffc000 (8192 bytes) ends above 4 GiB"
            ),
            "{msg}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_heap_break_or_limit_above_4_gib_is_refused() {
        let elf =
            memlife_testkit::firmware::repo().join("debugger/heap/testdata/nano-fragmentation.elf");
        let symbols = Symbols::load(&elf).unwrap();
        assert!(detect(&symbols, None, &WalkerOptions::default(), None).is_ok());
        for (opts, flag) in [
            (
                WalkerOptions {
                    heap_limit: Some(u64::MAX),
                    ..WalkerOptions::default()
                },
                "--heap-limit 0xffffffffffffffff",
            ),
            (
                WalkerOptions {
                    heap_break: Some((1 << 32) + 8),
                    ..WalkerOptions::default()
                },
                "--heap-break 0x100000008",
            ),
        ] {
            let err = detect(&symbols, None, &opts, None).unwrap_err().to_string();
            assert!(err.contains(flag) && err.contains("above 4 GiB"), "{err}");
        }
    }

    #[test]
    fn allocator_names_parse_with_or_without_their_prefix() {
        for (text, kind) in [
            ("heap4", AllocatorKind::Heap4),
            ("freertos-heap5", AllocatorKind::Heap5),
            ("newlib-nano", AllocatorKind::Nano),
            ("tlsf", AllocatorKind::EspIdfTlsf),
            ("esp-idf-tlsf", AllocatorKind::EspIdfTlsf),
            ("ESP_IDF_TLSF", AllocatorKind::EspIdfTlsf),
            ("llff", AllocatorKind::RustLlff),
            ("embedded-alloc-llff", AllocatorKind::RustLlff),
            ("embedded-alloc-rlsf", AllocatorKind::RustTlsf),
            ("embedded-alloc-tlsf", AllocatorKind::RustTlsf),
        ] {
            assert_eq!(text.parse::<AllocatorKind>(), Ok(kind), "{text}");
        }
        // Each short name reads back, and each kind has its own reported name.
        for (kind, _) in AllocatorKind::ALL {
            assert_eq!(kind.to_string().parse::<AllocatorKind>(), Ok(kind));
            assert_eq!(kind.name().parse::<AllocatorKind>(), Ok(kind), "{kind}");
        }
        let err = "umm".parse::<AllocatorKind>().unwrap_err();
        assert!(
            err.contains("known: heap4, heap5, nano, dlmalloc, tlsf, llff, rlsf"),
            "{err}"
        );
    }
}
