//! The target area of the script API: run control (`t.run_to`, `t.reset`, `t.on_break`) and
//! reading the firmware's memory through its symbols (`t.var`, `t.string`, `t.read_u32`,
//! `t.has_var`).
//!
//! ```rhai
//! t.on_break("op_init", |t| print(t.var("g_layer")));
//! t.run_to("model_release");
//! let tensors = t.var("g_tensors");        // structs are maps, arrays arrays
//! ```

use memlife_dwarf::value::{Value, read_c_string, read_variable};
use rhai::{Array, Dynamic, Engine, FnPtr, Map, NativeCallContext};

use super::convert::int;
use super::handle::{RhaiResult, TargetHandle, audit_err, err};
use crate::debugger::{Debugger, Goal};
use crate::error::Chain;

/// Registers the target area.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "run_to",
        |ctx: NativeCallContext, t: &mut TargetHandle, f: &str| run_to(&ctx, t, f, 1),
    );
    engine.register_fn(
        "run_to",
        |ctx: NativeCallContext, t: &mut TargetHandle, f: &str, n: i64| run_to(&ctx, t, f, n),
    );
    engine.register_fn(
        "reset",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<()> {
            t.no_run_control_in_hooks(&ctx)?;
            t.try_with(&ctx, Debugger::reset)
        },
    );
    engine.register_fn(
        "on_break",
        |ctx: NativeCallContext, t: &mut TargetHandle, symbol: &str, f: FnPtr| -> RhaiResult<()> {
            t.try_with(&ctx, |d| d.add_hook(symbol))?;
            t.state.0.borrow_mut().hooks.insert(symbol.to_string(), f);
            Ok(())
        },
    );
    engine.register_fn(
        "var",
        |ctx: NativeCallContext, t: &mut TargetHandle, name: &str| -> RhaiResult<Dynamic> {
            t.with(&ctx, |d| read_var(d, name))?
                .map_err(|e| err(&ctx, e))
        },
    );
    engine.register_fn(
        "has_var",
        |ctx: NativeCallContext, t: &mut TargetHandle, name: &str| {
            t.with(&ctx, |d| d.symbols().variable(name, &[]).is_some())
        },
    );
    engine.register_fn(
        "string",
        |ctx: NativeCallContext, t: &mut TargetHandle, addr: i64| -> RhaiResult<String> {
            t.with(&ctx, |d| read_string(d, addr as u64))?
                .map_err(|e| err(&ctx, e))
        },
    );
    engine.register_fn(
        "read_u32",
        |ctx: NativeCallContext, t: &mut TargetHandle, addr: i64| -> RhaiResult<i64> {
            t.with(&ctx, |d| d.target().as_memory().read_u32(addr as u64))?
                .map(i64::from)
                .map_err(|e| err(&ctx, Chain(&e)))
        },
    );
}

/// `t.run_to(function, hits)`: runs to the `hits`-th next entry of `function`, calling hooks.
fn run_to(ctx: &NativeCallContext, t: &TargetHandle, function: &str, hits: i64) -> RhaiResult<()> {
    t.begin_run(ctx)?;
    let remaining = u32::try_from(hits)
        .ok()
        .filter(|h| *h > 0)
        .ok_or_else(|| err(ctx, "the hit count must be at least 1"))?;
    let addr = t
        .with(ctx, |d| d.function(function))?
        .map_err(|e| audit_err(ctx, &e))?
        .entry;
    let mut goal = Goal::Entry {
        function: function.to_string(),
        addr,
        remaining,
    };
    t.drive(ctx, |d| d.run(&mut goal).map(Some))
}

/// A typed value as a script sees it: structs are maps, arrays are arrays, pointers integers,
/// enums the enumerator's name (or the number when none matches).
fn to_dynamic(v: &Value) -> Dynamic {
    match v {
        Value::Int(i) => Dynamic::from_int(*i),
        Value::UInt(u) => Dynamic::from_int(int(*u)),
        Value::Float(f) => Dynamic::from_float(*f),
        Value::Bool(b) => Dynamic::from_bool(*b),
        Value::Pointer(p) => Dynamic::from_int(int(*p)),
        Value::Enum { name: Some(n), .. } => n.clone().into(),
        Value::Enum { name: None, value } => Dynamic::from_int(*value),
        Value::Struct(fields) => {
            let mut m = Map::new();
            for (name, value) in fields {
                m.insert(name.as_str().into(), to_dynamic(value));
            }
            Dynamic::from_map(m)
        }
        Value::Array { elements, .. } => elements.iter().map(to_dynamic).collect::<Array>().into(),
        Value::Unreadable(why) => format!("<unreadable: {why}>").into(),
    }
}

/// `t.var(name)`.
fn read_var(d: &mut Debugger, name: &str) -> Result<Dynamic, String> {
    let symbols = d.symbols_rc();
    let value =
        read_variable(&symbols, d.target().as_memory(), name).map_err(|e| Chain(&e).to_string())?;
    Ok(to_dynamic(&value))
}

/// `t.string(addr)`: a NUL-terminated string of at most 256 bytes.
fn read_string(d: &mut Debugger, addr: u64) -> Result<String, String> {
    read_c_string(d.target().as_memory(), addr, 256)
        .ok_or_else(|| format!("no readable string at {addr:#010x}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::testing::{Rig, one_load};
    use super::*;
    use crate::debugger::tests::fake;

    #[test]
    fn memory_reads_and_run_control_errors_are_the_scripts_to_see() {
        let mut rig = Rig::new(one_load(), &[register]);
        let free: i64 = rig.eval(&format!("t.read_u32({})", fake::FREE)).unwrap();
        assert_eq!(free as u64, fake::HEAP_SIZE);
        assert!(!rig.eval::<bool>(r#"t.has_var("no_such_global")"#).unwrap());
        rig.eval::<()>(r#"t.on_break("model_load", |t| print("hook")); t.run_to("model_load");"#)
            .unwrap();
        assert_eq!(rig.printed(), "hook");
        let e = rig.error(r#"t.run_to("model_load", 0)"#);
        assert!(e.contains("the hit count must be at least 1"), "{e}");
        let e = rig.error(r#"t.run_to("model_lod")"#);
        assert!(e.contains("model_lod") && e.contains("model_load"), "{e}");
    }
}
