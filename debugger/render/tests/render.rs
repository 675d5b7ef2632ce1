//! The renderers on synthetic audits: escaping of hostile names, sampled runs without events,
//! long runs decimated with their extremes kept, and the trace's shape.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;

use memlife_heap::HeapStatus;
use memlife_report::AuditReport;
use memlife_report::model::{
    CheckResult, EventKind, HeapSummary, PeakMethod, PeakSite, PhaseRecord, RunFacts, Site,
    SpanRecord, TraceEvent, Verdict, summarize,
};
use memlife_report::views::Timeline;

const SIZE: u64 = 98_304;

fn heap(used: u64) -> HeapSummary {
    HeapSummary {
        free: SIZE - used,
        used,
        largest_free: SIZE - used,
        largest_free_ratio: Some(1.0),
        free_blocks: 1,
        used_blocks: 1,
        min_ever_free: None,
        status: HeapStatus::Ok,
    }
}

fn phase(
    function: &str,
    call: u64,
    before: u64,
    after: u64,
    peak: u64,
    seq: (u64, u64),
) -> PhaseRecord {
    PhaseRecord {
        function: function.into(),
        alias: None,
        call,
        method: PeakMethod::Sample,
        before: heap(before),
        after: heap(after),
        delta_used: after as i64 - before as i64,
        peak_used: peak,
        peak_above_before: peak - before,
        peak_at: None,
        composition: Vec::new(),
        spans: vec![],
        allocs: 0,
        frees: 0,
        events: None,
        accounting_drift: 0,
        seq_begin: seq.0,
        seq_end: seq.1,
        cycle: None,
        ticks: None,
        scope: None,
    }
}

fn span(function: &str, arg: u64, before: u64, after: u64, seq: u64) -> SpanRecord {
    SpanRecord {
        function: function.into(),
        call: arg + 1,
        index: arg as usize,
        args: [0, arg, 0, 0],
        arg,
        label: None,
        before_used: before,
        after_used: after,
        delta: after as i64 - before as i64,
        peak_used: before.max(after),
        seq_begin: seq,
        seq_end: seq,
        damage: Vec::new(),
        ticks: None,
    }
}

fn report(phases: Vec<PhaseRecord>, events: Vec<TraceEvent>, message: &str) -> AuditReport {
    let calls = vec![CheckResult {
        name: "leak <b>".into(),
        verdict: Verdict::Fail,
        message: message.into(),
        line: Some(1),
    }];
    let mut aliases = BTreeMap::new();
    for (a, f) in [
        ("load", "model_load"),
        ("build", "graph_build"),
        ("run", "inference_run"),
        ("release", "model_release"),
    ] {
        aliases.insert(a.to_string(), f.to_string());
    }
    AuditReport {
        run: RunFacts {
            memlife: "0.1.0".into(),
            date: "2026-12-03T10:00:00Z".into(),
            elf: "fw/\"quoted\" & <odd>.elf".into(),
            allocator: "freertos-heap4".into(),
            target: "test".into(),
            board: Some("netduinoplus2".into()),
            script: "scripts/x.rhai".into(),
            heap_size: SIZE,
            ..Default::default()
        },
        method: PeakMethod::Sample,
        checks: summarize(&calls),
        check_calls: calls,
        totals: memlife_report::model::Totals::of(&events, &phases),
        cycles: 0,
        folded: None,
        phases,
        events,
        dumps: vec![],
        phase_aliases: aliases,
        labels: BTreeMap::from([(
            "op_init".to_string(),
            vec!["conv<1>".to_string(), "conv_b".to_string()],
        )]),
        components: BTreeMap::new(),
        heap_map: None,
        deferred: Vec::new(),
        deferred_unlisted: 0,
        injected: Vec::new(),
        tasks: Vec::new(),
        injected_unlisted: 0,
        models: Vec::new(),
        arenas: None,
        error: None,
        exit_code: 1,
    }
}

/// A sampled lifecycle: no events, spans only.
fn sampled() -> AuditReport {
    let mut build = phase("graph_build", 1, 30_000, 40_000, 40_000, (0, 0));
    build.spans = vec![
        span("op_init", 0, 30_000, 30_264, 0),
        span("op_init", 1, 30_264, 39_752, 0),
    ];
    let mut release = phase("model_release", 1, 40_000, 0, 40_000, (0, 0));
    release.peak_above_before = 0;
    report(
        vec![
            phase("model_load", 1, 0, 30_000, 62_000, (0, 0)),
            build,
            release,
        ],
        vec![],
        "lost <script>alert(1)</script> & more",
    )
}

#[test]
fn hostile_strings_are_escaped_everywhere() {
    let page = memlife_render::render_html(&sampled()).unwrap();
    assert!(!page.contains("<script"), "a check message became markup");
    assert!(page.contains("lost &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"));
    assert!(page.contains("<td>leak &lt;b&gt;</td>"));
    assert!(page.contains("fw/&quot;quoted&quot; &amp; &lt;odd&gt;.elf"));
    // A label drawn by plotters inside the stair chart is escaped too.
    assert!(!page.contains("conv<1>"));
    assert!(page.contains("conv&lt;1&gt;"));
}

#[test]
fn a_sampled_run_gets_a_step_per_span_boundary() {
    let r = sampled();
    let t = Timeline::build(&r);
    assert_eq!(t.phases.len(), 3);
    assert_eq!(t.spans.len(), 2);
    // Both spans opened and closed at one sequence number, yet each gets steps of its own, in
    // order, inside its phase.
    let (a, b) = (&t.spans[0], &t.spans[1]);
    assert!(a.x0 < a.x1 && a.x1 <= b.x0 && b.x0 < b.x1, "{a:?} {b:?}");
    assert!(t.phases[1].x0 < a.x0 && b.x1 < t.phases[1].x1);
    let steps: Vec<u64> = t.points.iter().map(|p| p.0).collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    // The stair chart names the largest step by its label; the peak is the load's.
    let page = memlife_render::render_html(&r).unwrap();
    assert!(page.contains("largest step: conv_b +9.3 KiB"));
    assert!(page.contains("peak 60.5 KiB in model_load (+60.5 KiB above entry)"));
}

fn event(seq: u64, used_after: u64) -> TraceEvent {
    TraceEvent {
        seq,
        kind: EventKind::Alloc,
        addr: 0x2000_0000 + seq * 8,
        size: 8,
        request: Some(4),
        used_after,
        phase: Some("inference_run".into()),
        span: None,
        site: Site {
            function: Some("f".into()),
            file: Some("a.c".into()),
            line: Some(3),
            chain: vec![],
        },
        task: None,
        tick: None,
    }
}

#[test]
fn long_runs_are_decimated_keeping_the_extremes() {
    let n = 30_000u64;
    // A saw tooth with one spike and one dip.
    let events: Vec<TraceEvent> = (0..n)
        .map(|i| {
            let used = match i {
                17_777 => 90_000,
                3_333 => 5,
                _ => 20_000 + (i % 50) * 10,
            };
            event(i, used)
        })
        .collect();
    let mut run = phase("inference_run", 1, 20_000, 20_000, 90_000, (0, n));
    run.peak_at = Some(PeakSite {
        seq: Some(17_777),
        span: None,
        span_index: None,
        span_arg1: None,
        span_arg: None,
        span_label: None,
        site: None,
    });
    let r = report(vec![run], events, "");
    let t = Timeline::build(&r);
    assert_eq!(t.points.len() as u64, n + 2);
    let d = t.decimated(4000);
    assert!(d.len() <= 4002 && d.len() > 1000, "{}", d.len());
    assert!(d.contains(&(t.step_of(17_777).unwrap(), 90_000)));
    assert!(d.contains(&(t.step_of(3_333).unwrap(), 5)));
    assert!(d.windows(2).all(|w| w[0].0 < w[1].0));
    let page = memlife_render::render_html(&r).unwrap();
    assert!(page.len() < 2_000_000, "page of {} bytes", page.len());
    assert!(page.contains("peak 87.9 KiB in inference_run"));
    // The trace keeps every event.
    let trace = memlife_render::trace_json(&r);
    let events = trace["traceEvents"].as_array().unwrap();
    assert_eq!(events.iter().filter(|e| e["ph"] == "i").count() as u64, n);
}

#[test]
fn an_audit_without_phases_still_renders() {
    let r = report(vec![], vec![], "");
    let page = memlife_render::render_html(&r).unwrap();
    assert!(page.contains("no phases or allocations were recorded"));
    assert!(page.contains("no build phase with spans was recorded"));
    assert!(page.contains("no release phase was recorded"));
    let trace = memlife_render::trace_json(&r);
    assert_eq!(trace["displayTimeUnit"], "ms");
}

#[test]
fn the_page_says_how_many_breakpoints_the_run_armed_of_the_targets() {
    let mut r = report(vec![], vec![], "");
    let page = memlife_render::render_html(&r).unwrap();
    assert!(
        page.contains("<dt>breakpoints</dt><dd>0 armed at most (the target has no limit)</dd>"),
        "{page}"
    );
    r.run.breakpoints = memlife_report::BreakpointUse {
        max_armed: 6,
        capacity: Some(6),
        planned: Some(5),
    };
    let page = memlife_render::render_html(&r).unwrap();
    assert!(
        page.contains("6 armed at most of the target&#39;s 6; 5 planned before the run"),
        "{page}"
    );
}

fn state(blocks: &[(u64, u64, bool)]) -> memlife_heap::HeapState {
    let used: u64 = blocks.iter().filter(|b| !b.2).map(|b| b.1).sum();
    memlife_heap::HeapState {
        allocator: "freertos-heap4",
        status: HeapStatus::Ok,
        heap_start: 0x1000,
        heap_size: 0x1000,
        total_free: 0x1000 - used,
        used,
        largest_free: 0,
        free_blocks: blocks.iter().filter(|b| b.2).count() as u64,
        used_blocks: blocks.iter().filter(|b| !b.2).count() as u64,
        blocks: blocks
            .iter()
            .map(|&(addr, size, free)| memlife_heap::Block {
                addr,
                size,
                free,
                unclaimed: false,
                alloc_size: None,
            })
            .collect(),
        ..memlife_heap::HeapState::empty("freertos-heap4")
    }
}

#[test]
fn leaked_blocks_are_new_since_the_baseline_or_share_a_leaking_site() {
    use memlife_report::model::HeapMap;
    let site = |f: &str| Site {
        function: Some(f.into()),
        file: Some("engine.c".into()),
        line: Some(51),
        chain: vec![],
    };
    // Baseline (first release): one block of the leaking site, one kept for good.
    let baseline = state(&[
        (0x1000, 0x100, false),
        (0x1100, 0x80, false),
        (0x1180, 0xe80, true),
    ]);
    // Last release: both, plus a new block from the leaking site.
    let last = state(&[
        (0x1000, 0x100, false),
        (0x1100, 0x80, false),
        (0x1180, 0x100, false),
        (0x1280, 0xd80, true),
    ]);
    let map = HeapMap::new("model_release#3".into(), &last, Some(&baseline), |addr| {
        Some(if addr == 0x1100 {
            site("kept_for_good")
        } else {
            site("build_graph")
        })
    });
    let leaked: Vec<u64> = map
        .blocks
        .iter()
        .filter(|b| b.leaked)
        .map(|b| b.addr)
        .collect();
    assert_eq!(leaked, [0x1000, 0x1180]);
    assert_eq!((map.leaked_blocks, map.leaked_bytes), (2, 0x200));
    assert!(map.blocks.iter().all(|b| !b.free || b.site.is_none()));
    // Without a baseline nothing is called a leak.
    let map = HeapMap::new("x".into(), &last, None, |_| None);
    assert_eq!(map.leaked_blocks, 0);
}

#[test]
fn the_heap_strip_holds_blocks_past_the_nominal_size() {
    use memlife_report::model::HeapMap;
    // A second region past heap_start + heap_size (heap_5): the strip grows to hold it.
    let s = state(&[
        (0x1000, 0x800, false),
        (0x1800, 0x800, true),
        (0x3000, 0x800, false),
    ]);
    let svg = memlife_render::heap_map_svg(&HeapMap::new("x".into(), &s, None, |_| None));
    for rect in svg.split("<rect class=\"block").skip(1) {
        let attr = |name: &str| -> f64 {
            rect.split(&format!(" {name}=\""))
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(attr("x") + attr("width") <= 950.01, "{rect}");
    }
    assert!(svg.contains("0x00003800"));
}

/// What every output holds while an audit runs (and after one that was killed): it renders in
/// every format and says the audit has not finished.
#[test]
fn an_unfinished_audit_renders_everywhere_and_says_so() {
    let ctx = memlife_report::RunContext {
        date: "2026-05-01T10:00:00Z".into(),
        started: std::time::Instant::now(),
        elf: "fw.elf".into(),
        target: "qemu-system-arm -M netduinoplus2".into(),
        board: Some("netduinoplus2".into()),
        script: "scripts/lifecycle.rhai".into(),
        method: PeakMethod::Trace,
        phase_aliases: BTreeMap::new(),
    };
    let report = AuditReport::unfinished(&ctx);
    let page = memlife_render::render_html(&report).unwrap();
    assert!(page.contains("has not finished"), "{page}");
    assert!(page.contains("ERROR"), "{page}");
    let junit = memlife_render::junit(&report);
    assert!(
        junit.contains("errors=\"1\"") && junit.contains("has not finished"),
        "{junit}"
    );
    let trace = memlife_render::trace_json(&report);
    assert!(trace["traceEvents"].is_array(), "{trace}");
}

fn alloc(seq: u64, addr: u64, size: u64, function: &str, line: u32) -> TraceEvent {
    TraceEvent {
        seq,
        kind: EventKind::Alloc,
        addr,
        size,
        request: Some(size - 8),
        used_after: 0,
        phase: Some("model_load".into()),
        span: None,
        site: Site {
            function: Some(function.into()),
            file: Some("loader.c".into()),
            line: Some(line),
            chain: vec![format!("{function} (loader.c:{line})")],
        },
        task: None,
        tick: None,
    }
}

/// A traced load whose peak holds a file buffer, weights and an arena: the page draws the bar
/// from the composition and the heap at the peak in the same colours, named kinds by the rule.
#[test]
fn the_peak_is_a_stacked_bar_and_the_heap_at_it_is_coloured_by_component() {
    let events = vec![
        alloc(0, 0x2000_0000, 16_032, "loader_load", 210),
        alloc(1, 0x2000_4000, 31_096, "parse_model", 188),
        alloc(2, 0x2000_c000, 4_104, "planner_plan", 110),
    ];
    let components = BTreeMap::from([
        ("loader.c:210".to_string(), "file buffer".to_string()),
        ("parse_model".to_string(), "weights".to_string()),
        ("planner_plan".to_string(), "tensor arena".to_string()),
    ]);
    let mut load = phase("model_load", 1, 0, 51_232, 51_232, (0, 3));
    load.method = PeakMethod::Trace;
    load.composition = memlife_report::views::composition::compose(&events, 0, 2, &components);
    load.peak_at = Some(PeakSite {
        seq: Some(2),
        span: None,
        span_index: None,
        span_arg1: None,
        span_arg: None,
        span_label: None,
        site: None,
    });
    let mut r = report(vec![load], events, "x");
    r.components = components;
    let page = memlife_render::render_html(&r).unwrap();
    let section = page
        .split("<section id=\"peak-composition\">")
        .nth(1)
        .unwrap()
        .split("</section>")
        .next()
        .unwrap();
    let weights = "data-phase=\"model_load#1\" data-component=\"weights\" data-bytes=\"31096\"";
    let file = "data-phase=\"model_load#1\" data-component=\"file buffer\" data-bytes=\"16032\"";
    let arena = "data-phase=\"model_load#1\" data-component=\"tensor arena\" data-bytes=\"4104\"";
    let (w, f, a) = (
        section.find(weights).unwrap(),
        section.find(file).unwrap(),
        section.find(arena).unwrap(),
    );
    assert!(w < f && f < a, "largest first");
    assert!(section.contains("data-total=\"51232\""));
    // The arena is orange by the rule; the map at the peak has the three blocks, each in its
    // segment's colour.
    assert!(section.contains(&format!("{arena} x=")));
    let fill_of = |attrs: &str| {
        let tag = section.split(attrs).nth(1).unwrap();
        tag.split("fill=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
    };
    assert_eq!(fill_of(arena), "#f28a1e");
    for (name, colour) in [
        ("weights", fill_of(weights)),
        ("file buffer", fill_of(file)),
        ("tensor arena", "#f28a1e"),
    ] {
        let block = format!("<rect class=\"block\" data-component=\"{name}\"");
        let tag = section
            .split(&block)
            .nth(1)
            .unwrap_or_else(|| panic!("{name}"));
        let fill = tag
            .split("fill=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(fill, colour, "{name}");
    }
    assert_ne!(fill_of(weights), fill_of(file));
}

/// Each check's verdict shows as the terminal's word in a span whose class is the JSON's name,
/// and the summary line says FAIL when a check failed (a skipped check counts as passed).
#[test]
fn verdicts_read_as_the_terminal_words_them() {
    let mut r = report(Vec::new(), Vec::new(), "lost 396 B");
    let calls = [
        ("leak", Verdict::Fail),
        ("peak", Verdict::Pass),
        ("fragmentation", Verdict::Warn),
        ("overlap", Verdict::Skip),
    ]
    .map(|(name, verdict)| CheckResult {
        name: name.into(),
        verdict,
        message: String::new(),
        line: Some(1),
    });
    r.checks = summarize(&calls);
    r.check_calls = calls.to_vec();
    let page = memlife_render::render_html(&r).unwrap();
    for word in [
        "<span class=\"verdict fail\">FAIL</span></td>",
        "<span class=\"verdict pass\">PASS</span></td>",
        "<span class=\"verdict warn\">WARN</span></td>",
        "<span class=\"verdict skip\">SKIP</span></td>",
        "<p class=\"summary\"><span class=\"verdict fail\">FAIL</span> 2 passed, 1 failed, 1 warnings;",
    ] {
        assert!(page.contains(word), "{word}");
    }
}

#[test]
fn an_rtos_heap_map_colours_used_blocks_by_their_task() {
    use memlife_report::model::HeapMap;
    let s = state(&[
        (0x1000, 0x100, false),
        (0x1100, 0x80, false),
        (0x1180, 0x80, false),
        (0x1200, 0xe00, true),
    ]);
    let mut map = HeapMap::new("model_release#3".into(), &s, None, |_| None);
    for (b, task) in map.blocks.iter_mut().zip(["Infer", "Logger", "Infer"]) {
        b.task = Some(task.into());
    }
    let mut r = report(vec![], vec![], "m");
    r.heap_map = Some(map.clone());
    let page = memlife_render::render_html(&r).unwrap();
    assert_eq!(page.matches("data-component=\"task Infer\"").count(), 2);
    assert_eq!(page.matches("data-component=\"task Logger\"").count(), 1);
    assert!(page.contains("in the colour of their task"), "the legend");
    // Without tasks the map stays coloured by component (here: none, the plain used colour).
    for b in &mut map.blocks {
        b.task = None;
    }
    r.heap_map = Some(map);
    let page = memlife_render::render_html(&r).unwrap();
    assert!(!page.contains("data-component=\"task "));
    assert!(!page.contains("in the colour of their task"));
}

#[test]
fn events_with_ticks_get_a_water_level_against_the_firmwares_clock() {
    let plain: Vec<TraceEvent> = (1..6).map(|s| event(s, 100 * s)).collect();
    let page = memlife_render::render_html(&report(vec![], plain.clone(), "m")).unwrap();
    assert!(!page.contains("against the firmware's clock"));
    let svgs = page.matches("<svg").count();
    let ticked: Vec<TraceEvent> = plain
        .into_iter()
        .zip([3, 3, 4, 8, 8])
        .map(|(e, t)| TraceEvent { tick: Some(t), ..e })
        .collect();
    let page = memlife_render::render_html(&report(vec![], ticked, "m")).unwrap();
    assert!(page.contains("against the firmware's clock"));
    assert!(page.contains("firmware ticks (xTickCount)"));
    assert_eq!(page.matches("<svg").count(), svgs + 1);
}
