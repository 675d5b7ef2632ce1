//! `memlife arena`: run a TensorFlow Lite Micro firmware until each model it builds was built
//! (and run once), watching every arena as it is built (the engine's arena observer), and print
//! per model the arena it has, the smallest that works and the spare.

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;
use std::rc::Rc;

use anyhow::{Result, bail};
use memlife_audit::config::EngineSettings;
use memlife_audit::debugger::{ArenaEnd, Refused};
use memlife_audit::history::DEFAULT_KEEP_CYCLES;
use memlife_audit::model::{ArenaBuild, ArenaRecord, ModelArena};
use memlife_audit::{AuditConfig, Debugger, PeakMethod};

use crate::cli::ArenaArgs;
use crate::runto::ensure_halted;
use crate::session::Session;

pub fn run(args: ArenaArgs) -> Result<ExitCode> {
    let symbols = Rc::new(super::load_symbols(&args.elf)?);
    let Some(tflm) = memlife_tflm::Tflm::detect(&symbols) else {
        bail!(
            "{}: no TensorFlow Lite Micro in its DWARF (no arena allocator class)",
            args.elf.display()
        );
    };
    let mut session = Session::open(&args.target, &args.elf, args.leave)?;
    let walker = {
        let target = session.target()?;
        ensure_halted(target)?;
        super::walker(
            &symbols,
            args.heap.allocator,
            &args.heap.walker_options(),
            Some(target),
        )?
    };
    let timeout = memlife_core::limits::timeout_secs(args.timeout).map_err(anyhow::Error::msg)?;
    let env = super::environment::read()?;
    let settings = EngineSettings {
        config: AuditConfig::default(),
        method: PeakMethod::Sample,
        timeout,
        keep_cycles: Some(DEFAULT_KEEP_CYCLES),
        link: super::environment::link(args.heap.walk, &env),
        tuning: env.tuning,
    };
    let target = session.lend()?;
    let mut debugger = match Debugger::new(target, symbols, walker, settings) {
        Ok(d) => d,
        Err(Refused { error, target }) => {
            session.give_back(target);
            session.close()?;
            return Err(error.into());
        }
    };
    let observed = debugger.observe_arenas(args.builds);
    session.give_back(debugger.into_target());
    session.close()?;
    let (end, record) = observed?;
    let out = if args.json {
        let mut v = serde_json::to_value(&record)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("end".into(), end_json(&end));
        }
        let mut s = serde_json::to_string_pretty(&v)?;
        s.push('\n');
        s
    } else {
        text(&record, &end, tflm.generation().name(), args.steps)
    };
    // Model and operator names come from the ELF and target RAM: no terminal controls.
    std::io::stdout().write_all(memlife_core::text::printable(&out).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn end_json(end: &ArenaEnd) -> serde_json::Value {
    match end {
        ArenaEnd::Repeated(model) => serde_json::json!({ "kind": "repeated", "model": model }),
        ArenaEnd::Exited(status) => serde_json::json!({ "kind": "exited", "status": status }),
        ArenaEnd::Quiet => serde_json::json!({ "kind": "quiet" }),
        ArenaEnd::Limit => serde_json::json!({ "kind": "limit" }),
    }
}

fn end_text(end: &ArenaEnd) -> String {
    match end {
        ArenaEnd::Repeated(model) => format!("until {model} was built again"),
        ArenaEnd::Exited(status) => format!("until the program exited (status {status})"),
        ArenaEnd::Quiet => "until no further build began".into(),
        ArenaEnd::Limit => "until the --builds limit".into(),
    }
}

/// `arena N B, needs M B, spare S B` (or the bytes missing), with what the figure rests on.
pub fn model_line(m: &ModelArena) -> String {
    let needs = match (m.needs, m.exact) {
        (Some(n), true) => format!("needs {n} B"),
        (Some(n), false) => format!("needs at least {n} B"),
        (None, _) => "needs ? B (the build was not seen far enough)".into(),
    };
    let spare = match m.spare {
        Some(s) if s >= 0 => format!(", spare {s} B"),
        Some(s) => format!(", {} B missing", s.unsigned_abs()),
        None => String::new(),
    };
    let failed = if m.failed {
        " (AllocateTensors failed)"
    } else {
        ""
    };
    format!("arena {} B, {needs}{spare}{failed}", m.arena_bytes)
}

fn text(r: &ArenaRecord, end: &ArenaEnd, generation: &str, steps: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "TensorFlow Lite Micro {generation}: {} model(s), {} build(s) observed, {}",
        r.models.len(),
        r.builds.len() as u64 + r.builds_unlisted,
        end_text(end)
    );
    let width = r.models.iter().map(|m| m.model.len()).max().unwrap_or(0);
    for m in &r.models {
        let _ = writeln!(out, "{:<width$}  {}", m.model, model_line(m));
        let _ = writeln!(
            out,
            "{:<width$}  persistent {} B, head {} B, temporary peak {} B; {} operators, {} build(s), {} inference(s) on build {}",
            "",
            m.persistent_bytes,
            m.head_bytes,
            m.temp_peak,
            m.operators.len(),
            m.builds,
            m.inferences,
            m.build
        );
        if let Some(b) = r.builds.iter().find(|b| b.index == m.build) {
            if let Some(f) = &b.failure {
                let _ = writeln!(out, "{:<width$}  failed: {f}", "");
            }
            if steps {
                build_steps(&mut out, b);
            }
        }
    }
    out
}

fn build_steps(out: &mut String, b: &ArenaBuild) {
    let _ = writeln!(out, "    per operator (bytes the tail moved):");
    for o in &b.operators {
        let _ = writeln!(
            out,
            "      {:>3} {:<28} {:>7} B  (init {}, prepare {}, {} allocations)",
            o.node, o.operator, o.bytes, o.init_bytes, o.prepare_bytes, o.count
        );
    }
    let _ = writeln!(out, "    per category:");
    for c in &b.categories {
        let _ = writeln!(
            out,
            "      {:<40} {:>7} B used, {:>7} B asked, {} allocations",
            c.category, c.used_bytes, c.requested_bytes, c.count
        );
    }
    for p in &b.peaks {
        let _ = writeln!(
            out,
            "    temporary peak ({}): {} B = {} B below the tail + {} B above the head, with {} B persistent",
            p.kind, p.bytes, p.below_tail, p.above_head, p.persistent_bytes
        );
    }
}
