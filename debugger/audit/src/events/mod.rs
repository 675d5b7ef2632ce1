//! The engine's vocabulary: what each breakpoint is for and who handles it, and the events the
//! components talk through. The target session runs the target to a stop and reads its
//! registers ([`crate::session::Regs`]); the run loop routes the stop by its breakpoint's
//! [`Role`] or [`Awaited`] return to the component that owns it; an allocation or release
//! travels as a [`HeapEvent`] through the spans, the open phase and the added observers before
//! the trace keeps it; phase and span [`Boundary`]s go to the added observers.
//!
//! # Layout
//! - `roles`: [`Role`], [`Awaited`]: the routing table; [`AuditSession`].
//! - `heap`: [`HeapEvent`], [`Tags`].
//! - `boundary`: [`Boundary`].
//! - `observer`: [`Observer`], the extension point, with its [`Ctx`].

mod boundary;
mod heap;
mod observer;
mod roles;

pub use boundary::Boundary;
pub use heap::{HeapEvent, Tags};
pub use observer::{Admission, Ctx, Observer, Open};
pub use roles::{AuditSession, Awaited, ObserverId, PendingAlloc, Role, TraceRole};
