//! Errors that stop a reading (what RAM holds never is one: see [`crate::ArenaAnomaly`]).

use memlife_core::TargetError;

/// Why TFLM's arenas could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TflmError {
    /// The link to the target failed while the containers were read; the target's error is
    /// the source.
    #[error("reading TFLM's arenas failed")]
    Target(#[from] TargetError),
}
