//! Conversions every area of the script API shares: figures as script integers (saturating: they
//! come from target RAM), optional values as `()`, JSON as maps, and an allocation site's
//! three keys.

use rhai::{Array, Dynamic, Map};

use crate::model::Site;

/// A figure as a script integer, saturated at `i64::MAX`.
pub(crate) fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// An optional figure; `()` when absent.
pub(crate) fn opt_int(v: Option<u64>) -> Dynamic {
    v.map_or(Dynamic::UNIT, |v| Dynamic::from_int(int(v)))
}

/// An optional ratio; `()` when absent.
pub(crate) fn opt_float(v: Option<f64>) -> Dynamic {
    v.map_or(Dynamic::UNIT, Dynamic::from_float)
}

/// An optional string; `()` when absent.
pub(crate) fn opt_string(v: Option<&String>) -> Dynamic {
    v.map_or(Dynamic::UNIT, |s| Dynamic::from(s.clone()))
}

/// Strings as a script array.
pub(crate) fn strings(v: &[String]) -> Dynamic {
    v.iter()
        .map(|s| Dynamic::from(s.clone()))
        .collect::<Array>()
        .into()
}

/// An allocation site's keys: `site` (`function (file:line)`), `file_line` (`()` when
/// unknown) and `chain` (the callers, innermost first).
pub(crate) fn insert_site(m: &mut Map, site: &Site) {
    m.insert("site".into(), site.to_string().into());
    m.insert(
        "file_line".into(),
        match (&site.file, site.line) {
            (Some(f), Some(l)) => format!("{f}:{l}").into(),
            _ => Dynamic::UNIT,
        },
    );
    m.insert("chain".into(), strings(&site.chain));
}

/// A JSON value as a script sees it (objects are maps).
pub(crate) fn json_to_dynamic(v: &serde_json::Value) -> Dynamic {
    match v {
        serde_json::Value::Null => Dynamic::UNIT,
        serde_json::Value::Bool(b) => Dynamic::from_bool(*b),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(Dynamic::from_int)
            .or_else(|| n.as_u64().map(|u| Dynamic::from_int(int(u))))
            .unwrap_or_else(|| Dynamic::from_float(n.as_f64().unwrap_or(0.0))),
        serde_json::Value::String(s) => s.clone().into(),
        serde_json::Value::Array(a) => a.iter().map(json_to_dynamic).collect::<Array>().into(),
        serde_json::Value::Object(o) => {
            let mut m = Map::new();
            for (k, v) in o {
                m.insert(k.as_str().into(), json_to_dynamic(v));
            }
            Dynamic::from_map(m)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_site_gives_its_three_keys() {
        let mut m = Map::new();
        insert_site(
            &mut m,
            &Site {
                function: Some("build_graph".into()),
                file: Some("engine.c".into()),
                line: Some(51),
                chain: vec!["build_graph (engine.c:51)".into(), "main".into()],
            },
        );
        assert_eq!(m["site"].to_string(), "build_graph (engine.c:51)");
        assert_eq!(m["file_line"].to_string(), "engine.c:51");
        assert_eq!(m["chain"].clone().into_array().unwrap().len(), 2);
        let mut m = Map::new();
        insert_site(&mut m, &Site::default());
        assert!(m["file_line"].is_unit());
    }

    #[test]
    fn figures_past_i64_saturate_and_json_numbers_keep_their_kind() {
        assert_eq!(int(u64::MAX), i64::MAX);
        let v = json_to_dynamic(&serde_json::json!({"a": 1, "b": 1.5, "c": null}));
        let m = v.cast::<Map>();
        assert_eq!(m["a"].as_int(), Ok(1));
        assert_eq!(m["b"].as_float(), Ok(1.5));
        assert!(m["c"].is_unit());
    }
}
