//! The spans area of the script API: names for the spans of a function (`t.label_spans`), the
//! span function a role's phase records (`t.span_function`), and damaged blocks with their
//! allocation sites (`t.damage(heap)`, also in every span record of a heap that checks its
//! blocks).
//!
//! ```rhai
//! t.label_spans("op_init", ["conv1", "dw1", "fc"]);
//! let f = t.span_function("build");          // "op_init"
//! for d in t.damage(t.heap()) { print(d.site); }
//! ```

use rhai::{Array, Dynamic, Engine, Map, NativeCallContext};

use super::convert::{int, opt_int, opt_string};
use super::handle::{RhaiResult, TargetHandle};
use super::heap::HeapHandle;
use crate::model::Damage;

/// Registers the spans area.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "label_spans",
        |ctx: NativeCallContext, t: &mut TargetHandle, function: &str, names: Array| {
            // Names are for reports only: anything that is not a string is shown as written.
            let names = names.iter().map(|n| n.to_string()).collect();
            t.with(&ctx, |d| d.set_labels(function, names))
        },
    );
    engine.register_fn(
        "span_function",
        |ctx: NativeCallContext, t: &mut TargetHandle, role: &str| {
            // The span function recorded inside a role's phase ("" when none is configured).
            t.with(&ctx, |d| {
                let c = d.config();
                c.span_of(c.phase_function(role))
                    .unwrap_or_default()
                    .to_string()
            })
        },
    );
    engine.register_fn(
        "damage",
        |ctx: NativeCallContext, t: &mut TargetHandle, h: HeapHandle| -> RhaiResult<Array> {
            t.with(&ctx, |d| d.damage(&h.0).iter().map(damage_map).collect())
        },
    );
}

/// A damaged block as scripts see it: `kind`, `block`, `alloc_size`, `site` (`()` when unknown),
/// `message`.
pub(crate) fn damage_map(d: &Damage) -> Dynamic {
    let mut m = Map::new();
    m.insert("kind".into(), d.kind.clone().into());
    m.insert("block".into(), Dynamic::from_int(int(d.block)));
    m.insert("alloc_size".into(), opt_int(d.alloc_size));
    m.insert("site".into(), opt_string(d.site.as_ref()));
    m.insert("message".into(), d.message.clone().into());
    Dynamic::from_map(m)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rhai::Array;

    use super::super::testing::{Rig, one_load};
    use super::*;

    #[test]
    fn labels_given_by_a_script_reach_the_report_and_spans_are_named_by_role() {
        let mut rig = Rig::new(one_load(), &[super::super::heap::register, register]);
        rig.eval::<()>(r#"t.label_spans("op_init", ["conv1", 2]);"#)
            .unwrap();
        let labels = rig.with(|d| d.labels()["op_init"].clone()).unwrap();
        assert_eq!(labels, vec!["conv1".to_string(), "2".into()]);
        let functions: Array = rig
            .eval(r#"[t.span_function("build"), t.span_function("load")]"#)
            .unwrap();
        assert_eq!(functions[0].to_string(), "op_init");
        assert_eq!(functions[1].to_string(), "", "no span function for load");
        assert_eq!(rig.eval::<i64>("t.damage(t.heap()).len()").unwrap(), 0);
    }

    #[test]
    fn a_damaged_block_without_a_known_site_says_so() {
        let m = damage_map(&Damage {
            kind: "canary".into(),
            block: 0x2000_1000,
            alloc_size: Some(24),
            site: None,
            message: "tail canary overwritten".into(),
        })
        .cast::<Map>();
        assert_eq!(m["block"].as_int(), Ok(0x2000_1000));
        assert_eq!(m["alloc_size"].as_int(), Ok(24));
        assert!(m["site"].is_unit());
    }
}
