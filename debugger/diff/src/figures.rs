//! The figures the checks use, extracted from one audit report, each under a key that says
//! which phase (role, cycle, occurrence in the cycle) and which span or site it belongs to, so
//! that the same key names the same thing in two reports.

use std::collections::BTreeMap;

use serde::Serialize;

use memlife_report::AuditReport;
use memlife_report::model::{PhaseRecord, Site};

/// What a figure measures; its snake-case name is its `[diff]` budget table in memlife.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The highest used heap of the run.
    HeapPeak,
    /// The load phase's peak above its entry (load-peak).
    LoadPeak,
    /// The build phase's resident memory (build-step).
    BuildResident,
    /// One operator's build step (build-step).
    BuildStep,
    /// The run phase's peak above its entry (inference-peak).
    InferencePeak,
    /// One layer's delta: what it keeps (inference-peak).
    LayerDelta,
    /// One layer's transient high above its entry (inference-peak).
    LayerTransient,
    /// Another phase's peak above its entry (switch, custom roles).
    PhasePeak,
    /// Free bytes lost per cycle after release, in all and per allocation site (leak).
    LeakPerCycle,
    /// Largest free / total free after release (fragmentation).
    LargestFreeRatio,
    /// Largest free block after release (fragmentation).
    LargestFree,
    /// The allocator's low-water mark of free bytes.
    MinEverFree,
    /// Allocations traced in a phase.
    Allocs,
    /// Frees traced in a phase.
    Frees,
}

/// A figure's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// A number of allocator calls.
    Count,
    /// A ratio between 0 and 1.
    Ratio,
}

impl Unit {
    /// The `[diff]` key of the absolute limit in this unit.
    pub fn key(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
        }
    }
}

impl Kind {
    /// Every kind, in the order the tables list them.
    pub const ALL: [Kind; 14] = [
        Kind::HeapPeak,
        Kind::LoadPeak,
        Kind::BuildResident,
        Kind::BuildStep,
        Kind::InferencePeak,
        Kind::LayerDelta,
        Kind::LayerTransient,
        Kind::PhasePeak,
        Kind::LeakPerCycle,
        Kind::LargestFreeRatio,
        Kind::LargestFree,
        Kind::MinEverFree,
        Kind::Allocs,
        Kind::Frees,
    ];

    /// The `[diff.NAME]` table name.
    pub fn key(self) -> &'static str {
        match self {
            Kind::HeapPeak => "heap_peak",
            Kind::LoadPeak => "load_peak",
            Kind::BuildResident => "build_resident",
            Kind::BuildStep => "build_step",
            Kind::InferencePeak => "inference_peak",
            Kind::LayerDelta => "layer_delta",
            Kind::LayerTransient => "layer_transient",
            Kind::PhasePeak => "phase_peak",
            Kind::LeakPerCycle => "leak_per_cycle",
            Kind::LargestFreeRatio => "largest_free_ratio",
            Kind::LargestFree => "largest_free",
            Kind::MinEverFree => "min_ever_free",
            Kind::Allocs => "allocs",
            Kind::Frees => "frees",
        }
    }

    /// How people read it.
    pub fn title(self) -> &'static str {
        match self {
            Kind::HeapPeak => "heap peak",
            Kind::LoadPeak => "load peak",
            Kind::BuildResident => "build resident",
            Kind::BuildStep => "build step",
            Kind::InferencePeak => "inference peak",
            Kind::LayerDelta => "layer delta",
            Kind::LayerTransient => "layer transient high",
            Kind::PhasePeak => "phase peak",
            Kind::LeakPerCycle => "leak per cycle",
            Kind::LargestFreeRatio => "largest/total free after release",
            Kind::LargestFree => "largest free after release",
            Kind::MinEverFree => "minimum ever free",
            Kind::Allocs => "allocations",
            Kind::Frees => "frees",
        }
    }

    /// Its unit.
    pub fn unit(self) -> Unit {
        match self {
            Kind::Allocs | Kind::Frees => Unit::Count,
            Kind::LargestFreeRatio => Unit::Ratio,
            _ => Unit::Bytes,
        }
    }

    /// More is better (free memory, contiguity, and frees: fewer frees for as many
    /// allocations is memory kept); for every other figure less is.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Kind::LargestFreeRatio | Kind::LargestFree | Kind::MinEverFree | Kind::Frees
        )
    }

    /// The kind named `key`.
    pub fn from_key(key: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.key() == key)
    }
}

/// Which phase a figure belongs to: the k-th call of a role in a cycle.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PhaseKey {
    /// Role (`load`), or the function when it has none.
    pub role: String,
    /// Cycle, 1-based: a cycle starts each time the role of the report's first phase comes
    /// again.
    pub cycle: u32,
    /// Which call of the role in its cycle, 1-based (`run` twice around a switch).
    pub nth: u32,
}

/// A figure's identity: the same key in two reports names the same thing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FigureKey {
    /// What it measures.
    pub kind: Kind,
    /// Its phase, for per-phase figures.
    pub phase: Option<PhaseKey>,
    /// The span (operator or layer label, or `#index`) or allocation site it is about.
    pub item: Option<String>,
}

/// One figure of one report.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Its value in its unit.
    pub value: f64,
    /// The phase function (for display).
    pub function: Option<String>,
    /// Where it happened (the peak's site or layer), when known.
    pub at: Option<String>,
    /// The allocation site it is about (leak sites).
    pub site: Option<Site>,
}

/// Every figure of a report by key.
pub type Figures = BTreeMap<FigureKey, Figure>;

/// The item of a leak figure that is one model's (`model micro_speech`), where the others are
/// allocation sites.
pub const MODEL_ITEM: &str = "model ";

/// The key of every phase, in order. The cycle is the one the audit observed (`cycle` in the
/// report) when every phase has one; otherwise a cycle starts each time the role of the first
/// phase comes again.
pub fn phase_keys(run: &AuditReport) -> Vec<PhaseKey> {
    let first = run.phases.first().map(|p| run.role_of(p).to_string());
    let observed = run.phases.iter().all(|p| p.cycle.is_some_and(|c| c > 0));
    let mut cycle = 0u32;
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    run.phases
        .iter()
        .map(|p| {
            let role = run.role_of(p).to_string();
            let starts = match (observed, p.cycle) {
                (true, Some(c)) => u32::try_from(c).unwrap_or(u32::MAX) != cycle,
                _ => Some(&role) == first.as_ref(),
            };
            if starts {
                cycle = match (observed, p.cycle) {
                    (true, Some(c)) => u32::try_from(c).unwrap_or(u32::MAX),
                    _ => cycle.saturating_add(1),
                };
                seen.clear();
            }
            let nth = seen.entry(role.clone()).or_insert(0);
            *nth += 1;
            PhaseKey {
                role,
                cycle: cycle.max(1),
                nth: *nth,
            }
        })
        .collect()
}

/// The loose identity of an allocation site: function and callers' functions, lines left out,
/// so that a line that moved is still the same site.
pub fn site_key(site: &Site) -> String {
    let mut key = site.function.clone().unwrap_or_else(|| "??".into());
    for f in site.chain_functions().iter().skip(1) {
        key.push_str(" <- ");
        key.push_str(f);
    }
    key
}

fn peak_where(run: &AuditReport, phase: &PhaseRecord) -> Option<String> {
    let at = phase.peak_at.as_ref()?;
    if let (Some(span), Some(arg)) = (&at.span, at.span_arg1) {
        let function = span.split('#').next().unwrap_or(span);
        return Some(match run.script_label(function, arg) {
            Some(l) => format!("layer {l}"),
            None => format!("{function} #{arg}"),
        });
    }
    at.site.as_ref().map(Site::to_string)
}

/// Every figure of `run`.
pub fn extract(run: &AuditReport) -> Figures {
    let mut out = Figures::new();
    let keys = phase_keys(run);
    let mut put = |kind: Kind, phase: Option<&PhaseKey>, item: Option<String>, fig: Figure| {
        out.insert(
            FigureKey {
                kind,
                phase: phase.cloned(),
                item,
            },
            fig,
        );
    };
    let fig = |value: f64, p: &PhaseRecord, at: Option<String>| Figure {
        value,
        function: Some(p.function.clone()),
        at,
        site: None,
    };
    for (p, key) in run.phases.iter().zip(&keys) {
        let at = peak_where(run, p);
        match key.role.as_str() {
            "load" => put(
                Kind::LoadPeak,
                Some(key),
                None,
                fig(p.peak_above_before as f64, p, at),
            ),
            "build" => {
                put(
                    Kind::BuildResident,
                    Some(key),
                    None,
                    fig(p.delta_used as f64, p, None),
                );
                for (s, item) in p.spans.iter().zip(run.aligned_span_names(p)) {
                    put(
                        Kind::BuildStep,
                        Some(key),
                        Some(item),
                        fig(s.delta as f64, p, None),
                    );
                }
            }
            "run" => {
                put(
                    Kind::InferencePeak,
                    Some(key),
                    None,
                    fig(p.peak_above_before as f64, p, at),
                );
                for (s, item) in p.spans.iter().zip(run.aligned_span_names(p)) {
                    put(
                        Kind::LayerDelta,
                        Some(key),
                        Some(item.clone()),
                        fig(s.delta as f64, p, None),
                    );
                    put(
                        Kind::LayerTransient,
                        Some(key),
                        Some(item),
                        fig(s.transient() as f64, p, None),
                    );
                }
            }
            _ => put(
                Kind::PhasePeak,
                Some(key),
                None,
                fig(p.peak_above_before as f64, p, at),
            ),
        }
        if key.role == "release" {
            if let Some(r) = p.after.largest_free_ratio {
                put(Kind::LargestFreeRatio, Some(key), None, fig(r, p, None));
            }
            put(
                Kind::LargestFree,
                Some(key),
                None,
                fig(p.after.largest_free as f64, p, None),
            );
        }
        put(Kind::Allocs, Some(key), None, fig(p.allocs as f64, p, None));
        put(Kind::Frees, Some(key), None, fig(p.frees as f64, p, None));
    }
    // The first phase that reached the highest level: where the peak was reached, not a later
    // phase that entered at it (a release starts at the run's level).
    let top = run
        .phases
        .iter()
        .fold(None, |best: Option<&PhaseRecord>, p| match best {
            Some(b) if b.peak_used >= p.peak_used => Some(b),
            _ => Some(p),
        });
    if let Some(top) = top {
        let at = peak_where(run, top);
        put(
            Kind::HeapPeak,
            None,
            None,
            fig(top.peak_used as f64, top, at),
        );
    }
    let low = run
        .phases
        .iter()
        .flat_map(|p| [p.before.min_ever_free, p.after.min_ever_free])
        .flatten()
        // An allocator that has not initialised its heap reports 0: not a low-water mark.
        .filter(|&m| m > 0)
        .min();
    if let Some(m) = low {
        put(
            Kind::MinEverFree,
            None,
            None,
            Figure {
                value: m as f64,
                function: None,
                at: None,
                site: None,
            },
        );
    }
    leaks(run, &keys, &mut put);
    out
}

/// Free bytes after each cycle's release (or its last phase), the largest drop from one cycle
/// to the next, each model's largest loss where the firmware alternates between models, and
/// the leaked blocks of the heap map by site, per cycle.
fn leaks(
    run: &AuditReport,
    keys: &[PhaseKey],
    put: &mut impl FnMut(Kind, Option<&PhaseKey>, Option<String>, Figure),
) {
    let has_release = keys.iter().any(|k| k.role == "release");
    let mut free_after: BTreeMap<u32, u64> = BTreeMap::new();
    for (p, k) in run.phases.iter().zip(keys) {
        if !has_release || k.role == "release" {
            free_after.insert(k.cycle, p.after.free);
        }
    }
    let frees: Vec<(u32, u64)> = free_after.into_iter().collect();
    // A long run's folded cycles are missing between two kept ones: the drop across them is
    // spread over the cycles it spans, and the leaked blocks over every cycle of the run.
    let cycles = match &run.folded {
        Some(_) if run.cycles > 0 => run.cycles as f64,
        _ => frees.len().max(1) as f64,
    };
    let drop = frees
        .windows(2)
        .map(|w| w[0].1.saturating_sub(w[1].1) / u64::from(w[1].0.saturating_sub(w[0].0).max(1)))
        .max()
        .unwrap_or(0);
    let none = Figure {
        value: drop as f64,
        function: None,
        at: None,
        site: None,
    };
    put(Kind::LeakPerCycle, None, None, none);
    // A firmware that alternates between models: each model's largest loss in one of its
    // cycles, under `model NAME` (the report's `models`; absent with one model).
    for m in run.models.iter().filter(|m| m.measured > 0) {
        put(
            Kind::LeakPerCycle,
            None,
            Some(format!("{MODEL_ITEM}{}", m.name)),
            Figure {
                value: m.most.max(0) as f64,
                function: None,
                at: None,
                site: None,
            },
        );
    }
    let Some(map) = &run.heap_map else { return };
    let mut by_site: BTreeMap<String, (Site, u64)> = BTreeMap::new();
    for b in map.blocks.iter().filter(|b| b.leaked) {
        let site = b.site.clone().unwrap_or_default();
        let e = by_site.entry(site_key(&site)).or_insert((site, 0));
        e.1 = e.1.saturating_add(b.size);
    }
    for (key, (site, bytes)) in by_site {
        put(
            Kind::LeakPerCycle,
            None,
            Some(key),
            Figure {
                value: (bytes as f64 / cycles).round(),
                function: None,
                at: None,
                site: Some(site),
            },
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A small report: load, build with two operators, run with two layers, release; `cycles`
    /// times; `tweak` changes it before it is read.
    pub fn report(cycles: usize, tweak: impl Fn(&mut serde_json::Value)) -> AuditReport {
        let mut phases = Vec::new();
        for _ in 0..cycles {
            phases.push(serde_json::json!({"function": "model_load", "alias": "load", "peak_above_before": 1000,
                "after": {"free": 9000, "used": 1000}, "allocs": 3, "frees": 1,
                "peak_at": {"site": {"function": "parse_model", "file": "loader.c", "line": 163, "chain": []}}}));
            phases.push(serde_json::json!({"function": "graph_build", "alias": "build", "delta_used": 500, "allocs": 2,
                "spans": [
                    {"function": "op_init", "index": 0, "args": [0, 0, 0, 0], "before_used": 1000, "after_used": 1200, "delta": 200, "peak_used": 1200},
                    {"function": "op_init", "index": 1, "args": [0, 1, 0, 0], "before_used": 1200, "after_used": 1500, "delta": 300, "peak_used": 1500}]}));
            phases.push(serde_json::json!({"function": "inference_run", "alias": "run", "peak_above_before": 0,
                "spans": [
                    {"function": "op_invoke", "index": 0, "args": [0, 0, 0, 0], "before_used": 1500, "after_used": 1500, "delta": 0, "peak_used": 1500},
                    {"function": "op_invoke", "index": 1, "args": [0, 1, 0, 0], "before_used": 1500, "after_used": 1500, "delta": 0, "peak_used": 1500}]}));
            phases.push(serde_json::json!({"function": "model_release", "alias": "release",
                "after": {"free": 10000, "used": 0, "largest_free": 10000, "largest_free_ratio": 1.0}}));
        }
        let mut v = serde_json::json!({
            "run": {"elf": "fw.elf", "heap_size": 10000},
            "phases": phases,
            "events": [],
            "phase_aliases": {"load": "model_load", "build": "graph_build", "run": "inference_run", "release": "model_release"},
            "labels": {"op_init": ["conv_a", "conv_b"], "op_invoke": ["conv_a", "conv_b"]},
        });
        tweak(&mut v);
        AuditReport::from_value(v).unwrap()
    }

    fn key(kind: Kind, role: &str, cycle: u32, item: Option<&str>) -> FigureKey {
        FigureKey {
            kind,
            phase: Some(PhaseKey {
                role: role.into(),
                cycle,
                nth: 1,
            }),
            item: item.map(str::to_string),
        }
    }

    #[test]
    fn phases_get_role_cycle_and_occurrence() {
        let r = report(2, |v| {
            let extra = serde_json::json!({"function": "inference_run", "alias": "run"});
            v["phases"].as_array_mut().unwrap().insert(3, extra);
        });
        let keys = phase_keys(&r);
        assert_eq!(
            keys[2],
            PhaseKey {
                role: "run".into(),
                cycle: 1,
                nth: 1
            }
        );
        assert_eq!(
            keys[3],
            PhaseKey {
                role: "run".into(),
                cycle: 1,
                nth: 2
            }
        );
        assert_eq!(
            keys[5],
            PhaseKey {
                role: "load".into(),
                cycle: 2,
                nth: 1
            }
        );
    }

    #[test]
    fn the_cycles_the_audit_observed_win() {
        // The audit says the first cycle ended before the second load (a warm-up load, say).
        let r = report(2, |v| {
            for (i, c) in [1, 1, 1, 2, 2, 2, 2, 3].iter().enumerate() {
                v["phases"][i]["cycle"] = (*c).into();
            }
        });
        let cycles: Vec<u32> = phase_keys(&r).iter().map(|k| k.cycle).collect();
        assert_eq!(cycles, [1, 1, 1, 2, 2, 2, 2, 3]);
        assert_eq!(
            phase_keys(&r)[3],
            PhaseKey {
                role: "release".into(),
                cycle: 2,
                nth: 1
            }
        );
    }

    #[test]
    fn spans_are_named_by_label_or_by_position() {
        let r = report(1, |_| {});
        let f = extract(&r);
        assert_eq!(
            f[&key(Kind::BuildStep, "build", 1, Some("conv_b"))].value,
            300.0
        );
        let r = report(1, |v| {
            v["labels"] = serde_json::json!({});
        });
        let f = extract(&r);
        assert_eq!(
            f[&key(Kind::BuildStep, "build", 1, Some("#1"))].value,
            300.0
        );
        assert_eq!(
            f[&key(Kind::LoadPeak, "load", 1, None)].at.as_deref(),
            Some("parse_model (loader.c:163)")
        );
    }

    #[test]
    fn the_heap_peak_is_where_the_level_was_first_reached() {
        let r = report(1, |v| {
            v["phases"][1]["peak_used"] = 1500.into();
            v["phases"][3]["peak_used"] = 1500.into();
        });
        let f = extract(&r);
        let peak = &f[&FigureKey {
            kind: Kind::HeapPeak,
            phase: None,
            item: None,
        }];
        assert_eq!(
            (peak.value, peak.function.as_deref()),
            (1500.0, Some("graph_build"))
        );
    }

    #[test]
    fn a_long_runs_folded_cycles_spread_its_leak_over_the_cycles_they_span() {
        // Cycles 1, 2, 7 and 8 kept of 8; 368 B lost at every release.
        let r = report(4, |v| {
            let phases = v["phases"].as_array_mut().unwrap();
            for (i, cycle) in [1u64, 2, 7, 8].into_iter().enumerate() {
                for p in &mut phases[i * 4..i * 4 + 4] {
                    p["cycle"] = cycle.into();
                }
                phases[i * 4 + 3]["after"]["free"] = (10000 - 368 * cycle).into();
            }
            v["cycles"] = 8.into();
            v["folded"] = serde_json::json!({"first_cycle": 3, "last_cycle": 6});
            let leaked: Vec<serde_json::Value> = (0..8)
                .map(|i| serde_json::json!({"addr": i, "size": 368, "leaked": true,
                    "site": {"function": "build_graph", "file": "engine.c", "line": 51, "chain": ["build_graph (engine.c:51)"]}}))
                .collect();
            v["heap_map"] = serde_json::json!({ "blocks": leaked });
        });
        let f = extract(&r);
        let total = FigureKey {
            kind: Kind::LeakPerCycle,
            phase: None,
            item: None,
        };
        // Not 5 × 368 from cycle 2 to cycle 7: that drop spans five cycles.
        assert_eq!(f[&total].value, 368.0);
        let site = FigureKey {
            kind: Kind::LeakPerCycle,
            phase: None,
            item: Some("build_graph".into()),
        };
        // Eight blocks over eight cycles, not over the four kept.
        assert_eq!(f[&site].value, 368.0);
    }

    #[test]
    fn alternating_models_give_each_models_leak_per_cycle() {
        let r = report(3, |v| {
            v["models"] = serde_json::json!([
                {"name": "hello_world", "key": 1, "cycles": 1, "measured": 0},
                {"name": "micro_speech", "key": 2, "cycles": 1, "measured": 1, "lost": 24, "most": 24, "least": 24},
                {"name": "magic_wand", "key": 3, "cycles": 1, "measured": 1}]);
        });
        let f = extract(&r);
        let of = |name: &str| FigureKey {
            kind: Kind::LeakPerCycle,
            phase: None,
            item: Some(format!("model {name}")),
        };
        assert_eq!(f[&of("micro_speech")].value, 24.0);
        assert_eq!(f[&of("magic_wand")].value, 0.0);
        assert!(!f.contains_key(&of("hello_world")), "never measured");
    }

    #[test]
    fn leak_per_cycle_is_the_largest_drop_of_free_after_release_and_per_site() {
        let r = report(3, |v| {
            let phases = v["phases"].as_array_mut().unwrap();
            phases[7]["after"]["free"] = 9632.into();
            phases[11]["after"]["free"] = 9264.into();
            v["heap_map"] = serde_json::json!({"blocks": [
                {"addr": 1, "size": 368, "leaked": true, "site": {"function": "build_graph", "file": "engine.c", "line": 51, "chain": ["build_graph (engine.c:51)", "graph_build (engine.c:118)"]}},
                {"addr": 2, "size": 368, "leaked": true, "site": {"function": "build_graph", "file": "engine.c", "line": 51, "chain": ["build_graph (engine.c:51)", "graph_build (engine.c:118)"]}},
                {"addr": 3, "size": 368, "leaked": true, "site": {"function": "build_graph", "file": "engine.c", "line": 51, "chain": ["build_graph (engine.c:51)", "graph_build (engine.c:118)"]}},
                {"addr": 4, "size": 9000, "free": true}]});
        });
        let f = extract(&r);
        let total = FigureKey {
            kind: Kind::LeakPerCycle,
            phase: None,
            item: None,
        };
        assert_eq!(f[&total].value, 368.0);
        let site = FigureKey {
            kind: Kind::LeakPerCycle,
            phase: None,
            item: Some("build_graph <- graph_build".into()),
        };
        assert_eq!(f[&site].value, 368.0);
        assert_eq!(
            f[&site].site.as_ref().unwrap().to_string(),
            "build_graph (engine.c:51)"
        );
    }
}
