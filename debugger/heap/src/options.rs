//! [`WalkerOptions`]: what the user tells a walker that the symbols cannot (heap_5 regions,
//! newlib's break and limit, ESP-IDF's poisoning mode).

use crate::Poisoning;

/// Settings the symbols cannot supply.
#[derive(Debug, Clone, Default)]
pub struct WalkerOptions {
    /// heap_5 regions `(start, len)` (`--heap-region START:LEN`).
    pub heap_regions: Vec<(u64, u64)>,
    /// newlib: the current break, when no `_sbrk` variable is found (`--heap-break`).
    pub heap_break: Option<u64>,
    /// newlib: the heap limit, when no linker symbol gives it (`--heap-limit`).
    pub heap_limit: Option<u64>,
    /// ESP-IDF: the heap-poisoning mode, when not the one DWARF shows (`--poisoning`,
    /// `poisoning` in memlife.toml).
    pub poisoning: Option<Poisoning>,
}
