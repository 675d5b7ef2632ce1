//! [`AllocatorKind`]: the allocators memlife walks, by the names reports and `--allocator`
//! give them. Apart from `detect` because every walker names its own kind.

use std::str::FromStr;

/// The allocators memlife walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocatorKind {
    /// FreeRTOS heap_4.
    Heap4,
    /// FreeRTOS heap_5.
    Heap5,
    /// newlib-nano malloc.
    Nano,
    /// newlib's full malloc (dlmalloc).
    Dlmalloc,
    /// ESP-IDF's heap: `registered_heaps`, multi_heap and TLSF.
    EspIdfTlsf,
    /// Rust's `embedded_alloc::LlffHeap` (linked_list_allocator).
    RustLlff,
    /// Rust's `embedded_alloc::TlsfHeap` (rlsf).
    RustTlsf,
}

impl AllocatorKind {
    /// The name reports, `memlife heap` and `memlife symbols` give it (`freertos-heap4`).
    pub const fn name(self) -> &'static str {
        match self {
            AllocatorKind::Heap4 => "freertos-heap4",
            AllocatorKind::Heap5 => "freertos-heap5",
            AllocatorKind::Nano => "newlib-nano",
            AllocatorKind::Dlmalloc => "newlib-dlmalloc",
            AllocatorKind::EspIdfTlsf => "esp-idf-tlsf",
            AllocatorKind::RustLlff => "embedded-alloc-llff",
            AllocatorKind::RustTlsf => "embedded-alloc-tlsf",
        }
    }

    /// The short name `--allocator` takes (`heap4`), as [`AllocatorKind::ALL`] lists it.
    pub fn flag_name(self) -> &'static str {
        AllocatorKind::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("", |(_, n)| n)
    }

    /// Every kind, with the names `--allocator` accepts.
    pub const ALL: [(AllocatorKind, &'static str); 7] = [
        (AllocatorKind::Heap4, "heap4"),
        (AllocatorKind::Heap5, "heap5"),
        (AllocatorKind::Nano, "nano"),
        (AllocatorKind::Dlmalloc, "dlmalloc"),
        (AllocatorKind::EspIdfTlsf, "tlsf"),
        (AllocatorKind::RustLlff, "llff"),
        (AllocatorKind::RustTlsf, "rlsf"),
    ];
}

impl FromStr for AllocatorKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.to_ascii_lowercase().replace(['_', '-'], "");
        // `embedded-alloc-tlsf` is Rust's TLSF (rlsf), not ESP-IDF's.
        if let Some(rust) = s.strip_prefix("embeddedalloc") {
            return match rust {
                "llff" => Ok(AllocatorKind::RustLlff),
                "tlsf" | "rlsf" => Ok(AllocatorKind::RustTlsf),
                _ => Err(format!(
                    "unknown allocator `{s}` (embedded-alloc has llff and tlsf)"
                )),
            };
        }
        let s = s
            .trim_start_matches("freertos")
            .trim_start_matches("newlib")
            .trim_start_matches("espidf");
        AllocatorKind::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
            .ok_or_else(|| {
                let names: Vec<&str> = AllocatorKind::ALL.iter().map(|(_, n)| *n).collect();
                format!("unknown allocator `{s}` (known: {})", names.join(", "))
            })
    }
}

impl std::fmt::Display for AllocatorKind {
    /// The short name, which [`FromStr`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.flag_name())
    }
}
