//! Unit tests that need RAM images of whole TFLM object graphs: both layouts, read whole,
//! shared, stale and damaged.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod corrupt;
mod current;
mod flatbuffers;
mod live;
mod support;
mod tflm2020;
