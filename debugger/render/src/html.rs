//! The report page: one self-contained HTML file (inline CSS and SVG, no scripts, no fonts,
//! nothing fetched), readable offline and printable. Each chart is followed by its figures in
//! bytes, as in the JSON report.

use std::fmt::Write;

use memlife_report::AuditReport;
use memlife_report::model::{BreakpointUse, HeapMap, MapBlock, Verdict};
use memlife_report::views::composition::component_of;
use memlife_report::views::{SpanNames, Views};

use crate::charts::{self, css, role_color};
use crate::escape::text;
use crate::heapmap::{self, heap_map_svg_with, live_map_svg};
use crate::palette::Palette;
use crate::peakbar;
use crate::{Result, delta, kib};

const STYLE: &str = r#"
body { font-family: sans-serif; color: #222; margin: 24px auto; max-width: 1000px; padding: 0 12px; line-height: 1.4; }
h1 { font-size: 22px; margin-bottom: 4px; }
h3 { font-size: 15px; margin-bottom: 4px; }
h2 { font-size: 18px; border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }
section { break-inside: avoid; }
svg { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { font-weight: bold; padding: 1px 8px; border-radius: 3px; color: #fff; }
.pass { background: #2a9646; } .fail { background: #c82828; } .warn { background: #d08a00; }
.summary { font-size: 16px; }
.chip { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; border: 1px solid #888; }
.note { color: #555; font-size: 13px; }
details { margin: 6px 0; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 14px; }
dl.facts dt { font-weight: bold; } dl.facts dd { margin: 0; }
@media print { body { margin: 0; max-width: none; } h2 { break-after: avoid; } }
"#;

/// Renders the page.
pub fn render_html(report: &AuditReport) -> Result<String> {
    let views = Views::of(report, SpanNames::Readable);
    let mut h = String::with_capacity(256 * 1024);
    let script = std::path::Path::new(&report.run.script)
        .file_name()
        .map_or_else(
            || report.run.script.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>memlife audit: {} on {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        text(&script),
        text(&report.run.elf)
    );
    let _ = write!(
        h,
        "<header>\n<h1>memlife audit: {}</h1>\n<p class=\"note\">{} &middot; {} &middot; {}</p>\n",
        text(&script),
        text(&report.run.elf),
        text(&report.run.allocator),
        text(&report.run.date)
    );
    let failed = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .count();
    let warned = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Warn)
        .count();
    let passed = report.checks.len() - failed - warned;
    let (cls, word) = if report.error.is_some() {
        (Verdict::Fail.as_str(), "ERROR")
    } else if failed > 0 {
        (Verdict::Fail.as_str(), Verdict::Fail.word())
    } else {
        (Verdict::Pass.as_str(), Verdict::Pass.word())
    };
    let _ = write!(
        h,
        "<p class=\"summary\"><span class=\"verdict {cls}\">{word}</span> {passed} passed, {failed} failed, {warned} warnings; exit code {}</p>\n</header>\n",
        report.exit_code
    );

    // One palette for the page: a component has one colour in the bars, stairs and maps.
    let mut palette = Palette::new();
    checks(&mut h, report);
    curve(&mut h, report, &views)?;
    peaks(&mut h, report, &mut palette);
    stairs(&mut h, &views, &mut palette)?;
    layers(&mut h, &views)?;
    heap_map(&mut h, report, &mut palette);
    if let Some(arenas) = &report.arenas {
        crate::arena::sections_html(&mut h, arenas)?;
    }
    trend(&mut h, report, &views)?;
    folded(&mut h, report);
    facts(&mut h, report);
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

fn checks(h: &mut String, report: &AuditReport) {
    h.push_str("<section id=\"checks\">\n<h2>Checks</h2>\n<table>\n<tr><th>check</th><th>verdict</th><th>calls</th><th>message</th></tr>\n");
    for c in &report.checks {
        // The CSS class is the JSON's name (`pass`), the text the terminal's word (`PASS`).
        let (cls, word) = (c.verdict.as_str(), c.verdict.word());
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><span class=\"verdict {cls}\">{word}</span></td><td class=\"num\">{}{}</td><td>{}</td></tr>",
            text(&c.name),
            c.calls,
            if c.failures > 0 {
                format!(" ({} failed)", c.failures)
            } else {
                String::new()
            },
            text(&c.message)
        );
    }
    if let Some(e) = &report.error {
        let _ = writeln!(
            h,
            "<tr><td>script</td><td><span class=\"verdict fail\">ERROR</span></td><td></td><td>{}</td></tr>",
            text(&e.to_string())
        );
    }
    if report.checks.is_empty() && report.error.is_none() {
        h.push_str("<tr><td colspan=\"4\">the script recorded no checks</td></tr>\n");
    }
    h.push_str("</table>\n</section>\n");
}

fn curve(h: &mut String, report: &AuditReport, views: &Views<'_>) -> Result<()> {
    let t = &views.timeline;
    h.push_str("<section id=\"water-level\">\n<h2>Water level: used heap over the run</h2>\n");
    if t.phases.is_empty() && t.events.is_empty() {
        h.push_str("<p class=\"note\">no phases or allocations were recorded</p>\n</section>\n");
        return Ok(());
    }
    let mut roles: Vec<&str> = Vec::new();
    for p in &t.phases {
        if !roles.contains(&p.role.as_str()) {
            roles.push(&p.role);
        }
    }
    h.push_str("<p class=\"note\">phases:");
    for r in &roles {
        let _ = write!(
            h,
            "<span class=\"chip\" style=\"background:{}\"></span>{}",
            css(role_color(r)),
            text(r)
        );
    }
    h.push_str("</p>\n");
    h.push_str(&charts::curve::svg(report, views)?);
    if let Some(svg) = charts::ticks::svg(report, views)? {
        h.push_str("<h3>The same against the firmware's clock</h3>\n<p class=\"note\">used heap at each allocator event, its x the firmware's tick count (<code>xTickCount</code>) the event carries; phases as bands over the ticks they took</p>\n");
        h.push_str(&svg);
    }
    if let Some(p) = &views.peak {
        let _ = writeln!(
            h,
            "<p><b class=\"peak\">{}</b> ({} B used, in {}, the {} phase); heap capacity {} B; baseline {} B used at the first phase's entry.</p>",
            text(&charts::curve::peak_label(p)),
            p.used,
            text(&p.phase),
            text(&p.role),
            report.run.heap_size,
            report.phases.first().map_or(0, |f| f.before.used)
        );
    }
    let _ = writeln!(
        h,
        "<p class=\"note\">{} steps: one per allocator event and per phase and span boundary (the target has no clock memlife reads); {} allocator events{}{}.</p>",
        t.end,
        report.totals.events,
        report.folded.as_ref().map_or_else(String::new, |f| format!(
            ", of which the {} of the folded cycles {}&ndash;{} are not drawn: the curve goes straight from cycle {} to cycle {}",
            f.totals.events,
            f.first_cycle,
            f.last_cycle,
            f.first_cycle - 1,
            f.last_cycle + 1
        )),
        if t.points.len() > charts::curve::MAX_POINTS {
            format!(
                ", drawn from {} points decimated to about {} keeping every bucket's lowest and highest",
                t.points.len(),
                charts::curve::MAX_POINTS
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        h,
        "<details{}><summary>phases ({})</summary>\n<table>\n<tr><th>phase</th><th>role</th><th>used before</th><th>used after</th><th>delta</th><th>peak used</th><th>peak above entry</th><th>allocs</th><th>frees</th></tr>",
        if report.phases.len() <= 20 {
            " open"
        } else {
            ""
        },
        report.phases.len()
    );
    for s in &t.phases {
        let p = s.record;
        let _ = writeln!(
            h,
            "<tr><td>{}#{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            text(&p.function),
            p.call,
            text(&s.role),
            p.before.used,
            p.after.used,
            p.delta_used,
            p.peak_used,
            p.peak_above_before,
            p.allocs,
            p.frees
        );
    }
    h.push_str("</table>\n</details>\n</section>\n");
    Ok(())
}

/// Each phase peak as a stacked bar of its components, and the heap at the highest of them
/// with its blocks in their components' colours.
fn peaks(h: &mut String, report: &AuditReport, palette: &mut Palette) {
    h.push_str("<section id=\"peak-composition\">\n<h2>Peak composition: what each phase peak is made of</h2>\n");
    let bars = peakbar::bars(report);
    if bars.is_empty() {
        h.push_str("<p class=\"note\">no peak was broken down: that needs the trace method (<code>[trace] method = \"trace\"</code>)</p>\n</section>\n");
        return;
    }
    let _ = writeln!(
        h,
        "<p class=\"note\">the blocks each phase allocated and still held at its peak, {}, largest first; one scale for all bars. Hover a segment for its blocks.</p>",
        if report.components.is_empty() {
            "by allocation site (name them with <code>[components]</code> in memlife.toml)"
        } else {
            "by component (<code>[components]</code> in memlife.toml; unmapped blocks by allocation site)"
        }
    );
    h.push_str(&peakbar::svg(&bars, palette));
    // The legend: each component once, with its largest share of any peak.
    let mut names: Vec<(&str, u64)> = Vec::new();
    for b in &bars {
        for p in b.parts {
            match names.iter_mut().find(|(n, _)| *n == p.name) {
                Some(x) => x.1 = x.1.max(p.bytes),
                None => names.push((&p.name, p.bytes)),
            }
        }
    }
    h.push_str("<p class=\"note legend peak-legend\">");
    legend(h, palette, names.iter().map(|(n, b)| (*n, Some(*b))));
    h.push_str(" (the most of any peak)</p>\n");
    peak_map(h, report, palette);
    let _ = writeln!(
        h,
        "<details><summary>parts ({} peaks)</summary>\n<table>\n<tr><th>phase</th><th>component</th><th>bytes</th><th>requested</th><th>blocks</th></tr>",
        bars.len()
    );
    for b in &bars {
        for p in b.parts {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                text(&b.phase),
                text(&p.name),
                p.bytes,
                p.requested,
                p.blocks
            );
        }
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><b>sum</b></td><td class=\"num\"><b>{}</b></td><td colspan=\"2\">peak above entry {} B</td></tr>",
            text(&b.phase),
            b.total(),
            b.peak_above
        );
    }
    h.push_str("</table>\n</details>\n</section>\n");
}

/// The traced blocks live at the highest peak that has a composition, on the arena's strip.
fn peak_map(h: &mut String, report: &AuditReport, palette: &mut Palette) {
    let Some((p, seq)) = report
        .phases
        .iter()
        .filter(|p| !p.composition.is_empty())
        .filter_map(|p| Some((p, p.peak_at.as_ref()?.seq?)))
        .max_by_key(|(p, _)| p.peak_used)
    else {
        return;
    };
    let blocks: Vec<MapBlock> = report
        .live_at(seq)
        .into_iter()
        .map(|e| MapBlock {
            addr: e.addr,
            size: e.size,
            free: false,
            unclaimed: false,
            leaked: false,
            deferred: false,
            site: Some(e.site.clone()),
            task: e.task.clone(),
        })
        .collect();
    // The arena: the release map's when there is one, else from the lowest traced block.
    let (start, size) = report.heap_map.as_ref().map_or_else(
        || (blocks.first().map_or(0, |b| b.addr), report.run.heap_size),
        |m| (m.heap_start, m.heap_size),
    );
    let bytes: u64 = blocks.iter().map(|b| b.size).sum();
    let header = format!(
        "at the peak of {}#{}: {} traced blocks live, {} B (the heap's used: {} B)",
        p.function,
        p.call,
        blocks.len(),
        bytes,
        p.peak_used
    );
    let _ = writeln!(
        h,
        "<p class=\"note\">the heap at the highest of these peaks, to scale, blocks in their component's colour; between them: free, or allocated before the trace began.</p>"
    );
    h.push_str(&live_map_svg(
        &header,
        start,
        size,
        &blocks,
        &mut |b: &MapBlock| {
            let name = component_of(b.site.as_ref()?, &report.components);
            let colour = palette.colour(&name);
            Some((name, colour))
        },
    ));
}

/// Legend chips: each name in its colour, with its bytes when given.
fn legend<'a>(
    h: &mut String,
    palette: &mut Palette,
    names: impl Iterator<Item = (&'a str, Option<u64>)>,
) {
    for (name, bytes) in names {
        let _ = write!(
            h,
            "<span class=\"chip\" style=\"background:{}\"></span><span class=\"component\">{}</span>{}",
            palette.colour(name),
            text(name),
            bytes.map_or_else(String::new, |b| format!(" {b} B"))
        );
    }
}

fn stairs(h: &mut String, views: &Views<'_>, palette: &mut Palette) -> Result<()> {
    h.push_str(
        "<section id=\"build-stairs\">\n<h2>Graph build: resident memory per operator</h2>\n",
    );
    let Some(st) = &views.stairs else {
        h.push_str("<p class=\"note\">no build phase with spans was recorded (phase <code>build</code>, spans from <code>[spans]</code>)</p>\n</section>\n");
        return Ok(());
    };
    h.push_str(&charts::stairs::svg(st, palette)?);
    let mut names: Vec<&str> = Vec::new();
    let parts = st
        .steps
        .iter()
        .flat_map(|s| &s.parts)
        .chain(&st.total_parts);
    for p in parts {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    if !names.is_empty() {
        h.push_str("<p class=\"note legend stairs-legend\">each step by component:");
        legend(h, palette, names.iter().map(|n| (*n, None)));
        let _ = writeln!(
            h,
            "<span class=\"chip\" style=\"background:{}\"></span>not traced to a block (the step also freed older blocks, or the walk and the trace differ); red outline: the largest step</p>",
            css(role_color("build"))
        );
    }
    if let Some(big) = st.steps.get(st.largest) {
        let _ = writeln!(
            h,
            "<p>Largest step: <b class=\"largest-step\">{}</b> {} ({} B); the whole build keeps {} ({} B) in {}.</p>",
            text(&big.name),
            delta(big.delta),
            big.delta,
            kib(st.total.max(0) as u64),
            st.total,
            text(&st.phase)
        );
    }
    h.push_str("<details><summary>steps</summary>\n<table>\n<tr><th>operator</th><th>step (B)</th><th>resident after (B)</th><th>kept, by component (B)</th></tr>\n");
    for s in &st.steps {
        let parts: Vec<String> = s
            .parts
            .iter()
            .map(|p| format!("{} {}", text(&p.name), p.bytes))
            .collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{:+}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            text(&s.name),
            s.delta,
            s.resident,
            parts.join(", ")
        );
    }
    h.push_str("</table>\n</details>\n</section>\n");
    Ok(())
}

fn layers(h: &mut String, views: &Views<'_>) -> Result<()> {
    h.push_str("<section id=\"layers\">\n<h2>Inference: per-layer deltas</h2>\n");
    let Some(l) = &views.layers else {
        h.push_str("<p class=\"note\">no inference phase with spans was recorded (phase <code>run</code>)</p>\n</section>\n");
        return Ok(());
    };
    h.push_str(&charts::layers::svg(l)?);
    let _ = writeln!(
        h,
        "<p class=\"note\">solid bar: bytes the layer kept (red) or gave back (green); outline: its transient high above its entry.</p>\n<p>Reuse verdict: <b class=\"reuse\">{}</b>; inference peak {} B above entry in {}.</p>",
        text(&charts::layers::verdict(l)),
        l.peak_above,
        text(&l.phase)
    );
    h.push_str("<details><summary>layers</summary>\n<table>\n<tr><th>layer</th><th>delta (B)</th><th>high above entry (B)</th></tr>\n");
    for x in &l.layers {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{:+}</td><td class=\"num\">{}</td></tr>",
            text(&x.name),
            x.delta,
            x.peak_above
        );
    }
    h.push_str("</table>\n</details>\n</section>\n");
    Ok(())
}

/// The palette name of a task's colour (`task Logger`), apart from the components' names.
fn task_colour_name(task: &str) -> String {
    format!("task {task}")
}

/// The tasks the map's used blocks belong to, by palette name, in address order; empty when
/// the firmware has none.
fn map_tasks(map: &HeapMap) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in map
        .blocks
        .iter()
        .filter(|b| !b.free)
        .filter_map(|b| b.task.as_deref())
    {
        let name = task_colour_name(t);
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

fn heap_map(h: &mut String, report: &AuditReport, palette: &mut Palette) {
    h.push_str("<section id=\"heap-map\">\n<h2>Heap map after release</h2>\n");
    let Some(map) = &report.heap_map else {
        h.push_str("<p class=\"note\">no release phase was recorded</p>\n</section>\n");
        return;
    };
    let _ = writeln!(
        h,
        "<p class=\"note\">the arena from {:#010x}, {} B, to scale:<span class=\"chip\" style=\"background:{}\"></span>used (traced blocks in their component's colour)<span class=\"chip\" style=\"background:{}\"></span>free<span class=\"chip\" style=\"background:{}\"></span>leaked<span class=\"chip\" style=\"background:{}\"></span>never handed out. Hover a block for its address, size and allocation site.</p>",
        map.heap_start,
        map.heap_size,
        heapmap::USED,
        heapmap::FREE,
        heapmap::LEAKED,
        heapmap::UNCLAIMED
    );
    let tasks = map_tasks(map);
    if tasks.is_empty() {
        h.push_str(&heap_map_svg_with(map, &mut |b: &MapBlock| {
            let name = component_of(b.site.as_ref()?, &report.components);
            let colour = palette.colour(&name);
            Some((name, colour))
        }));
    } else {
        // An RTOS firmware: who holds the heap says more than what the blocks are for.
        h.push_str(&heap_map_svg_with(map, &mut |b: &MapBlock| {
            let name = task_colour_name(b.task.as_deref()?);
            let colour = palette.colour(&name);
            Some((name, colour))
        }));
        h.push_str("<p class=\"note\">used blocks in the colour of their task (the one that allocated them, else the one whose TCB or stack they hold): ");
        legend(h, palette, tasks.iter().map(|t| (t.as_str(), None)));
        h.push_str("</p>\n");
    }
    let ratio = map
        .summary
        .largest_free_ratio
        .map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
    let _ = writeln!(
        h,
        "<p>Largest free / total free = <b class=\"ratio\">{ratio}</b> ({} of {} B in {} free blocks) at {}.</p>",
        map.summary.largest_free,
        map.summary.free,
        map.summary.free_blocks,
        text(&map.at)
    );
    let leaked: Vec<_> = map.blocks.iter().filter(|b| b.leaked).collect();
    if leaked.is_empty() {
        h.push_str("<p>No block is left behind compared with the baseline.</p>\n");
    } else {
        let _ = writeln!(
            h,
            "<p class=\"note\">leaked: used after the last release and not at the baseline (the first release when the run released more than once, else the first phase's entry)</p>\n<table>\n<tr><th>address</th><th>size (B)</th><th>allocated at</th><th>call chain</th></tr>"
        );
        for b in leaked {
            let (site, chain) = match &b.site {
                Some(s) => (s.to_string(), s.chain.join(" <- ")),
                None => ("unknown (not traced)".to_string(), String::new()),
            };
            let _ = writeln!(
                h,
                "<tr class=\"leak\"><td>{:#010x}</td><td class=\"num\">{}</td><td class=\"site\">{}</td><td>{}</td></tr>",
                b.addr,
                b.size,
                text(&site),
                text(&chain)
            );
        }
        h.push_str("</table>\n");
    }
    deferred(h, report);
    h.push_str("</section>\n");
}

/// Late frees: blocks a cycle allocated and a later cycle freed, apart from the leaks.
fn deferred(h: &mut String, report: &AuditReport) {
    if report.deferred.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<p class=\"note\">deferred: allocated in one cycle and freed in a later one ({} block(s)); late frees, not leaks</p>\n<table id=\"deferred\">\n<tr><th>size (B)</th><th>allocated at</th><th>in</th><th>cycle</th><th>freed in</th><th>cycle</th><th>cycles lived</th></tr>",
        report.deferred.len() as u64 + report.deferred_unlisted
    );
    // A long run that defers a block every cycle: the first rows, and a count of the rest.
    const ROWS: usize = 100;
    for d in report.deferred.iter().take(ROWS) {
        let _ = writeln!(
            h,
            "<tr class=\"deferred\"><td class=\"num\">{}</td><td class=\"site\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            d.size,
            text(&d.site.to_string()),
            text(d.allocated_in.as_deref().unwrap_or("-")),
            d.allocated_cycle,
            text(d.freed_in.as_deref().unwrap_or("-")),
            d.freed_cycle,
            d.cycles
        );
    }
    let more = report.deferred.len().saturating_sub(ROWS) as u64 + report.deferred_unlisted;
    if more > 0 {
        let _ = writeln!(
            h,
            "<tr><td colspan=\"7\">and {more} more late frees (the JSON report lists the first 1000)</td></tr>"
        );
    }
    h.push_str("</table>\n");
}

fn trend(h: &mut String, report: &AuditReport, views: &Views<'_>) -> Result<()> {
    h.push_str("<section id=\"leak-trend\">\n<h2>Leak trend: free heap after each release</h2>\n");
    let Some(tr) = &views.trend else {
        h.push_str("<p class=\"note\">no release phase was recorded</p>\n</section>\n");
        return Ok(());
    };
    h.push_str(&charts::trend::svg(tr)?);
    let mut list: Vec<String> = tr.free.iter().map(u64::to_string).collect();
    if let Some(f) = &report.folded {
        // The kept releases before the folded cycles, then the folded range, then the rest.
        let lo = f.series.iter().map(|b| b.end_free_min).min().unwrap_or(0);
        let hi = f.series.iter().map(|b| b.end_free_max).max().unwrap_or(0);
        list.insert(
            tr.before_fold.min(list.len()),
            format!(
                "[cycles {}&ndash;{} folded: {lo}&ndash;{hi}]",
                f.first_cycle, f.last_cycle
            ),
        );
    }
    let _ = writeln!(
        h,
        "<p>Free after release: <span class=\"frees\">{}</span> B{}.</p>",
        list.join(" &rarr; "),
        if tr.leaking() {
            format!(
                "; <b>{} lost</b> from the first release to the last",
                delta(tr.lost)
            )
        } else {
            String::new()
        }
    );
    h.push_str("</section>\n");
    Ok(())
}

/// The cycles folded out of a long run: what they did, exactly, per phase function.
fn folded(h: &mut String, report: &AuditReport) {
    let Some(f) = &report.folded else { return };
    let t = &f.totals;
    let _ = writeln!(
        h,
        "<section id=\"folded\">\n<h2>Folded cycles {}&ndash;{}</h2>\n<p class=\"note\">a long run keeps its first and last cycles in full (<code>--keep-cycles</code>); the {} cycles between were folded: {} phase calls, {} allocator events ({} allocations, {} B; {} frees, {} B), counted exactly and included in every total, drawn in the leak trend, left out of the curve, the trace and the phase tables.</p>",
        f.first_cycle,
        f.last_cycle,
        f.last_cycle + 1 - f.first_cycle,
        t.phases,
        t.events,
        t.allocs,
        t.alloc_bytes,
        t.frees,
        t.free_bytes
    );
    h.push_str("<table>\n<tr><th>phase</th><th>calls</th><th>highest peak used</th><th>at call</th><th>largest peak above entry</th><th>delta used, summed</th><th>used after, lowest</th><th>highest</th><th>allocs</th><th>frees</th></tr>\n");
    for x in &f.functions {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            text(&x.function),
            x.calls,
            x.peak_used,
            x.peak_call,
            x.peak_above_before,
            x.delta_used,
            x.after_used_min,
            x.after_used_max,
            x.allocs,
            x.frees
        );
    }
    h.push_str("</table>\n</section>\n");
}

/// The breakpoints the run armed against what the target has: on a probe's six comparators an
/// audit arms lean (see the README's "Real boards").
fn breakpoint_use(b: &BreakpointUse) -> String {
    let mut s = format!("{} armed at most", b.max_armed);
    match b.capacity {
        Some(c) => {
            let _ = write!(s, " of the target's {c}");
        }
        None => s.push_str(" (the target has no limit)"),
    }
    if let Some(p) = b.planned {
        let _ = write!(s, "; {p} planned before the run");
    }
    s
}

fn facts(h: &mut String, report: &AuditReport) {
    let r = &report.run;
    h.push_str("<section id=\"run\">\n<h2>Run</h2>\n<dl class=\"facts\">\n");
    let rows: Vec<(&str, String)> = vec![
        ("firmware", r.elf.clone()),
        ("allocator", r.allocator.clone()),
        ("board", r.board.clone().unwrap_or_else(|| "-".into())),
        ("target", r.target.clone()),
        ("script", r.script.clone()),
        ("peak method", format!("{:?}", report.method).to_lowercase()),
        ("heap capacity", format!("{} B", r.heap_size)),
        (
            "phases, events",
            if report.folded.is_some() {
                format!(
                    "{}, {} ({}, {} kept in full)",
                    report.totals.phases,
                    report.totals.events,
                    report.phases.len(),
                    report.events.len()
                )
            } else {
                format!("{}, {}", report.phases.len(), report.events.len())
            },
        ),
        (
            "stops",
            format!(
                "{} ({} resumed on the host, {} stepped)",
                r.stops, r.emulated, r.stepped
            ),
        ),
        ("breakpoints", breakpoint_use(&r.breakpoints)),
        ("duration", format!("{:.1} s", r.seconds)),
        ("memlife", r.memlife.clone()),
        ("date", r.date.clone()),
    ];
    for (k, v) in rows {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", text(k), text(&v));
    }
    h.push_str("</dl>\n</section>\n");
}
