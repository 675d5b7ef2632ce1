//! What an audit traces, decided once before its script runs: allocations when the script
//! reads them, requested sizes when the script or an output shows them, each unless
//! `[trace] allocations` or `requests` in memlife.toml says otherwise; the breakpoints armed
//! where `[trace] scope` allows. A script that reads no allocation then halts the firmware only
//! at phase and span boundaries, and one that reads no requested size stops once per
//! allocation: fewer and shorter halts for a firmware with real-time work of its own.

use super::facade::Debugger;
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::observers::trace::sizes_blocks_from_requests;
use crate::script::ScriptReads;

/// A decision and what made it.
struct Decision {
    on: bool,
    why: String,
}

/// `a, b and c`.
fn listed<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names.into_iter().collect::<Vec<_>>().join(", ")
}

impl Debugger {
    /// Applies what the script reads (its text, [`ScriptReads`]), the outputs asked for and
    /// `[trace]` to the allocation trace, and records why for the report (`run.trace`).
    pub fn plan_trace(&mut self, script: &ScriptReads) -> Result<(), AuditError> {
        let allocations = self.allocations_decision(script);
        let requests = self.requests_decision(script);
        if self.settings.method == PeakMethod::Trace {
            self.set_tracing(allocations.on)?;
        }
        self.trace.set_requests(&mut self.session, requests.on)?;
        let scope = self.settings.config.trace.scope.to_string();
        ::tracing::info!(
            "allocation tracing {} ({}); requested sizes {} ({}); armed {scope}",
            if allocations.on { "on" } else { "off" },
            allocations.why,
            if requests.on { "read" } else { "not read" },
            requests.why,
        );
        self.trace
            .arming_mut()
            .set_reasons(&self.session, allocations.why, requests.why, scope)
    }

    fn allocations_decision(&self, script: &ScriptReads) -> Decision {
        let method = self.settings.method;
        if method != PeakMethod::Trace {
            let name = format!("{method:?}").to_lowercase();
            return Decision {
                on: false,
                why: format!("the {name} method traces no allocation"),
            };
        }
        match self.settings.config.trace.allocations {
            Some(on) => Decision {
                on,
                why: format!("[trace] allocations = {on}"),
            },
            None if script.allocations.is_empty() => Decision {
                on: false,
                why: "the script reads no allocation".into(),
            },
            None => Decision {
                on: true,
                why: format!(
                    "the script reads {}",
                    listed(script.allocations.iter().copied())
                ),
            },
        }
    }

    fn requests_decision(&self, script: &ScriptReads) -> Decision {
        if sizes_blocks_from_requests(self.session.walker()) {
            return Decision {
                on: true,
                why: format!(
                    "{} keeps no block header: the size asked sizes each block",
                    self.session.walker().name()
                ),
            };
        }
        let trace = &self.settings.config.trace;
        if let Some(on) = trace.requests {
            return Decision {
                on,
                why: format!("[trace] requests = {on}"),
            };
        }
        let readers: Vec<&str> = script
            .requests
            .iter()
            .copied()
            .chain(trace.requests_shown_by.iter().map(String::as_str))
            .collect();
        if readers.is_empty() {
            Decision {
                on: false,
                why: "nothing reads them: one stop per allocation, at the allocator's return"
                    .into(),
            }
        } else {
            Decision {
                on: true,
                why: format!("read by {}", listed(readers)),
            }
        }
    }
}
