//! Peak composition: what a phase's peak is made of. The blocks the phase allocated and still
//! held at its peak, grouped by component (`memlife.toml` `[components]`) or by allocation site.
//! The engine composes each traced peak as it runs; the code is the report's view
//! (`memlife_report::views::composition`), shared with the pages that draw it.

pub use memlife_report::model::Part;
pub use memlife_report::views::composition::*;
