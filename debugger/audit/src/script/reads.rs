//! What a script reads of the allocation trace, told from its text before it runs: a script
//! that never asks for allocations is run without breakpoints in the allocator (the target
//! stops only at phase and span boundaries), and one that never asks for a requested size
//! stops once per allocation, at the allocator's return (see
//! [`crate::debugger::Debugger::plan_trace`]).
//!
//! The scan walks the compiled script (function bodies and closures included) and collects the
//! names it uses that need the trace: functions called (`t.leaks(..)`), properties read
//! (`p.peak_above`) and string constants, which catch a map indexed by name
//! (`p["composition"]`) and a function called by name (`call("events")`). A name built at run
//! time is not seen: `[trace] allocations = true` (or `requests = true`) in memlife.toml says so
//! instead. Scripts cannot import modules or `eval` (see `super::sandbox`), so the text is all
//! there is.

use std::collections::BTreeSet;

use rhai::{AST, ASTNode, Expr};

/// Functions whose results come from traced allocations: events, leaks with their sites, late
/// frees, buffer lifetimes, damaged blocks' sites, failure injection and its aftermath.
const ALLOCATION_FUNCTIONS: [&str; 10] = [
    "events",
    "leaks",
    "buffers",
    "buffer_overlaps",
    "deferred",
    "deferred_total",
    "damage",
    "fail_alloc",
    "alloc_sites",
    "after_failure",
];

/// Fields of phase and span records that traced allocations make exact: the peak, where it
/// was and what it held, the events counted, damaged blocks' sites.
const ALLOCATION_FIELDS: [&str; 7] = [
    "peak",
    "peak_above",
    "peak_at",
    "composition",
    "allocs",
    "frees",
    "damage",
];

/// Functions that need the allocator's entry: a failure is made there.
const REQUEST_FUNCTIONS: [&str; 1] = ["fail_alloc"];

/// Fields holding a requested size (a buffer's `request`, a part's `requested`).
const REQUEST_FIELDS: [&str; 2] = ["request", "requested"];

/// What a script reads of the trace: the names that need it, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptReads {
    /// Names that read traced allocations.
    pub allocations: BTreeSet<&'static str>,
    /// Names that read requested sizes (or need the allocator's entry).
    pub requests: BTreeSet<&'static str>,
}

impl ScriptReads {
    /// What `ast` reads.
    pub fn of(ast: &AST) -> Self {
        let mut reads = ScriptReads::default();
        ast.walk(&mut |path: &[ASTNode]| {
            if let Some(ASTNode::Expr(expr)) = path.last() {
                reads.note(expr);
            }
            true
        });
        reads
    }

    /// Notes the names `expr` uses.
    fn note(&mut self, expr: &Expr) {
        match expr {
            Expr::FnCall(call, _) | Expr::MethodCall(call, _) => {
                self.add(
                    call.name.as_str(),
                    &ALLOCATION_FUNCTIONS,
                    &REQUEST_FUNCTIONS,
                );
            }
            Expr::Property(prop, _) => {
                self.add(prop.2.as_str(), &ALLOCATION_FIELDS, &REQUEST_FIELDS);
            }
            Expr::StringConstant(s, _) => {
                self.add(s.as_str(), &ALLOCATION_FIELDS, &REQUEST_FIELDS);
                self.add(s.as_str(), &ALLOCATION_FUNCTIONS, &REQUEST_FUNCTIONS);
            }
            _ => {}
        }
    }

    /// Records `name` when it is one of `allocations` or `requests`.
    fn add(&mut self, name: &str, allocations: &[&'static str], requests: &[&'static str]) {
        if let Some(n) = allocations.iter().find(|n| **n == name) {
            self.allocations.insert(n);
        }
        if let Some(n) = requests.iter().find(|n| **n == name) {
            self.requests.insert(n);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn reads(source: &str) -> ScriptReads {
        let engine = rhai::Engine::new_raw();
        ScriptReads::of(&engine.compile(source).unwrap())
    }

    fn names(set: &BTreeSet<&'static str>) -> Vec<&'static str> {
        set.iter().copied().collect()
    }

    #[test]
    fn a_script_of_boundaries_and_heaps_reads_no_allocation() {
        let r = reads(
            r#"
            let t = target();
            let c = t.cycle();
            for p in c.calls { print(`${p.function}: ${p.delta} B, ${p.after.free} free`); }
            t.trace(false);
            check("requested size unknown", c.after.free > 0, "no peak here");
            "#,
        );
        assert_eq!(r, ScriptReads::default());
    }

    #[test]
    fn calls_fields_and_names_in_strings_are_seen_in_functions_and_closures() {
        let r = reads(
            r#"
            fn worst(calls) { let w = (); for p in calls { if w == () || p.peak_above > w.peak_above { w = p; } } w }
            let t = target();
            t.on_break("model_load", |t| print(t.leaks(t.heap(), t.heap()).len()));
            let p = worst(t.cycle().calls);
            print(p["composition"]);
            "#,
        );
        assert_eq!(
            names(&r.allocations),
            ["composition", "leaks", "peak_above"]
        );
        assert!(r.requests.is_empty());
    }

    #[test]
    fn requested_sizes_and_failure_injection_need_the_allocators_entry() {
        let r = reads(r#"let t = target(); for b in t.buffers() { print(b.request); }"#);
        assert_eq!(names(&r.allocations), ["buffers"]);
        assert_eq!(names(&r.requests), ["request"]);
        let r = reads(r#"let t = target(); t.fail_alloc(#{site: "x", n: 1});"#);
        assert_eq!(names(&r.requests), ["fail_alloc"]);
        let r = reads(r#"let x = call("events");"#);
        assert_eq!(names(&r.allocations), ["events"]);
    }

    #[test]
    fn the_bundled_scripts_read_what_their_checks_need() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts");
        let script = |name: &str| {
            let engine = crate::script::sandbox::engine(std::rc::Rc::new(|_: &str| {}));
            let source = std::fs::read_to_string(dir.join(name)).unwrap();
            ScriptReads::of(&engine.compile(&source).unwrap())
        };
        // lifecycle.rhai: traced peaks, buffers, leaks with sites; no requested size.
        let lifecycle = script("lifecycle.rhai");
        assert!(
            ["peak_above", "composition", "leaks", "buffers"]
                .iter()
                .all(|n| lifecycle.allocations.contains(n)),
            "{lifecycle:?}"
        );
        assert!(lifecycle.requests.is_empty(), "{lifecycle:?}");
        // leak.rhai: leaks with their sites.
        assert!(script("leak.rhai").allocations.contains("leaks"));
        // error-paths.rhai: failure injection.
        assert!(script("error-paths.rhai").requests.contains("fail_alloc"));
    }
}
