//! The diff page (`memlife diff --report DIR`): both runs drawn together, one self-contained
//! HTML file like the audit report (inline CSS and SVG, no scripts, nothing fetched). From top to
//! bottom: the verdict and every changed figure, the two water-level curves overlaid, the build
//! stairs side by side, the per-layer deltas as paired bars, the heap maps after release one
//! above the other, then the allocation sites, the checks and what could not be aligned.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use memlife_diff::compare::Verdict;
use memlife_diff::{Diff, text as dtext};
use memlife_report::AuditReport;
use memlife_report::views::{Layers, SpanNames, Stairs, Timeline, signed_delta};
use plotters::style::RGBColor;

use crate::charts::{curve, layers as layer_charts, stairs as stair_charts};
use crate::escape::text;
use crate::heapmap::heap_map_svg;
use crate::{Result, kib, write_atomic};

/// BASE's colour in every chart.
pub const BASE: RGBColor = RGBColor(120, 130, 150);
/// HEAD's colour.
pub const HEAD: RGBColor = RGBColor(226, 112, 20);

const STYLE: &str = r#"
body { font-family: sans-serif; color: #222; margin: 24px auto; max-width: 1100px; padding: 0 12px; line-height: 1.4; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }
h3 { font-size: 15px; margin: 8px 0 2px; }
section { break-inside: avoid; }
svg { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.exceeded td { background: #fbe3e3; } tr.better td { background: #e6f4ea; }
.verdict { font-weight: bold; padding: 1px 8px; border-radius: 3px; color: #fff; }
.within { background: #2a9646; } .exceeded { background: #c82828; }
.summary { font-size: 16px; }
.chip { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; border: 1px solid #888; }
.note { color: #555; font-size: 13px; }
.pair { display: flex; gap: 12px; } .pair > div { flex: 1; min-width: 0; }
@media print { body { margin: 0; max-width: none; } h2 { break-after: avoid; } }
"#;

/// Writes `dir/index.html` (atomically) and returns its path.
pub fn write_diff_report(
    diff: &Diff,
    base: &AuditReport,
    head: &AuditReport,
    dir: &Path,
) -> Result<PathBuf> {
    let page = render_diff_html(diff, base, head)?;
    let path = dir.join("index.html");
    write_atomic(&path, page.as_bytes())?;
    Ok(path)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn legend(h: &mut String, diff: &Diff) {
    let _ = writeln!(
        h,
        "<p class=\"note\"><span class=\"chip\" style=\"background:{}\"></span>BASE {} ({})<span class=\"chip\" style=\"background:{}\"></span>HEAD {} ({})</p>",
        crate::charts::css(BASE),
        text(&diff.base.name),
        text(file_name(&diff.base.elf)),
        crate::charts::css(HEAD),
        text(&diff.head.name),
        text(file_name(&diff.head.elf))
    );
}

/// Renders the page.
pub fn render_diff_html(diff: &Diff, base: &AuditReport, head: &AuditReport) -> Result<String> {
    let mut h = String::with_capacity(256 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>memlife diff: {} vs {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        text(file_name(&diff.base.elf)),
        text(file_name(&diff.head.elf))
    );
    let _ = writeln!(
        h,
        "<header>\n<h1>memlife diff: {} &rarr; {}</h1>",
        text(&diff.base.name),
        text(&diff.head.name)
    );
    legend(&mut h, diff);
    let (cls, word) = match diff.verdict {
        Verdict::Within => ("within", "WITHIN"),
        Verdict::Exceeded => ("exceeded", "EXCEEDED"),
    };
    let _ = writeln!(
        h,
        "<p class=\"summary\"><span class=\"verdict {cls}\">{word}</span> {}; exit code {}</p>\n</header>",
        text(&dtext::headline(diff)),
        diff.exit_code()
    );
    changes(&mut h, diff);
    curve(&mut h, diff, base, head)?;
    stairs(&mut h, diff, base, head)?;
    layers(&mut h, diff, base, head)?;
    heap_maps(&mut h, diff, base, head);
    sites(&mut h, diff);
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

fn changes(h: &mut String, diff: &Diff) {
    h.push_str("<section id=\"changes\">\n<h2>Changed figures</h2>\n");
    if diff.changes.is_empty() {
        let _ = writeln!(
            h,
            "<p>No figure changed ({} compared).</p>\n</section>",
            diff.compared
        );
        return;
    }
    h.push_str("<table>\n<tr><th>figure</th><th>where</th><th>base</th><th>head</th><th>change</th><th>budget</th><th>at</th></tr>\n");
    for c in &diff.changes {
        let cls = if c.exceeded {
            " class=\"exceeded\""
        } else if !c.worse {
            " class=\"better\""
        } else {
            ""
        };
        let _ = writeln!(
            h,
            "<tr{cls}><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            text(&c.label),
            text(&c.place),
            text(&dtext::value(c.unit, c.base)),
            text(&dtext::value(c.unit, c.head)),
            text(&dtext::delta(c)),
            text(&dtext::budget(c)),
            text(&dtext::at(c))
        );
    }
    h.push_str("</table>\n</section>\n");
}

fn curve(h: &mut String, diff: &Diff, base: &AuditReport, head: &AuditReport) -> Result<()> {
    h.push_str("<section id=\"water-level\">\n<h2>Water level</h2>\n");
    legend(h, diff);
    let levels = |run| Timeline::build(run).levels().collect::<Vec<u64>>();
    let (cb, ch) = (levels(base), levels(head));
    let capacity = base.run.heap_size.max(head.run.heap_size);
    h.push_str(&curve::overlay_svg(
        &[(&cb, BASE, 3), (&ch, HEAD, 2)],
        capacity,
    )?);
    let peak = |c: &[u64]| c.iter().copied().max().unwrap_or(0);
    let _ = writeln!(
        h,
        "<p>Highest used: BASE <b>{} B</b>, HEAD <b>{} B</b> ({}); heap {} B.</p>\n</section>",
        peak(&cb),
        peak(&ch),
        text(&crate::delta(signed_delta(peak(&cb), peak(&ch)))),
        capacity
    );
    Ok(())
}

/// The stairs of a run's first build phase with spans, steps named as the diff aligns them;
/// heights only: the two builds compare step by step, each in one colour.
fn stairs_of(run: &AuditReport) -> Option<Stairs> {
    Stairs::of(run, SpanNames::Aligned).map(Stairs::without_parts)
}

fn stairs(h: &mut String, diff: &Diff, base: &AuditReport, head: &AuditReport) -> Result<()> {
    h.push_str(
        "<section id=\"build\">\n<h2>Graph build, side by side</h2>\n<div class=\"pair\">\n",
    );
    let (sb, sh) = (stairs_of(base), stairs_of(head));
    // One y scale for both, so the same step is as tall on either side.
    let range = sb
        .iter()
        .chain(&sh)
        .map(stair_charts::y_range)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    for (side, st, name) in [("BASE", sb, &diff.base.name), ("HEAD", sh, &diff.head.name)] {
        let _ = writeln!(h, "<div class=\"side\">\n<h3>{side}: {}</h3>", text(name));
        match (st, range) {
            (Some(st), Some(range)) => {
                h.push_str(&stair_charts::svg_in(
                    &st,
                    &mut crate::palette::Palette::new(),
                    range,
                )?);
                let _ = writeln!(
                    h,
                    "<p class=\"note\">resident after the build: {} B</p>",
                    st.total
                );
            }
            _ => h.push_str("<p class=\"note\">no build phase with per-operator spans</p>\n"),
        }
        h.push_str("</div>\n");
    }
    h.push_str("</div>\n</section>\n");
    Ok(())
}

fn layers(h: &mut String, diff: &Diff, base: &AuditReport, head: &AuditReport) -> Result<()> {
    h.push_str("<section id=\"layers\">\n<h2>Inference, per layer</h2>\n");
    let of = |run| Layers::of(run, SpanNames::Aligned);
    let pairs = layer_charts::pair(of(base).as_ref(), of(head).as_ref());
    if pairs.is_empty() {
        h.push_str("<p class=\"note\">no run phase with per-layer spans</p>\n</section>\n");
        return Ok(());
    }
    legend(h, diff);
    h.push_str(&layer_charts::paired_svg(&pairs, (BASE, HEAD))?);
    h.push_str("<table>\n<tr><th>layer</th><th>base kept</th><th>head kept</th><th>base transient</th><th>head transient</th></tr>\n");
    let cell = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |x| format!("{x} B"));
    for p in &pairs {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            text(&p.name),
            cell(p.base.map(|x| x.0)),
            cell(p.head.map(|x| x.0)),
            cell(p.base.map(|x| x.1 as i64)),
            cell(p.head.map(|x| x.1 as i64))
        );
    }
    h.push_str("</table>\n</section>\n");
    Ok(())
}

fn heap_maps(h: &mut String, diff: &Diff, base: &AuditReport, head: &AuditReport) {
    h.push_str("<section id=\"heap-maps\">\n<h2>Heap maps after release</h2>\n");
    for (side, run, name) in [
        ("BASE", base, &diff.base.name),
        ("HEAD", head, &diff.head.name),
    ] {
        let _ = writeln!(h, "<h3>{side}: {}</h3>", text(name));
        match &run.heap_map {
            Some(m) => {
                h.push_str(&heap_map_svg(m));
                let _ = writeln!(
                    h,
                    "<p class=\"note\">{} leaked block(s), {} B; largest free {} of {} free</p>",
                    m.leaked_blocks,
                    m.leaked_bytes,
                    kib(m.summary.largest_free),
                    kib(m.summary.free)
                );
            }
            None => h.push_str("<p class=\"note\">no release phase was recorded</p>\n"),
        }
    }
    h.push_str("</section>\n");
}

fn sites(h: &mut String, diff: &Diff) {
    h.push_str("<section id=\"sites\">\n<h2>Allocation sites</h2>\n");
    if diff.sites.is_empty() {
        h.push_str("<p>No allocation site is new, gone, moved or allocating differently.</p>\n");
    } else {
        h.push_str("<ul>\n");
        for s in &diff.sites {
            let _ = writeln!(h, "<li>{}</li>", text(&dtext::site_line(s)));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</section>\n<section id=\"checks\">\n<h2>Checks</h2>\n");
    if diff.checks.is_empty() {
        h.push_str("<p>No check changed its verdict.</p>\n");
    } else {
        h.push_str("<ul>\n");
        for c in &diff.checks {
            let _ = writeln!(
                h,
                "<li><b>{}</b>: {} &rarr; {}: {}</li>",
                text(&c.name),
                text(&c.base),
                text(&c.head),
                text(&c.message)
            );
        }
        h.push_str("</ul>\n");
    }
    for n in &diff.notes {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", text(n));
    }
    h.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn run(step: i64) -> AuditReport {
        let v = serde_json::json!({
            "run": {"elf": "fw<1>.elf", "heap_size": 4096},
            "phases": [
                {"function": "graph_build", "alias": "build", "before": {"used": 0}, "after": {"used": 300 + step}, "delta_used": 300 + step,
                 "spans": [{"function": "op_init", "index": 0, "args": [0, 0], "before_used": 0, "after_used": 100, "delta": 100, "peak_used": 100},
                           {"function": "op_init", "index": 1, "args": [0, 1], "before_used": 100, "after_used": 300 + step, "delta": 200 + step, "peak_used": 300 + step}]},
                {"function": "inference_run", "alias": "run", "before": {"used": 300}, "after": {"used": 300},
                 "spans": [{"function": "op_invoke", "index": 0, "args": [0, 0], "before_used": 300, "after_used": 300, "delta": 0, "peak_used": 340}]},
                {"function": "model_release", "alias": "release", "after": {"used": 0, "free": 4096, "largest_free": 4096, "largest_free_ratio": 1.0}}],
            "labels": {"op_init": ["conv_a", "conv_b"], "op_invoke": ["conv_a"]},
            "heap_map": {"at": "model_release#1", "heap_start": 4096, "heap_size": 4096, "summary": {"free": 4096, "status": "ok"},
                         "blocks": [{"addr": 4096, "size": 4096, "free": true}]}
        });
        AuditReport::from_value(v).unwrap()
    }

    #[test]
    fn huge_figures_from_a_damaged_report_do_not_panic() {
        let b = run(0);
        let mut h = run(0);
        h.phases[0].spans[1].after_used = u64::MAX;
        h.phases[1].spans[0].peak_used = u64::MAX;
        h.phases[1].spans[0].delta = i64::MIN;
        let d = memlife_diff::diff(&b, &h, ("b", "h"), &memlife_diff::Budgets::default()).unwrap();
        assert!(render_diff_html(&d, &b, &h).is_ok());
    }

    #[test]
    fn the_page_draws_both_runs_and_lists_every_change() {
        let (b, h) = (run(0), run(9000));
        let d = memlife_diff::diff(
            &b,
            &h,
            ("base<x>.json", "head.json"),
            &memlife_diff::Budgets::default(),
        )
        .unwrap();
        let page = render_diff_html(&d, &b, &h).unwrap();
        for id in [
            "changes",
            "water-level",
            "build",
            "layers",
            "heap-maps",
            "sites",
            "checks",
        ] {
            assert!(page.contains(&format!("<section id=\"{id}\">")), "{id}");
        }
        assert!(page.contains("base&lt;x&gt;.json") && !page.contains("base<x>"));
        assert!(
            page.contains("<tr class=\"exceeded\"><td>build step conv_b</td>"),
            "{page}"
        );
        // Two stair charts, the overlay, the paired bars, two heap maps.
        assert_eq!(page.matches("<svg").count(), 6);
        assert!(
            page.contains(&crate::charts::css(HEAD)) && page.contains(&crate::charts::css(BASE))
        );
        assert!(!page.contains("<script"));
    }

    /// The y axis labels (numbers) of an SVG chart, in order.
    fn numbers(svg: &str) -> Vec<String> {
        svg.split("</text>")
            .filter_map(|t| t.rsplit('>').next().map(str::trim))
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_two_stair_charts_share_one_y_scale() {
        // HEAD's second step is 9000 B taller: BASE's chart is drawn to HEAD's scale.
        let (b, h) = (run(0), run(9000));
        let d = memlife_diff::diff(&b, &h, ("b", "h"), &memlife_diff::Budgets::default()).unwrap();
        let page = render_diff_html(&d, &b, &h).unwrap();
        let build = page.split("<section id=\"build\">").nth(1).unwrap();
        let build = build.split("</section>").next().unwrap();
        let svgs: Vec<&str> = build.split("<svg").skip(1).collect();
        assert_eq!(svgs.len(), 2);
        let (yb, yh) = (numbers(svgs[0]), numbers(svgs[1]));
        assert!(yh.iter().any(|n| n == "8"), "{yh:?}");
        assert_eq!(yb, yh);
    }
}
