//! The views derived from a report, computed here once for every page that shows them: the
//! audit report and the diff report draw the same figures from the same code.
//!
//! - [`names`]: a phase's role, a span's name ([`SpanNames`]).
//! - [`composition`]: what the heap holds at an event, by component or allocation site.
//! - [`timeline`]: the run on one step axis, and the water level along it.
//! - [`peak`]: the run's highest used heap and where it was reached.
//! - [`stairs`]: the graph build's resident memory per operator.
//! - [`layers`]: inference's per-layer deltas and transient highs.
//! - [`trend`]: free heap after each release, folded cycles included.
//! - `delta`: [`signed_delta`], the one subtraction of two heap figures.
//!
//! [`Views::of`] computes them all for one report.

pub mod composition;
mod delta;
pub mod layers;
pub mod names;
pub mod peak;
pub mod stairs;
pub mod timeline;
pub mod trend;

pub use delta::signed_delta;
pub use layers::{Layer, Layers};
pub use names::SpanNames;
pub use peak::Peak;
pub use stairs::{Stairs, Step};
pub use timeline::Timeline;
pub use trend::Trend;

use crate::AuditReport;

/// Every view of one report.
#[derive(Debug, Clone)]
pub struct Views<'a> {
    /// The run on the step axis, with its water level.
    pub timeline: Timeline<'a>,
    /// The highest used heap of the run.
    pub peak: Option<Peak>,
    /// The graph build's stairs.
    pub stairs: Option<Stairs>,
    /// Inference's per-layer figures.
    pub layers: Option<Layers>,
    /// Free heap after each release.
    pub trend: Option<Trend>,
}

impl<'a> Views<'a> {
    /// The views of `report`, spans named as `names` says.
    pub fn of(report: &'a AuditReport, names: SpanNames) -> Self {
        let timeline = Timeline::build(report);
        let peak = peak::peak(report, &timeline);
        Views {
            timeline,
            peak,
            stairs: Stairs::of(report, names),
            layers: Layers::of(report, names),
            trend: Trend::of(report),
        }
    }
}
