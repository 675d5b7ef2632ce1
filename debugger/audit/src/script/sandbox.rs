//! The sandbox every audit script runs in, in one place: operation, call-depth, expression-depth
//! and size limits; a memory ceiling looked at as the script runs; Ctrl-C; no `eval`; no
//! modules from disk; and files written only under the output directory.

use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use rhai::{Dynamic, Engine};

/// Longest string a script may build (bytes).
pub const MAX_STRING: usize = 1 << 20;
/// Most elements of one array. Rhai re-measures an array after each change, so filling one
/// costs the square of its length: this bound keeps the worst case at a second or two.
pub const MAX_ARRAY: usize = 1 << 16;
/// Most entries of one object map.
pub const MAX_MAP: usize = 1 << 16;
/// Most memory a script may add to memlife's (resident bytes, checked as the script runs).
pub const MAX_MEMORY: u64 = 512 << 20;
/// Most operations a script may run: a script's own loop that never ends stops here (in
/// seconds); a loop over the target is bounded by the runs it asks for (`[budgets]
/// max_cycles`, see `super::handle`).
pub const MAX_OPERATIONS: u64 = 50_000_000;
/// Operations between two looks at the memory.
const MEMORY_CHECK_EVERY: u64 = 4096;

/// memlife's resident memory in bytes (Linux `/proc/self/statm`); `None` elsewhere.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages.saturating_mul(4096))
}

/// A sandboxed engine with no memlife API yet; `print` and `debug` go to `print`.
pub(crate) fn engine(print: Rc<dyn Fn(&str)>) -> Engine {
    let mut engine = Engine::new();
    engine
        .set_max_operations(MAX_OPERATIONS)
        .set_max_call_levels(32)
        .set_max_expr_depths(64, 32)
        .set_max_string_size(MAX_STRING)
        .set_max_array_size(MAX_ARRAY)
        .set_max_map_size(MAX_MAP)
        .set_module_resolver(rhai::module_resolvers::DummyModuleResolver::new());
    engine.disable_symbol("eval");
    // Ctrl-C also ends a script busy with its own loops, not only one waiting on the target.
    // The whole script's memory: Rhai bounds each value, not their sum (60,000 map entries of
    // 512 KB each are each within bounds), so the process's resident memory is looked at every
    // few thousand operations.
    let baseline = resident_bytes().unwrap_or(0);
    engine.on_progress(move |ops| {
        if memlife_core::interrupt::requested() {
            return Some(Dynamic::from("interrupted by the user"));
        }
        if ops % MEMORY_CHECK_EVERY == 0
            && resident_bytes().is_some_and(|now| now.saturating_sub(baseline) > MAX_MEMORY)
        {
            return Some(Dynamic::from(format!(
                "the script uses more than {} MiB of memory (the limit for a script)",
                MAX_MEMORY >> 20
            )));
        }
        None
    });
    // `var` is reserved in Rhai, but `t.var("g_tensors")` is the name gdb users expect for a typed
    // read: let the tokenizer hand it over as an identifier (a `var x = ...` still fails to parse).
    #[allow(deprecated)] // Rhai marks the token-mapper API volatile, not deprecated
    engine.on_parse_token(|token, _, _| match token {
        rhai::Token::Reserved(s) if s.as_str() == "var" => rhai::Token::Identifier(s),
        other => other,
    });
    let p = print.clone();
    engine.on_print(move |s| p(s));
    engine.on_debug(move |s, _, pos| print(&format!("[debug {pos}] {s}")));
    engine
}

/// What a value past the size limits is told, naming the limits and the usual cause in an
/// audit (every cycle held at once).
pub(crate) fn too_large(what: &str) -> String {
    format!(
        "{what} is larger than a script may hold (arrays {MAX_ARRAY} elements, maps {MAX_MAP} entries, strings {MAX_STRING} bytes, counted with everything nested in them): keep less, e.g. observe cycles one at a time with t.cycle() in a loop rather than t.cycles(n)"
    )
}

/// What a script past [`MAX_OPERATIONS`] is told.
pub(crate) fn too_many_operations() -> String {
    format!(
        "the script ran more than {MAX_OPERATIONS} operations, the limit for a script: a loop that never ends?"
    )
}

/// A path under the output directory; anything that could escape it is refused.
pub(crate) fn output_path(out_dir: &Path, rel: &str) -> Result<PathBuf, String> {
    let p = Path::new(rel);
    if rel.is_empty()
        || p.is_absolute()
        || p.components().any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(format!(
            "`{rel}`: scripts write only relative paths under the output directory"
        ));
    }
    Ok(out_dir.join(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_and_modules_are_refused_and_limits_hold() {
        let engine = engine(Rc::new(|_: &str| {}));
        assert!(engine.eval::<i64>(r#"eval("1")"#).is_err());
        assert!(engine.run(r#"import "x" as x;"#).is_err());
        assert!(engine.run("let a = []; a.pad(100000, 0);").is_err());
        assert!(engine.run("fn f(n) { f(n + 1) } f(0);").is_err());
        // `var` is a name here, so `t.var(..)` parses.
        assert!(engine.compile("let t = #{}; t.var").is_ok());
    }

    #[test]
    fn outputs_stay_under_the_output_directory() {
        let out = Path::new("/tmp/out");
        assert_eq!(
            output_path(out, "a/b.json"),
            Ok(PathBuf::from("/tmp/out/a/b.json"))
        );
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "./x"] {
            assert!(output_path(out, bad).is_err(), "{bad}");
        }
    }
}
