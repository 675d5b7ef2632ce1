//! The phases-and-cycles area of the script API: observing cycles (`t.cycle()`, `t.cycles(n)`,
//! `t.next_cycle()` and `t.stopped()` for a firmware that stops), running one phase
//! (`t.phase(name)`, deprecated), the roles this firmware has, the calls counted, the cycles by
//! model (`t.models()`), and phase and cycle records as maps.
//!
//! ```rhai
//! let c = t.cycle();                       // index, start, before, after, calls, exit
//! while t.next_cycle() != () {}            // () once the firmware exited, hung or faulted
//! if t.stopped() != () { warn("cycles", t.stopped().why); }
//! for run in c.phases("run") { print(run.peak_above); }
//! check("roles", t.roles().contains("load") && t.has_role("release"));
//! for m in t.models() { if m.leak != () { print(m.leak); } }  // alternating models
//! ```

use std::rc::Rc;

use memlife_heap::HeapState;
use rhai::{Array, Dynamic, Engine, Map, NativeCallContext};

use super::convert::{int, opt_int, opt_string};
use super::handle::{RhaiResult, TargetHandle, err};
use super::heap::HeapHandle;
use super::sandbox::MAX_ARRAY;
use super::spans::damage_map;
use super::trace::tensors_array;
use crate::debugger::{Cycle, Debugger, Stopped};
use crate::model::{ModelCycles, PhaseRecord};

/// Registers the phases-and-cycles area.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "phase",
        |ctx: NativeCallContext, t: &mut TargetHandle, name: &str| -> RhaiResult<Map> {
            t.begin_run(&ctx)?;
            if !std::mem::replace(&mut t.state.0.borrow_mut().warned_phase, true) {
                ::tracing::warn!(
                    "t.phase(\"{name}\") is deprecated: observe the lifecycle with t.cycles(n), which records every call of every role in the firmware's order (t.phase still works)"
                );
            }
            let mut run = t.try_with(&ctx, |d| d.phase_begin(name))?;
            t.drive(&ctx, |d| d.phase_step(&mut run))?;
            let (rec, before, after) = t.try_with(&ctx, Debugger::phase_finish)?;
            Ok(phase_map(&rec, before, after))
        },
    );
    engine.register_fn("cycle", |ctx: NativeCallContext, t: &mut TargetHandle| {
        one_cycle(&ctx, t)
    });
    engine.register_fn(
        "next_cycle",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Dynamic> {
            next_cycle(&ctx, t)
        },
    );
    engine.register_fn("stopped", |ctx: NativeCallContext, t: &mut TargetHandle| {
        t.with(&ctx, |d| {
            d.stopped().map_or(Dynamic::UNIT, |s| stopped_map(d, s))
        })
    });
    engine.register_fn(
        "cycles",
        |ctx: NativeCallContext, t: &mut TargetHandle, n: i64| -> RhaiResult<Array> {
            if !(0..=MAX_ARRAY as i64).contains(&n) {
                return Err(err(
                    &ctx,
                    format!("cycles({n}): the count must be 0 to {MAX_ARRAY}"),
                ));
            }
            (0..n)
                .map(|_| one_cycle(&ctx, t).map(Dynamic::from_map))
                .collect()
        },
    );
    engine.register_fn("phases", |cycle: &mut Map, role: &str| {
        cycle_phases(cycle, role)
    });
    register_roles(engine);
}

/// What the firmware has: its roles, the cycles' start, call counts.
fn register_roles(engine: &mut Engine) {
    engine.register_fn("roles", |ctx: NativeCallContext, t: &mut TargetHandle| {
        // The roles this firmware has, in lifecycle order.
        t.with(&ctx, |d| {
            d.present_roles()
                .into_iter()
                .map(|(r, _)| Dynamic::from(r))
                .collect::<Array>()
        })
    });
    engine.register_fn(
        "cycle_start",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<String> {
            // The role whose calls begin cycles.
            t.try_with(&ctx, |d| d.cycle_start_role())
        },
    );
    engine.register_fn(
        "has_role",
        |ctx: NativeCallContext, t: &mut TargetHandle, role: &str| {
            // A role the configuration maps (or the bundled firmware's default) to a function
            // this ELF has.
            t.with(&ctx, |d| {
                d.function(d.config().phase_function(role)).is_ok()
            })
        },
    );
    engine.register_fn(
        "phase_function",
        |ctx: NativeCallContext, t: &mut TargetHandle, alias: &str| {
            t.with(&ctx, |d| d.config().phase_function(alias).to_string())
        },
    );
    engine.register_fn(
        "calls",
        |ctx: NativeCallContext, t: &mut TargetHandle, f: &str| t.with(&ctx, |d| int(d.calls(f))),
    );
    engine.register_fn("models", |ctx: NativeCallContext, t: &mut TargetHandle| {
        // The cycles by model, where the firmware alternated between at least two.
        t.with(&ctx, |d| {
            let total = d.model_cycles();
            d.models()
                .iter()
                .map(|m| model_map(m, total))
                .collect::<Array>()
        })
    });
}

/// One model's cycles (`t.models()`): `name`, `key`, `cycles`, `first` and `last` (cycle
/// numbers), `every` (the spacing of its cycles when regular, else `()`), `when` (`every 3rd
/// cycle`, `1 of the 3 cycles`), `measured` (its cycles whose loss was measured), `lost` (free
/// bytes they lost in all), `most` and `least` (of one cycle), `leak` (`24 B per cycle of
/// micro_speech (every 3rd cycle)`, `()` when it lost nothing).
fn model_map(m: &ModelCycles, total: u64) -> Dynamic {
    let mut map = Map::new();
    map.insert("name".into(), m.name.clone().into());
    map.insert("key".into(), Dynamic::from_int(int(m.key)));
    map.insert("cycles".into(), Dynamic::from_int(int(m.cycles)));
    map.insert("first".into(), Dynamic::from_int(int(m.first_cycle)));
    map.insert("last".into(), Dynamic::from_int(int(m.last_cycle)));
    map.insert("every".into(), opt_int(m.every));
    map.insert("when".into(), m.when(total).into());
    map.insert("measured".into(), Dynamic::from_int(int(m.measured)));
    map.insert("lost".into(), Dynamic::from_int(m.lost));
    map.insert("most".into(), Dynamic::from_int(m.most));
    map.insert("least".into(), Dynamic::from_int(m.least));
    map.insert("leak".into(), opt_string(m.leak_text(total).as_ref()));
    Dynamic::from_map(map)
}

/// Observes one cycle; its breakpoints go also when it failed.
fn one_cycle(ctx: &NativeCallContext, t: &TargetHandle) -> RhaiResult<Map> {
    t.begin_run(ctx)?;
    let mut run = t.try_with(ctx, Debugger::cycle_begin)?;
    let driven = t.drive(ctx, |d| d.cycle_step(&mut run));
    // The cycle's breakpoints go, also when it failed.
    let cycle = t.with(ctx, |d| d.cycle_finish(run))?;
    driven?;
    let cycle = cycle.ok_or_else(|| err(ctx, "the cycle did not complete"))?;
    Ok(cycle_map(&cycle))
}

/// `t.next_cycle()`: the next cycle as `t.cycle()` gives it, or `()` once the firmware stopped
/// running its lifecycle (it exited, hung or faulted: `t.stopped()` says how), so that a
/// script judges the cycles it saw. Other errors (settings, the link) are errors still.
fn next_cycle(ctx: &NativeCallContext, t: &TargetHandle) -> RhaiResult<Dynamic> {
    if t.with(ctx, |d| d.stopped().is_some())? {
        return Ok(Dynamic::UNIT);
    }
    match one_cycle(ctx, t) {
        Ok(cycle) => Ok(Dynamic::from_map(cycle)),
        Err(_) if t.with(ctx, |d| d.stopped().is_some())? => Ok(Dynamic::UNIT),
        Err(e) => Err(e),
    }
}

/// How the firmware stopped (`t.stopped()`): `end` (`exit`, `hang`, `fault`), `why` (one
/// line), `status` and `during` (an exit's: its status, the phase open then), `clean` (an exit
/// with status 0 between phases, how a test build ends), `cycles` (cycles observed to their
/// end).
fn stopped_map(d: &Debugger, s: &Stopped) -> Dynamic {
    let mut m = Map::new();
    m.insert("end".into(), s.kind().into());
    m.insert("why".into(), s.describe().into());
    let (status, during) = match s {
        Stopped::Exit { status, during } => (
            Dynamic::from_int(i64::from(*status)),
            opt_string(during.as_ref()),
        ),
        _ => (Dynamic::UNIT, Dynamic::UNIT),
    };
    m.insert("status".into(), status);
    m.insert("during".into(), during);
    m.insert("clean".into(), s.is_clean().into());
    m.insert("cycles".into(), Dynamic::from_int(int(d.cycles_done())));
    Dynamic::from_map(m)
}

/// A phase record as scripts see it: `function`, `role`, `cycle`, `call`, `before` and `after`
/// (heaps), `delta`, `peak`, `peak_above`, `composition`, `allocs`, `frees`, `method`,
/// `peak_at`, `spans`.
pub(crate) fn phase_map(rec: &PhaseRecord, before: Rc<HeapState>, after: Rc<HeapState>) -> Map {
    let mut m = Map::new();
    m.insert("function".into(), rec.function.clone().into());
    m.insert("role".into(), opt_string(rec.alias.as_ref()));
    m.insert("cycle".into(), opt_int(rec.cycle));
    m.insert("call".into(), Dynamic::from_int(int(rec.call)));
    m.insert("before".into(), Dynamic::from(HeapHandle::from(before)));
    m.insert("after".into(), Dynamic::from(HeapHandle::from(after)));
    m.insert("delta".into(), Dynamic::from_int(rec.delta_used));
    m.insert("peak".into(), Dynamic::from_int(int(rec.peak_used)));
    m.insert(
        "peak_above".into(),
        Dynamic::from_int(int(rec.peak_above_before)),
    );
    m.insert(
        "composition".into(),
        Dynamic::from_array(
            rec.composition
                .iter()
                .map(|p| {
                    let mut pm = Map::new();
                    pm.insert("name".into(), p.name.clone().into());
                    pm.insert("bytes".into(), Dynamic::from_int(int(p.bytes)));
                    pm.insert("requested".into(), Dynamic::from_int(int(p.requested)));
                    pm.insert("blocks".into(), Dynamic::from_int(int(p.blocks)));
                    Dynamic::from_map(pm)
                })
                .collect(),
        ),
    );
    m.insert("allocs".into(), Dynamic::from_int(int(rec.allocs)));
    m.insert("frees".into(), Dynamic::from_int(int(rec.frees)));
    m.insert(
        "method".into(),
        format!("{:?}", rec.method).to_lowercase().into(),
    );
    m.insert(
        "peak_at".into(),
        match &rec.peak_at {
            None => Dynamic::UNIT,
            Some(p) => {
                let mut pm = Map::new();
                pm.insert(
                    "span".into(),
                    p.span.clone().map_or(Dynamic::UNIT, Into::into),
                );
                pm.insert("index".into(), opt_int(p.span_index.map(|i| i as u64)));
                pm.insert("arg".into(), opt_int(p.span_arg.or(p.span_arg1)));
                pm.insert("label".into(), opt_string(p.span_label.as_ref()));
                pm.insert(
                    "site".into(),
                    p.site
                        .as_ref()
                        .map_or(Dynamic::UNIT, |s| s.to_string().into()),
                );
                Dynamic::from_map(pm)
            }
        },
    );
    let spans: Array = rec
        .spans
        .iter()
        .map(|s| {
            let mut sm = Map::new();
            sm.insert("function".into(), s.function.clone().into());
            sm.insert("call".into(), Dynamic::from_int(int(s.call)));
            sm.insert("index".into(), Dynamic::from_int(s.index as i64));
            sm.insert("arg".into(), Dynamic::from_int(int(s.arg)));
            sm.insert("label".into(), opt_string(s.label.as_ref()));
            sm.insert("before".into(), Dynamic::from_int(int(s.before_used)));
            sm.insert("after".into(), Dynamic::from_int(int(s.after_used)));
            sm.insert("delta".into(), Dynamic::from_int(s.delta));
            sm.insert("peak".into(), Dynamic::from_int(int(s.peak_used)));
            sm.insert(
                "peak_above".into(),
                Dynamic::from_int(int(s.peak_used.saturating_sub(s.before_used))),
            );
            sm.insert(
                "damage".into(),
                s.damage.iter().map(damage_map).collect::<Array>().into(),
            );
            Dynamic::from_map(sm)
        })
        .collect();
    m.insert("spans".into(), spans.into());
    m
}

/// A cycle as scripts see it: `index`, `start` (the role that begins it), `before` and `after`
/// (heaps at its first call's entry and at the next cycle's), `calls` (phase maps in the
/// firmware's order, each with its `role`), `exit` (the status of an exit that ended it),
/// `model` (its model's name, where cycles are keyed by model).
fn cycle_map(c: &Cycle) -> Map {
    let mut m = Map::new();
    m.insert("index".into(), Dynamic::from_int(int(c.index)));
    m.insert("start".into(), c.start_role.clone().into());
    m.insert(
        "before".into(),
        Dynamic::from(HeapHandle::from(Rc::clone(&c.before))),
    );
    m.insert(
        "after".into(),
        Dynamic::from(HeapHandle::from(Rc::clone(&c.after))),
    );
    let calls: Array = c
        .calls
        .iter()
        .map(|p| {
            let mut pm = phase_map(&p.record, Rc::clone(&p.before), Rc::clone(&p.after));
            pm.insert("role".into(), p.role.clone().into());
            pm.insert(
                "tensors".into(),
                p.tensors
                    .as_ref()
                    .map_or(Dynamic::UNIT, |t| tensors_array(t).into()),
            );
            Dynamic::from_map(pm)
        })
        .collect();
    m.insert("calls".into(), calls.into());
    m.insert(
        "exit".into(),
        c.exit
            .map_or(Dynamic::UNIT, |s| Dynamic::from_int(i64::from(s))),
    );
    m.insert("model".into(), opt_string(c.model.as_ref()));
    m
}

/// `cycle.phases(role)`: the calls of one role in a cycle map, in order (empty when none).
fn cycle_phases(cycle: &Map, role: &str) -> Array {
    let Some(calls) = cycle.get("calls").and_then(|c| c.read_lock::<Array>()) else {
        return Array::new();
    };
    calls
        .iter()
        .filter(|p| {
            p.read_lock::<Map>()
                .and_then(|m| m.get("role").map(|r| r.to_string() == role))
                .unwrap_or(false)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::testing::{Rig, one_load};
    use super::*;
    use crate::debugger::tests::fake::{self, Firmware, STACK};

    #[test]
    fn a_cycle_is_a_map_of_its_calls_by_role() {
        let sym = fake::symbols();
        let mut fw = Firmware::new(&sym);
        fw.call("model_load", STACK, 0x0800_00c4, [0; 4]);
        fw.malloc(STACK - 0x20, 0x0800_01e0, fake::BLOCKS + 8, 16);
        fw.ret(0x0800_00c4, STACK, 0);
        fw.call("inference_run", STACK, 0x0800_00d0, [0; 4]);
        fw.ret(0x0800_00d0, STACK, 0);
        fw.call("model_load", STACK, 0x0800_00c4, [0; 4]);
        let mut rig = Rig::new(fw, &[super::super::heap::register, register]);
        let what: Array = rig
            .eval(r#"[t.roles().contains("load"), t.cycle_start(), t.has_role("release"), t.has_role("warmup"), t.phase_function("load")]"#)
            .unwrap();
        let what: Vec<String> = what.iter().map(ToString::to_string).collect();
        assert_eq!(what, ["true", "load", "true", "false", "model_load"]);
        let c: Map = rig.eval("let c = t.cycle(); c").unwrap();
        assert_eq!(
            (c["index"].as_int(), c["start"].to_string()),
            (Ok(1), "load".into())
        );
        assert!(c["exit"].is_unit());
        let calls = c["calls"].clone().into_array().unwrap();
        let load = calls[0].clone().cast::<Map>();
        assert_eq!(load["role"].to_string(), "load");
        assert_eq!(
            (
                load["delta"].as_int(),
                load["allocs"].as_int(),
                load["cycle"].as_int()
            ),
            (Ok(16), Ok(1), Ok(1))
        );
        let by_role: Array = rig
            .eval(r#"[c.phases("run").len(), c.phases("switch").len(), c.after.used - c.before.used]"#)
            .unwrap();
        let by_role: Vec<i64> = by_role.iter().map(|v| v.as_int().unwrap()).collect();
        assert_eq!(by_role, [1, 0, 16]);
        assert_eq!(rig.eval::<i64>(r#"t.calls("model_load")"#).unwrap(), 2);
    }

    #[test]
    fn next_cycle_gives_unit_once_the_firmware_exits_and_stopped_says_why() {
        let fw = crate::debugger::tests::lifecycle_ends::two_cycles_then_exit();
        let mut rig = Rig::new(fw, &[super::super::heap::register, register]);
        assert!(rig.value("t.stopped()").is_unit());
        let got: Array = rig
            .eval(
                r#"let n = 0; while t.next_cycle() != () { n += 1; }
                   let s = t.stopped(); [n, s.end, s.status, s.clean, s.cycles, s.why, t.next_cycle()]"#,
            )
            .unwrap();
        let got: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "2",
                "exit",
                "0",
                "true",
                "2",
                "the firmware exited with status 0",
                ""
            ]
        );
        // t.cycle() still says it plainly.
        let e = rig.error("t.cycle()");
        assert!(e.contains("the firmware exited after 2 cycles"), "{e}");
    }

    #[test]
    fn alternating_models_are_listed_with_each_ones_leak() {
        let fw = crate::debugger::tests::lifecycle_ends::alternating_models();
        let mut rig = Rig::new(fw, &[super::super::heap::register, register]);
        let got: Array = rig
            .eval(
                r#"let names = []; for i in 0..4 { names.push(t.next_cycle().model); }
                   let m = t.models(); [names, m.len(), m[1].leak, m[1].when, m[0].leak]"#,
            )
            .unwrap();
        let got: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                r#"["wake_word", "command_word", "wake_word", "command_word"]"#,
                "2",
                "24 B per cycle of command_word (every 2nd cycle)",
                "every 2nd cycle",
                ""
            ]
        );
    }

    #[test]
    fn a_count_of_cycles_out_of_range_is_refused() {
        let mut rig = Rig::new(one_load(), &[register]);
        let e = rig.error("t.cycles(-1)");
        assert!(e.contains("cycles(-1): the count must be 0 to"), "{e}");
    }
}
