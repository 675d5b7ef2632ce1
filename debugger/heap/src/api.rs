//! What a walker tells the rest of memlife about its allocator besides the heap itself: the
//! functions of its API ([`EntryPoint`]), how a user pointer maps to its block ([`BlockRef`]),
//! where it keeps a low-water mark ([`LowWaterMark`]) and the globals it resolved
//! ([`ResolvedSymbol`]). The audit engine traces and measures through these, knowing no
//! allocator by name.

/// What one function of the allocator's API does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryRole {
    /// The function every allocation goes through exactly once: tracing breaks here. The
    /// requested size is the `size_arg`-th argument (0-based), the user pointer the return value.
    Malloc {
        /// Argument holding the requested size.
        size_arg: u8,
    },
    /// The function every release goes through exactly once: tracing breaks here. The user
    /// pointer is the `ptr_arg`-th argument (0-based).
    Free {
        /// Argument holding the user pointer.
        ptr_arg: u8,
    },
    /// Another function that allocates (a public wrapper, calloc, realloc, an aligned variant,
    /// an inner layer): a core halted inside it is busy and allocation sites look past it, but
    /// tracing does not break on it.
    OtherAlloc,
    /// Another function that releases (a public wrapper, an inner layer).
    OtherFree,
}

impl EntryRole {
    /// Allocates (traced or not).
    pub fn allocates(self) -> bool {
        matches!(self, EntryRole::Malloc { .. } | EntryRole::OtherAlloc)
    }

    /// Releases (traced or not).
    pub fn frees(self) -> bool {
        matches!(self, EntryRole::Free { .. } | EntryRole::OtherFree)
    }
}

/// One function of the allocator's API, by its symbol name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryPoint {
    /// The function's symbol.
    pub function: &'static str,
    /// What it does.
    pub role: EntryRole,
}

impl EntryPoint {
    /// The traced allocation entry.
    pub const fn malloc(function: &'static str, size_arg: u8) -> Self {
        EntryPoint {
            function,
            role: EntryRole::Malloc { size_arg },
        }
    }

    /// The traced release entry.
    pub const fn free(function: &'static str, ptr_arg: u8) -> Self {
        EntryPoint {
            function,
            role: EntryRole::Free { ptr_arg },
        }
    }

    /// Another allocating function.
    pub const fn other_alloc(function: &'static str) -> Self {
        EntryPoint {
            function,
            role: EntryRole::OtherAlloc,
        }
    }

    /// Another releasing function.
    pub const fn other_free(function: &'static str) -> Self {
        EntryPoint {
            function,
            role: EntryRole::OtherFree,
        }
    }
}

/// A block as its allocator accounts for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRef {
    /// Address of the block (its header), as the heap walk lists it.
    pub addr: u64,
    /// Size in the allocator's accounting (the same units as [`Block::size`](crate::Block)).
    pub size: u64,
}

/// The bytes [`HeapWalker::block_of`](crate::HeapWalker::block_of) reads first for a user
/// pointer: the header in front of it, which a caller can fetch together with other reads at
/// the same stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderRange {
    /// Address of the first byte.
    pub addr: u64,
    /// Bytes to read.
    pub len: usize,
}

/// Where an allocator keeps its lowest free figure, for the watermark peak method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LowWaterMark {
    /// One pair of 32-bit counters for the whole heap: the free bytes now and the minimum ever,
    /// at these addresses. Resetting the minimum to the free bytes at a phase entry and reading
    /// it at the return gives the phase's peak.
    Counters {
        /// Address of the free-bytes counter.
        free: u64,
        /// Address of the minimum-ever counter.
        minimum: u64,
    },
    /// One minimum per heap (named `counter` in the allocator): per-heap minima need not
    /// coincide, so they do not add up to the peak of the whole.
    PerHeap {
        /// The allocator's name for the per-heap counter.
        counter: &'static str,
    },
    /// The allocator keeps none.
    None,
}

/// A global the walker resolved from the ELF (for `memlife symbols`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedSymbol {
    /// Name (a constant is marked as such).
    pub name: String,
    /// Address (0 for a constant).
    pub address: u64,
    /// Size in bytes (a constant's value).
    pub size: u64,
    /// C type, or what the walker learnt about a layout.
    pub type_name: String,
}
