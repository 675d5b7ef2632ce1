//! The allocation trace: breakpoints on the allocator's traced entries, and every allocation
//! and release recorded with its block, its size, the bytes in use after it and its call site.
//!
//! The block of a user pointer and the header to prefetch come from the walker
//! ([`HeapWalker::block_of`](memlife_heap::HeapWalker::block_of),
//! [`header_range`](memlife_heap::HeapWalker::header_range)); a backtrace at every allocation is
//! read from one stack window fetched together with that header (`crate::unwind`).
//!
//! # Layout
//! - `recorder`: [`AllocationTrace`], the trace's state and its stops.
//! - `arming`: [`Arming`]: whether its breakpoints are asked for and in, with or without the
//!   allocator's entry for the size asked, and what the report says was traced.
//! - `scope`: [`TraceScope`]: where they are armed (everywhere, in phases, in some phases).
//! - `entries`: the allocator's entries and return instructions to break on.
//! - `live`: the blocks allocated and not freed ([`LiveAlloc`]), and damage found in them.
//! - `requests`: sizes asked at entries whose return is still to come.
//! - `sites`: allocation sites and backtraces ([`Sites`], [`site_of`]).

mod arming;
mod entries;
mod live;
mod recorder;
mod requests;
mod scope;
mod sites;

pub use arming::Arming;
pub use entries::sizes_blocks_from_requests;
pub use live::{LiveAlloc, LiveBlocks};
pub use recorder::AllocationTrace;
pub use scope::TraceScope;
pub use sites::{Sites, site_of};
