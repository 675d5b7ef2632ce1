//! Progress, for the progress bar: stops, events and phases so far, the phase running, handed
//! to a callback after every stop.

/// Progress so far.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Stops handled.
    pub stops: u64,
    /// Trace events.
    pub events: u64,
    /// Phases completed.
    pub phases: u64,
    /// The phase running.
    pub current: Option<String>,
}

/// Called after every stop with the progress so far.
pub type ProgressFn = Box<dyn FnMut(&Progress)>;

/// The progress and who is told about it.
#[derive(Default)]
pub struct Reporter {
    /// Progress so far.
    pub progress: Progress,
    /// Told after every stop.
    callback: Option<ProgressFn>,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter")
            .field("progress", &self.progress)
            .finish()
    }
}

impl Reporter {
    /// Tells `f` after every stop.
    pub fn set_callback(&mut self, f: ProgressFn) {
        self.callback = Some(f);
    }

    /// A stop was handled: the session's count of stops, then the callback.
    pub fn stopped(&mut self, stops: u64) {
        self.progress.stops = stops;
        if let Some(f) = self.callback.as_mut() {
            f(&self.progress);
        }
    }
}
