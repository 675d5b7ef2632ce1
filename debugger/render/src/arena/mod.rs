//! The report page's TensorFlow Lite Micro sections, one per model when the report has
//! `arenas`: its figures, the arena map, the persistent tail per operator, the tensor lifetime
//! chart with the overlaps listed, and the activation curve, each followed by its figures in
//! bytes as the JSON has them.
//!
//! A step of the tail takes the report's component colours (see [`crate::palette`]) by its
//! category:
//!
//! | category | kind | colour |
//! |---|---|---|
//! | `kOpData`, `kNodeAndRegistrationArray`, `kPersistentBufferData` | operator contexts (builtin parameters, node records, kernels' own state) | light green |
//! | `kPersistentTfLiteTensorQuantizationData` | weight re-layout (the weights' quantization parameters, per channel) | dark green |
//! | none: TFLM files a kernel's tables under `kPersistentBufferData` | lookup tables | yellow |
//! | `kTfLiteEvalTensorData`, `kTfLiteTensorVariableBufferData`, `arena-allocator` | pool (the arena's tensor records, variable tensors, its allocator object) | orange |
//! | `scratch-buffer-handle`, `unattributed`, `other`, steps past those listed | transient or unknown | grey |
//!
//! # Layout
//! - `categories`: a tail category's palette kind and colour (the table above).
//! - `charts`: the four drawings; `svg`: the hand-drawn canvas they share.
//! - `trace`: the arena's thread in the Perfetto trace.

mod categories;
mod charts;
mod svg;
pub mod trace;

use std::fmt::Write;

use memlife_report::model::{ArenaBuild, ArenaPlan, ArenaRecord, ModelArena};

use crate::Result;
use crate::escape::text;

pub use categories::category_colour;
pub use charts::Column;

/// A step's label in the stairs: `setup` for node -1, else `N OPERATOR`.
fn node_label(node: i64, operator: Option<&str>) -> String {
    match (node, operator) {
        (n, _) if n < 0 => "setup".to_string(),
        (n, Some(op)) => format!("{n} {op}"),
        (n, None) => format!("{n}"),
    }
}

/// The stairs' columns of a build: node -1 first (the interpreter's own allocations), then each
/// operator in node order; consecutive steps of one category merged; what the steps past those
/// listed took (the operator totals count them) added in grey.
pub fn columns(b: &ArenaBuild) -> Vec<Column> {
    let mut ops = b.operators.clone();
    ops.sort_by_key(|o| o.node);
    ops.into_iter()
        .map(|o| {
            let label = node_label(o.node, (o.node >= 0).then_some(o.operator.as_str()));
            let mut pieces: Vec<(String, u64, String)> = Vec::new();
            let mut counts: Vec<u64> = Vec::new();
            for s in b.steps.iter().filter(|s| s.node == o.node && !s.failed) {
                match pieces.last_mut() {
                    Some(last) if last.0 == s.category => {
                        last.1 = last.1.saturating_add(s.bytes);
                        if let Some(n) = counts.last_mut() {
                            *n += 1;
                        }
                    }
                    _ => {
                        pieces.push((s.category.clone(), s.bytes, String::new()));
                        counts.push(1);
                    }
                }
            }
            let listed = pieces.iter().map(|p| p.1).fold(0u64, u64::saturating_add);
            if o.bytes > listed {
                pieces.push(("unlisted".into(), o.bytes - listed, String::new()));
                counts.push(0);
            }
            for (p, n) in pieces.iter_mut().zip(counts) {
                p.2 = format!("{label}: {} {} B ({n} allocations)", p.0, p.1);
            }
            (label, pieces)
        })
        .collect()
}

/// The sections of every model of `arenas`.
pub fn sections_html(h: &mut String, arenas: &ArenaRecord) -> Result<()> {
    for (i, m) in arenas.models.iter().enumerate() {
        model_section(h, i, m, arenas.build_of(m))?;
    }
    if arenas.builds_unlisted > 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} builds past the first {} are not listed.</p>",
            arenas.builds_unlisted,
            arenas.builds.len()
        );
    }
    Ok(())
}

fn model_section(h: &mut String, i: usize, m: &ModelArena, b: Option<&ArenaBuild>) -> Result<()> {
    let _ = writeln!(
        h,
        "<section id=\"arena-{i}\" class=\"arena\" data-model=\"{}\">\n<h2>TFLM arena: <span class=\"arena-model\">{}</span></h2>",
        text(&m.model),
        text(&m.model)
    );
    figures(h, m);
    let _ = writeln!(h, "<h3>Arena map</h3>\n{}", charts::map(m, b));
    if let Some(b) = b {
        tail(h, b);
    }
    match b.and_then(|b| b.plan.as_ref()) {
        Some(plan) => plan_html(h, plan),
        None => h.push_str("<p class=\"note\">no tensor plan: it is read when <code>AllocateTensors</code> returns ok, for the builds listed</p>\n"),
    }
    h.push_str("</section>\n");
    Ok(())
}

/// The model's figures, one cell each, named by their JSON keys (`data-figure`).
fn figures(h: &mut String, m: &ModelArena) {
    let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    let spare = m.spare.map_or_else(|| "-".to_string(), |v| v.to_string());
    let needs = match m.needs {
        Some(n) if !m.exact => format!("&ge; {n}"),
        n => opt(n),
    };
    h.push_str("<table class=\"arena-figures\">\n<tr><th>arena (B)</th><th>persistent (B)</th><th>head (B)</th><th>temp peak (B)</th><th>smallest arena (B)</th><th>spare (B)</th><th>builds</th><th>inferences</th></tr>\n<tr>");
    for (key, v) in [
        ("arena_bytes", m.arena_bytes.to_string()),
        ("persistent_bytes", m.persistent_bytes.to_string()),
        ("head_bytes", m.head_bytes.to_string()),
        ("temp_peak", m.temp_peak.to_string()),
        ("needs", needs),
        ("spare", spare),
        ("builds", m.builds.to_string()),
        ("inferences", m.inferences.to_string()),
    ] {
        let _ = write!(h, "<td class=\"num\" data-figure=\"{key}\">{v}</td>");
    }
    h.push_str("</tr>\n</table>\n");
    if let Some(f) = &m.failure {
        let _ = writeln!(
            h,
            "<p><span class=\"verdict fail\">AllocateTensors failed</span> {}</p>",
            text(f)
        );
    }
}

/// The persistent tail per operator: the stairs, their legend and the operator totals.
fn tail(h: &mut String, b: &ArenaBuild) {
    h.push_str("<h3>Persistent tail per operator</h3>\n");
    let cols = columns(b);
    let Some(svg) = charts::stairs(&cols) else {
        h.push_str("<p class=\"note\">no persistent allocation was observed</p>\n");
        return;
    };
    h.push_str(&svg);
    h.push_str("<p class=\"note legend\">each step by category:");
    for c in &b.categories {
        let _ = write!(
            h,
            "<span class=\"chip\" style=\"background:{}\"></span>{} {} B",
            category_colour(&c.category),
            text(&c.category),
            c.used_bytes
        );
    }
    h.push_str("</p>\n<details><summary>operators</summary>\n<table>\n<tr><th>node</th><th>operator</th><th>init (B)</th><th>prepare (B)</th><th>all (B)</th><th>allocations</th></tr>\n");
    for o in &b.operators {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\" data-step=\"{}\">{}</td><td class=\"num\">{}</td></tr>",
            o.node,
            text(&o.operator),
            o.init_bytes,
            o.prepare_bytes,
            o.node,
            o.bytes,
            o.count
        );
    }
    h.push_str("</table>\n</details>\n");
}

/// The tensor lifetimes with their overlaps, and the activation curve.
fn plan_html(h: &mut String, plan: &ArenaPlan) {
    h.push_str("<h3>Tensor lifetimes in the head</h3>\n");
    match charts::lifetimes(plan) {
        Some(svg) => h.push_str(&svg),
        None => h.push_str("<p class=\"note\">no planned tensor</p>\n"),
    }
    let reuse = plan
        .reuse_factor
        .map_or_else(|| "-".to_string(), |r| format!("{r:.2}"));
    let _ = writeln!(
        h,
        "<p>Planned tensors and scratch buffers: <b data-figure=\"planned_bytes\">{}</b> B in a head of <b data-figure=\"plan_head_bytes\">{}</b> B; reuse factor <b data-figure=\"reuse_factor\">{reuse}</b>; most live at once: <b data-figure=\"peak_live_bytes\">{}</b> B.</p>",
        plan.planned_bytes, plan.head_bytes, plan.peak_live_bytes
    );
    if plan.overlaps_total > 0 {
        let _ = writeln!(
            h,
            "<p><span class=\"verdict fail\">{} overlapping pairs</span> buffers that share bytes while both are live (red):</p>\n<ul class=\"overlaps\">",
            plan.overlaps_total
        );
        for o in &plan.overlaps {
            let _ = writeln!(
                h,
                "<li class=\"overlap\"><b>{}</b> and <b>{}</b>: {}</li>",
                text(&o.a.name),
                text(&o.b.name),
                text(&o.message)
            );
        }
        h.push_str("</ul>\n");
    }
    if plan.tensors_unlisted > 0 || plan.operators_unlisted > 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} tensors and {} operators past those listed are not drawn.</p>",
            plan.tensors_unlisted, plan.operators_unlisted
        );
    }
    h.push_str("<h3>Activation bytes per operator</h3>\n");
    if let Some(svg) = charts::activation(plan) {
        h.push_str(&svg);
    }
    h.push_str("<details><summary>operators</summary>\n<table>\n<tr><th>operator</th><th>name</th><th>live (B)</th></tr>\n");
    for o in &plan.operators {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\" data-live=\"{}\">{}</td></tr>",
            o.index,
            text(&o.name),
            o.index,
            o.live_bytes
        );
    }
    h.push_str("</table>\n</details>\n");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::palette::{Kind, kind_colour};
    use memlife_report::model::{
        ArenaStep, BuildStatus, OperatorTotal, PlanBuffer, PlanOperator, PlanOverlap, PlanTensor,
    };

    fn tensor(index: u32, name: &str, offset: u64, bytes: u64, ops: (u32, u32)) -> PlanTensor {
        PlanTensor {
            index,
            name: Some(name.into()),
            type_name: "int8".into(),
            kind: "planned".into(),
            bytes: Some(bytes),
            offset: Some(offset),
            address: Some(0x2000_0000 + offset),
            first_op: Some(ops.0),
            last_op: Some(ops.1),
        }
    }

    fn side(t: &PlanTensor) -> PlanBuffer {
        PlanBuffer {
            what: "tensor".into(),
            index: t.index,
            name: t.label(),
            address: t.address.unwrap(),
            bytes: t.bytes.unwrap(),
            first_op: t.first_op.unwrap(),
            last_op: t.last_op.unwrap(),
        }
    }

    /// A model of three operators whose tensors 1 and 2 share 16 bytes while both are live at
    /// operator 1, when `overlap`; tensor 0 is apart.
    fn record(overlap: bool) -> ArenaRecord {
        let t0 = tensor(0, "input", 0, 64, (0, 0));
        let t1 = tensor(1, "dense<1>", 64, 32, (0, 1));
        let t2 = tensor(2, "dense_2", if overlap { 80 } else { 0 }, 32, (1, 2));
        let overlaps = if overlap {
            vec![PlanOverlap {
                a: side(&t1),
                b: side(&t2),
                start: 0x2000_0050,
                end: 0x2000_0060,
                first_op: 1,
                last_op: 1,
                message: "tensor 1 and tensor 2 share 16 bytes".into(),
            }]
        } else {
            Vec::new()
        };
        let plan = ArenaPlan {
            tensors: vec![t0, t1, t2],
            operators: (0..3)
                .map(|i| PlanOperator {
                    index: i,
                    name: "FULLY_CONNECTED".into(),
                    live_bytes: 64 + 32 * u64::from(i),
                })
                .collect(),
            planned_bytes: 128,
            head_bytes: 112,
            reuse_factor: Some(128.0 / 112.0),
            peak_live_bytes: 128,
            peak_operator: Some(2),
            overlaps_total: overlaps.len() as u64,
            overlaps,
            ..ArenaPlan::default()
        };
        let step = |node: i64, category: &str, bytes: u64| ArenaStep {
            node,
            operator: (node >= 0).then(|| "FULLY_CONNECTED".to_string()),
            stage: "init".into(),
            category: category.into(),
            bytes,
            ..ArenaStep::default()
        };
        ArenaRecord {
            generation: "2020".into(),
            models: vec![ModelArena {
                model: "g_<model>".into(),
                build: 1,
                builds: 1,
                arena_bytes: 2048,
                needs: Some(1888),
                exact: true,
                spare: Some(160),
                persistent_bytes: 700,
                head_bytes: 112,
                ..ModelArena::default()
            }],
            builds: vec![ArenaBuild {
                index: 1,
                model: "g_<model>".into(),
                status: BuildStatus::Ok,
                buffer_head: 0x2000_0000,
                buffer_tail: 0x2000_0800,
                steps: vec![
                    step(-1, "arena-allocator", 64),
                    step(-1, "kTfLiteEvalTensorData", 500),
                    step(0, "kOpData", 40),
                    step(0, "kOpData", 40),
                    step(1, "kPersistentTfLiteTensorQuantizationData", 56),
                ],
                operators: vec![
                    OperatorTotal {
                        node: 1,
                        operator: "FULLY_CONNECTED".into(),
                        bytes: 56,
                        count: 1,
                        ..OperatorTotal::default()
                    },
                    OperatorTotal {
                        node: -1,
                        operator: "setup".into(),
                        bytes: 564,
                        count: 2,
                        ..OperatorTotal::default()
                    },
                    OperatorTotal {
                        node: 0,
                        operator: "FULLY_CONNECTED".into(),
                        bytes: 80 + 24,
                        count: 3,
                        ..OperatorTotal::default()
                    },
                ],
                plan: Some(plan),
                ..ArenaBuild::default()
            }],
            builds_unlisted: 0,
        }
    }

    fn page(r: &ArenaRecord) -> String {
        let mut h = String::new();
        sections_html(&mut h, r).unwrap();
        h
    }

    #[test]
    fn two_tensors_overlapping_while_live_are_marked_and_named() {
        let h = page(&record(true));
        assert_eq!(
            h.matches("class=\"overlap\" data-tensor=").count(),
            2,
            "{h}"
        );
        assert!(h.contains("class=\"overlap\" data-tensor=\"1\""));
        assert!(h.contains("class=\"overlap\" data-tensor=\"2\""));
        assert!(!h.contains("class=\"overlap\" data-tensor=\"0\""));
        assert!(h.contains("<li class=\"overlap\"><b>dense&lt;1&gt;</b> and <b>dense_2</b>"));
        assert!(h.contains("1 overlapping pairs"));
        let clean = page(&record(false));
        assert!(!clean.contains("class=\"overlap\""), "{clean}");
    }

    #[test]
    fn a_model_section_has_its_figures_and_the_four_drawings() {
        let h = page(&record(false));
        assert!(h.contains("data-model=\"g_&lt;model&gt;\""));
        for (key, v) in [
            ("arena_bytes", "2048"),
            ("persistent_bytes", "700"),
            ("head_bytes", "112"),
            ("needs", "1888"),
            ("spare", "160"),
            ("planned_bytes", "128"),
            ("reuse_factor", "1.14"),
            ("peak_live_bytes", "128"),
        ] {
            assert!(
                h.contains(&format!("data-figure=\"{key}\">{v}<")),
                "{key} {h}"
            );
        }
        for class in [
            "arena-map",
            "arena-stairs",
            "arena-lifetimes",
            "arena-activation",
        ] {
            assert!(
                h.contains(&format!(
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\""
                )),
                "{class}"
            );
        }
        assert!(!h.contains("<script"));
    }

    #[test]
    fn the_stairs_run_setup_first_merge_a_category_and_colour_it_by_the_palette() {
        let r = record(false);
        let cols = columns(&r.builds[0]);
        let labels: Vec<&str> = cols.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(labels, ["setup", "0 FULLY_CONNECTED", "1 FULLY_CONNECTED"]);
        let op0: Vec<(&str, u64)> = cols[1].1.iter().map(|p| (p.0.as_str(), p.1)).collect();
        // Two kOpData steps merged; the 24 bytes the listed steps do not explain, unlisted.
        assert_eq!(op0, [("kOpData", 80), ("unlisted", 24)]);
        assert_eq!(category_colour("kOpData"), kind_colour(Kind::Context));
        assert_eq!(
            category_colour("kPersistentTfLiteTensorQuantizationData"),
            kind_colour(Kind::Relayout)
        );
        assert_eq!(category_colour("arena-allocator"), kind_colour(Kind::Pool));
        assert_eq!(
            category_colour("unattributed"),
            kind_colour(Kind::Transient)
        );
        let svg = charts::stairs(&cols).unwrap();
        assert!(svg.contains(&format!(
            "fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"0.5\" data-category=\"kOpData\"",
            kind_colour(Kind::Context)
        )));
    }

    #[test]
    fn hostile_figures_draw_without_panicking() {
        let mut r = record(true);
        r.models[0].persistent_bytes = u64::MAX;
        r.models[0].head_bytes = u64::MAX;
        if let Some(p) = r.builds[0].plan.as_mut() {
            p.tensors[0].offset = Some(u64::MAX);
            p.tensors[0].last_op = Some(u32::MAX - 1);
            p.overlaps[0].start = u64::MAX;
        }
        r.builds[0].buffer_tail = 0;
        let _ = page(&r);
    }
}
