//! Text and JSON renderings of a heap state: they live in `memlife-server`, which prints the same
//! tables for `monitor heap`.

pub use memlife_server::render::{Context, json, text};
