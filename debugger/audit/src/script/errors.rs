//! The error-path area of the script API: make a chosen allocation fail (`t.fail_alloc`), run
//! the firmware through its handling (`t.after_failure()`), the failures made (`t.injected()`)
//! and a phase's allocation sites to choose from (`t.alloc_sites(phase)`).
//!
//! ```rhai
//! for s in t.alloc_sites("build") { t.fail_alloc(#{site: s.key, phase: "build"}); }
//! let r = t.after_failure();               // injected, end, ended, before, after, calls, leaks
//! check("no leak on the error path", r.leaks.len() == 0, r.ended);
//! ```

use std::rc::Rc;

use memlife_heap::HeapState;
use rhai::{Array, Dynamic, Engine, Map, NativeCallContext};

use super::convert::{insert_site, int, opt_int, opt_string};
use super::cycles::phase_map;
use super::handle::{RhaiResult, TargetHandle, err};
use super::heap::HeapHandle;
use crate::debugger::{AllocSite, Debugger, FailChoice, FailureEnd, FailureRun, Injected, Stopped};

/// Registers the error-path area.
pub(crate) fn register(engine: &mut Engine) {
    fn fail_alloc(ctx: &NativeCallContext, t: &TargetHandle, choice: FailChoice) -> RhaiResult<()> {
        t.try_with(ctx, |d| d.fail_alloc(choice))
    }
    engine.register_fn(
        "fail_alloc",
        |ctx: NativeCallContext, t: &mut TargetHandle, site: &str| -> RhaiResult<()> {
            let choice = FailChoice {
                site: Some(site.to_string()),
                phase: None,
                nth: 1,
            };
            fail_alloc(&ctx, t, choice)
        },
    );
    engine.register_fn(
        "fail_alloc",
        |ctx: NativeCallContext, t: &mut TargetHandle, site: &str, nth: i64| -> RhaiResult<()> {
            let choice = FailChoice {
                site: Some(site.to_string()),
                phase: None,
                nth: u64::try_from(nth).unwrap_or(0),
            };
            fail_alloc(&ctx, t, choice)
        },
    );
    engine.register_fn(
        "fail_alloc",
        |ctx: NativeCallContext, t: &mut TargetHandle, choice: Map| -> RhaiResult<()> {
            let choice = fail_choice(&choice).map_err(|e| err(&ctx, e))?;
            fail_alloc(&ctx, t, choice)
        },
    );
    engine.register_fn(
        "alloc_sites",
        |ctx: NativeCallContext, t: &mut TargetHandle, phase: &str| -> RhaiResult<Array> {
            let sites = t.try_with(&ctx, |d| d.alloc_sites(phase))?;
            Ok(sites.iter().map(alloc_site_map).collect())
        },
    );
    engine.register_fn(
        "after_failure",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Map> {
            t.begin_run(&ctx)?;
            let mut wait = t.try_with(&ctx, Debugger::failure_begin)?;
            let driven = t.drive(&ctx, |d| d.failure_step(&mut wait));
            // Its breakpoints go, also when it failed.
            let done = t.with(&ctx, |d| d.failure_finish(wait))?;
            driven?;
            let done = done.ok_or_else(|| err(&ctx, "after_failure did not end"))?;
            Ok(failure_map(&done))
        },
    );
    engine.register_fn(
        "injected",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            t.with(&ctx, |d| {
                d.injected().into_iter().map(injected_map).collect()
            })
        },
    );
}

/// An allocation memlife made fail (`t.injected()`): `site`, `file_line`, `chain`, `request`,
/// `phase` (`()` outside phases), `seq` (the events from this number on came after it),
/// `returned` (what the phase call returned, by its DWARF type: `"-12"`; `()` until it returned).
fn injected_map(i: &Injected) -> Dynamic {
    let mut m = Map::new();
    insert_site(&mut m, &i.site);
    m.insert("request".into(), Dynamic::from_int(int(i.request)));
    m.insert(
        "phase".into(),
        i.phase.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    m.insert("seq".into(), Dynamic::from_int(int(i.seq)));
    m.insert(
        "returned".into(),
        i.returned.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    Dynamic::from_map(m)
}

/// `t.fail_alloc(#{site: .., phase: .., nth: ..})`: the map's keys (any of site and phase, nth
/// 1 when left out); an unknown key or a wrong type is refused, naming it.
fn fail_choice(m: &Map) -> Result<FailChoice, String> {
    let mut choice = FailChoice {
        nth: 1,
        ..Default::default()
    };
    for (k, v) in m {
        match k.as_str() {
            "site" | "phase" => {
                let s = v
                    .clone()
                    .into_string()
                    .map_err(|t| format!("fail_alloc: `{k}` must be a string (a name), not {t}"))?;
                if k.as_str() == "site" {
                    choice.site = Some(s);
                } else {
                    choice.phase = Some(s);
                }
            }
            "nth" => {
                let n = v
                    .as_int()
                    .map_err(|t| format!("fail_alloc: `nth` must be an integer, not {t}"))?;
                choice.nth = u64::try_from(n).unwrap_or(0);
            }
            other => {
                return Err(format!(
                    "fail_alloc: unknown key `{other}` (the keys are site, phase and nth)"
                ));
            }
        }
    }
    Ok(choice)
}

/// A phase's allocation site (`t.alloc_sites(phase)`): `key` (what `fail_alloc` takes:
/// `file:line`, else the function), `site`, `function`, `file_line`, `chain`, `count`,
/// `request` (the first allocation's size asked for).
fn alloc_site_map(s: &AllocSite) -> Dynamic {
    let mut m = Map::new();
    m.insert("key".into(), s.key().into());
    insert_site(&mut m, &s.site);
    m.insert("function".into(), opt_string(s.site.function.as_ref()));
    m.insert("count".into(), Dynamic::from_int(int(s.count)));
    m.insert("request".into(), opt_int(s.request));
    Dynamic::from_map(m)
}

/// What `t.after_failure()` saw: `injected` (as `t.injected()` gives it, `()` when the chosen
/// allocation was never made), `end` (`next-cycle`, `release`, `exit`, `hang`, `fault`),
/// `ended` (one line), `status` and `during` (an exit's), `before` (the heap at the failed
/// call's entry) and `after` (when the handling ended; `()` when unknown), `calls` (the role
/// calls on the way, as `t.cycle()` lists them), `leaks` (traced blocks allocated since the
/// failed call began and still live at the end: `addr`, `size`, `site`, `file_line`, `chain`).
fn failure_map(r: &FailureRun) -> Map {
    let mut m = Map::new();
    m.insert(
        "injected".into(),
        r.injected.as_ref().map_or(Dynamic::UNIT, injected_map),
    );
    m.insert("end".into(), r.end.kind().into());
    m.insert("ended".into(), r.end.describe().into());
    let (status, during) = match &r.end {
        FailureEnd::Stopped(Stopped::Exit { status, during }) => (
            Dynamic::from_int(i64::from(*status)),
            opt_string(during.as_ref()),
        ),
        _ => (Dynamic::UNIT, Dynamic::UNIT),
    };
    m.insert("status".into(), status);
    m.insert("during".into(), during);
    let heap = |h: &Option<Rc<HeapState>>| {
        h.as_ref().map_or(Dynamic::UNIT, |h| {
            Dynamic::from(HeapHandle::from(Rc::clone(h)))
        })
    };
    m.insert("before".into(), heap(&r.before));
    m.insert("after".into(), heap(&r.after));
    let calls: Array = r
        .calls
        .iter()
        .map(|p| {
            let mut pm = phase_map(&p.record, Rc::clone(&p.before), Rc::clone(&p.after));
            pm.insert("role".into(), p.role.clone().into());
            Dynamic::from_map(pm)
        })
        .collect();
    m.insert("calls".into(), calls.into());
    let leaks: Array = r
        .leaks
        .iter()
        .map(|(addr, l)| {
            let mut lm = Map::new();
            lm.insert("addr".into(), Dynamic::from_int(int(*addr)));
            lm.insert("size".into(), Dynamic::from_int(int(l.size)));
            insert_site(&mut lm, &l.site);
            Dynamic::from_map(lm)
        })
        .collect();
    m.insert("leaks".into(), leaks.into());
    m
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::testing::{Rig, one_load};
    use super::*;

    fn map(pairs: &[(&str, Dynamic)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), v.clone()))
            .collect()
    }

    #[test]
    fn a_choice_map_names_what_is_wrong_in_it() {
        let c = fail_choice(&map(&[("site", "planner.c:110".into())])).unwrap();
        assert_eq!(
            (c.site.as_deref(), c.phase, c.nth),
            (Some("planner.c:110"), None, 1)
        );
        let c = fail_choice(&map(&[
            ("phase", "build".into()),
            ("nth", Dynamic::from_int(3)),
        ]))
        .unwrap();
        assert_eq!((c.phase.as_deref(), c.nth), (Some("build"), 3));
        let e = fail_choice(&map(&[("when", "now".into())])).unwrap_err();
        assert!(e.contains("unknown key `when`"), "{e}");
        let e = fail_choice(&map(&[("nth", "two".into())])).unwrap_err();
        assert!(e.contains("`nth` must be an integer"), "{e}");
        let e = fail_choice(&map(&[("site", Dynamic::from_int(1))])).unwrap_err();
        assert!(e.contains("`site` must be a string"), "{e}");
    }

    #[test]
    fn a_phase_gives_its_sites_and_an_empty_request_is_refused() {
        let mut rig = Rig::new(one_load(), &[register]);
        rig.phase("load").unwrap();
        let site: Map = rig.eval(r#"t.alloc_sites("load")[0]"#).unwrap();
        assert_eq!(
            (site["count"].as_int(), site["request"].as_int()),
            (Ok(1), Ok(32))
        );
        assert_eq!(site["function"].to_string(), "build_graph");
        assert_eq!(rig.eval::<i64>("t.injected().len()").unwrap(), 0);
        let e = rig.error(r#"t.fail_alloc("", 1)"#);
        assert!(e.contains("fail_alloc needs a site"), "{e}");
        // A site is checked against the ELF at once, not after a cycle that never makes it.
        let e = rig.error(r#"t.fail_alloc("plannr_plan")"#);
        assert!(
            e.contains("no function `plannr_plan`") && e.contains("did you mean `planner_plan`?"),
            "{e}"
        );
        let e = rig.error(r#"t.fail_alloc("*0x08000100")"#);
        assert!(e.contains("not an address"), "{e}");
        let e = rig.error(r#"t.fail_alloc(#{ site: "nowhere.c:10" })"#);
        assert!(
            e.contains("no code of the ELF comes from a file named nowhere.c"),
            "{e}"
        );
        let e = rig.error("t.after_failure()");
        assert!(e.contains("no allocation failure is armed"), "{e}");
        rig.eval::<()>(r#"t.fail_alloc("planner_plan")"#).unwrap();
        rig.eval::<()>(r#"t.fail_alloc("planner.c:110")"#).unwrap();
    }
}
