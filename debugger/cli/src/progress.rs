//! Progress while an audit runs: an indicatif spinner on a terminal (phases, stops, allocation
//! events), plain lines on stderr otherwise. Script `print` output goes through here so it does
//! not tear the spinner.

use std::io::Write;
use std::rc::Rc;

use indicatif::{ProgressBar, ProgressStyle};
use memlife_audit::debugger::Progress as State;

/// The progress display.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A spinner when `terminal`, nothing otherwise.
    pub fn new(terminal: bool) -> Self {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new_spinner();
            let style = ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Progress { bar }
    }

    /// Called by the debugger after every stop.
    pub fn observer(&self) -> Box<dyn FnMut(&State)> {
        let bar = self.bar.clone();
        let mut last_phases = 0;
        Box::new(move |p: &State| {
            if let Some(bar) = &bar {
                bar.set_message(format!(
                    "{} phases, {} stops, {} allocation events{}",
                    p.phases,
                    p.stops,
                    p.events,
                    p.current
                        .as_ref()
                        .map(|c| format!(" | in {c}"))
                        .unwrap_or_default()
                ));
            } else if p.phases != last_phases && p.phases.is_multiple_of(10) {
                eprintln!(
                    "memlife: {} phases, {} stops, {} allocation events",
                    p.phases, p.stops, p.events
                );
            }
            last_phases = p.phases;
        })
    }

    /// Where script `print` goes: stdout, above the spinner. A closed stdout (`| head`) is
    /// not an error of the audit: the lines are dropped.
    pub fn printer(&self) -> Rc<dyn Fn(&str)> {
        let bar = self.bar.clone();
        let print = |s: &str| {
            let _ = writeln!(std::io::stdout(), "{}", memlife_core::text::printable(s));
        };
        Rc::new(move |s: &str| match &bar {
            Some(bar) => bar.suspend(|| print(s)),
            None => print(s),
        })
    }

    /// Removes the spinner.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
