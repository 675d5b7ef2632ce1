//! The Rhai API: what an audit script can do, registered by area, and the sandbox it runs in.
//!
//! ```rhai
//! let t = target();                        // connected, halted
//! let base = t.heap();                     // free, used, largest_free, ratio, blocks, ...
//! let c = t.cycle();                       // every role call of one cycle, in order
//! check("load-peak", c.calls[0].peak_above < 0.6 * base.size, "load peak");
//! t.on_break("model_release", |t| dump(t.heap(), "release.json"));
//! let tensors = t.var("g_tensors");        // typed read through DWARF
//! ```
//!
//! # Layout
//! - `run`: [`run_script`]: the engine assembled, the script run, what it recorded
//!   ([`ScriptOutcome`], [`ScriptError`]).
//! - `sandbox`: the limits, no `eval`, no modules, output paths: every restriction in one place.
//! - `handle`: the `Target` object over the debugger ([`TargetHandle`]) and the run state the
//!   free functions reach.
//! - One module per area, each registering its functions and converting its values:
//!   - `heap`: the `Heap` object, `t.heap()`, `heap_caps_*`, `diff`;
//!   - `cycles`: phases and cycles (`t.cycle()`, `t.phase()`, `t.roles()`, `t.calls()`);
//!   - `trace`: tracing, events, leaks, late frees, buffers and tensors;
//!   - `spans`: span labels and functions, damaged blocks;
//!   - `errors`: error paths (`t.fail_alloc`, `t.after_failure()`, `t.alloc_sites`);
//!   - `target`: run control and reads (`t.run_to`, `t.reset`, `t.on_break`, `t.var`);
//!   - `tasks`: an RTOS firmware's tasks (`t.has_tasks()`, `t.stack_margins()`,
//!     `t.task_totals()`);
//!   - `outputs`: `check`, `warn`, `skip`, `dump`, `budget`, `kib`;
//!   - `arena`: TensorFlow Lite Micro's builds (`t.observe_arenas()`, `t.arena_models()`,
//!     `t.arena_builds()`, `t.arena_steps()`, `t.arena_peaks()`).
//! - `convert`: conversions the areas share.
//! - `reads`: what a script reads of the allocation trace, from its text ([`ScriptReads`]).
//!
//! To add a function: register it in the `register` of its area's module, next to the
//! conversions of what it returns, with a unit test there.

mod arena;
mod convert;
mod cycles;
mod errors;
mod handle;
mod heap;
mod outputs;
mod reads;
mod run;
mod sandbox;
mod spans;
mod target;
mod tasks;
#[cfg(test)]
mod testing;
mod trace;

pub use handle::TargetHandle;
pub use reads::ScriptReads;
pub use run::{ScriptError, ScriptOutcome, run_script};
pub use sandbox::{MAX_ARRAY, MAX_MAP, MAX_MEMORY, MAX_STRING};
