//! The diff of two reports: refused when they cannot be aligned, else every figure compared
//! under the same key, the changes judged against the budgets, the sites matched.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Serialize, Serializer};

use crate::DiffError;
use crate::budgets::{Budgets, Limit};
use crate::figures::{self, FigureKey, Figures, Kind, MODEL_ITEM, PhaseKey, Unit};
use crate::sites::{self, SiteChange};
use memlife_report::AuditReport;

/// What the diff says about one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// How the caller named it (the file given).
    pub name: String,
    /// Firmware ELF.
    pub elf: String,
    /// Allocator.
    pub allocator: String,
    /// Heap capacity.
    pub heap_size: u64,
    /// Lifecycle cycles recorded.
    pub cycles: u32,
    /// The audit's own exit code.
    pub exit_code: Option<i32>,
}

/// Whole numbers (bytes, counts) as JSON integers, ratios as they are.
fn ser_value<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        None => s.serialize_none(),
        Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => s.serialize_i64(*x as i64),
        Some(x) => s.serialize_f64(*x),
    }
}

fn ser_delta<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    ser_value(&Some(*v), s)
}

/// One figure that changed.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// How the tables name it ([`Change::name`]).
    #[serde(rename = "name")]
    pub label: String,
    /// Where, as the tables say it ([`Change::scope`]).
    #[serde(rename = "where")]
    pub place: String,
    /// What it measures (the `[diff]` budget name).
    pub figure: Kind,
    /// Its unit.
    pub unit: Unit,
    /// The phase role, when per phase.
    pub role: Option<String>,
    /// The phase function (HEAD's, or BASE's when gone).
    pub function: Option<String>,
    /// Which call of the role in its cycle (absent: every call, or not per phase).
    pub nth: Option<u32>,
    /// The cycles it changed in the same way (all the aligned ones when it is listed once).
    pub cycles: Vec<u32>,
    /// The phase calls this row stands for (they all changed the same way).
    pub calls: usize,
    /// The operator or layer, or the allocation site's key (function and callers).
    pub item: Option<String>,
    /// The allocation site it is about, as `function (file:line)` (HEAD's, else BASE's).
    pub site: Option<String>,
    /// In BASE (absent: new in HEAD).
    #[serde(serialize_with = "ser_value")]
    pub base: Option<f64>,
    /// In HEAD (absent: gone).
    #[serde(serialize_with = "ser_value")]
    pub head: Option<f64>,
    /// head - base (an absent side counts 0).
    #[serde(serialize_with = "ser_delta")]
    pub delta: f64,
    /// delta as percent of base, when base is not 0.
    pub percent: Option<f64>,
    /// Where BASE's peak was, or its site.
    pub base_at: Option<String>,
    /// Where HEAD's peak was, or its site.
    pub head_at: Option<String>,
    /// For the worse (improvements are listed too).
    pub worse: bool,
    /// The budget it was judged against.
    pub budget: Limit,
    /// Over budget.
    pub exceeded: bool,
}

impl Change {
    /// `build step conv_b`, `leak per cycle at build_graph (engine.c:51)`.
    pub fn name(&self) -> String {
        match (&self.item, self.figure) {
            (Some(item), Kind::LeakPerCycle) => match (&self.site, item.strip_prefix(MODEL_ITEM)) {
                (None, Some(model)) => format!("leak per cycle of model {model}"),
                (site, _) => format!("leak per cycle at {}", site.as_deref().unwrap_or(item)),
            },
            (Some(item), _) => format!("{} {item}", self.figure.title()),
            (None, _) => self.figure.title().to_string(),
        }
    }

    /// `graph_build, cycles 1-3`.
    pub fn scope(&self) -> String {
        let mut s = self.function.clone().unwrap_or_default();
        if let Some(n) = self.nth.filter(|n| *n > 1) {
            s.push_str(&format!(" (call {n} of its cycle)"));
        } else if self.nth.is_none() && self.calls > self.cycles.len() {
            s.push_str(&format!(" (all {} calls)", self.calls));
        }
        let cycles = match self.cycles.as_slice() {
            [] => String::new(),
            [c] => format!("cycle {c}"),
            [first, .., last] => format!("cycles {first}-{last}"),
        };
        match (s.is_empty(), cycles.is_empty()) {
            (true, _) => cycles,
            (false, true) => s,
            (false, false) => format!("{s}, {cycles}"),
        }
    }
}

/// A check whose verdict changed.
#[derive(Debug, Clone, Serialize)]
pub struct CheckChange {
    /// Check name.
    pub name: String,
    /// Its verdict in BASE (`none` when BASE did not run it).
    pub base: String,
    /// Its verdict in HEAD.
    pub head: String,
    /// HEAD's message.
    pub message: String,
}

/// Within or over budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every change within its budget.
    Within,
    /// At least one change over its budget.
    Exceeded,
}

/// The diff of two audit reports.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// BASE.
    pub base: RunInfo,
    /// HEAD.
    pub head: RunInfo,
    /// The verdict.
    pub verdict: Verdict,
    /// Figures compared (aligned in both runs).
    pub compared: usize,
    /// The figures that changed, those over budget first, then the largest changes.
    pub changes: Vec<Change>,
    /// Allocation sites that are new, gone, moved or allocate differently.
    pub sites: Vec<SiteChange>,
    /// Checks whose verdict changed.
    pub checks: Vec<CheckChange>,
    /// What could not be aligned, and other things to know.
    pub notes: Vec<String>,
}

impl Diff {
    /// The changes over budget.
    pub fn exceeded(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.exceeded)
    }

    /// 0 within budget, 1 exceeded.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Within => 0,
            Verdict::Exceeded => 1,
        }
    }
}

fn info(run: &AuditReport, name: &str) -> RunInfo {
    RunInfo {
        name: name.to_string(),
        elf: run.run.elf.clone(),
        allocator: run.run.allocator.clone(),
        heap_size: run.run.heap_size,
        cycles: figures::phase_keys(run).last().map_or(0, |k| k.cycle),
        exit_code: Some(run.exit_code),
    }
}

/// The function each role stands for in a run (its first phase of that role).
fn role_functions(run: &AuditReport) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in &run.phases {
        out.entry(run.role_of(p).to_string())
            .or_insert_with(|| p.function.clone());
    }
    out
}

fn site_functions(run: &AuditReport) -> BTreeSet<String> {
    run.events
        .iter()
        .filter_map(|e| e.site.function.clone())
        .chain(
            run.heap_map
                .iter()
                .flat_map(|m| &m.blocks)
                .filter_map(|b| b.site.as_ref().and_then(|s| s.function.clone())),
        )
        .collect()
}

/// Refuses two reports that cannot be aligned: no phase role in common, or no phase function
/// and no allocation site function in common (two different firmwares).
fn check_aligned(
    base: &AuditReport,
    head: &AuditReport,
    names: (&str, &str),
) -> Result<(), DiffError> {
    let (rb, rh) = (role_functions(base), role_functions(head));
    let common: Vec<&String> = rb.keys().filter(|r| rh.contains_key(*r)).collect();
    let list = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>().join(", ");
    if common.is_empty() {
        return Err(DiffError::Unrelated(format!(
            "no phase role in common ({} has {}; {} has {})",
            names.0,
            list(&rb),
            names.1,
            list(&rh)
        )));
    }
    let same = common.iter().any(|r| rb[*r] == rh[*r]);
    // Without a phase function in common, the allocation sites must say it is the same code:
    // at least half of the smaller run's site functions in the other (a renamed phase keeps
    // its callees; `main` alone is not enough).
    let (sb, sh) = (site_functions(base), site_functions(head));
    let shared = sb.intersection(&sh).count();
    let smaller = sb.len().min(sh.len());
    if !same && (shared == 0 || shared * 2 < smaller) {
        let pairs: Vec<String> = common
            .iter()
            .map(|r| format!("{r} is {} vs {}", rb[*r], rh[*r]))
            .collect();
        return Err(DiffError::Unrelated(format!(
            "{} ({}) and {} ({}) share no phase function ({}) and {shared} of {smaller} allocation \
             site functions: they look like audits of two different firmwares",
            names.0,
            base.run.elf,
            names.1,
            head.run.elf,
            pairs.join(", ")
        )));
    }
    Ok(())
}

fn equal(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// A report's memlife version as a note shows it (reports before 0.2 may not have one).
fn version(v: &str) -> &str {
    if v.is_empty() {
        "an unknown version"
    } else {
        v
    }
}

/// Compares `base` with `head`; `names` are how the caller calls them (`BASE.json`).
pub fn diff(
    base: &AuditReport,
    head: &AuditReport,
    names: (&str, &str),
    budgets: &Budgets,
) -> Result<Diff, DiffError> {
    check_aligned(base, head, names)?;
    let (fb, fh) = (figures::extract(base), figures::extract(head));
    let pb: BTreeSet<PhaseKey> = figures::phase_keys(base).into_iter().collect();
    let ph: BTreeSet<PhaseKey> = figures::phase_keys(head).into_iter().collect();
    let mut notes = Vec::new();
    for (only, name, other) in [(&pb, names.0, &ph), (&ph, names.1, &pb)] {
        let missing: Vec<&PhaseKey> = only.difference(other).collect();
        let mut lonely: Vec<String> = missing
            .iter()
            .map(|k| format!("{} (cycle {}, call {})", k.role, k.cycle, k.nth))
            .collect();
        // A long run's kept tail, or a longer run: one line, not one entry per phase.
        if lonely.len() > 8 {
            let lo = missing.iter().map(|k| k.cycle).min().unwrap_or(0);
            let hi = missing.iter().map(|k| k.cycle).max().unwrap_or(0);
            lonely = vec![format!("{} phases of cycles {lo}-{hi}", missing.len())];
        }
        if !lonely.is_empty() {
            notes.push(format!(
                "phases only in {name}, not compared: {}",
                lonely.join(", ")
            ));
        }
    }
    let (ib, ih) = (info(base, names.0), info(head, names.1));
    if ib.cycles != ih.cycles {
        notes.push(format!(
            "{} recorded {} cycles, {} {}: the leak per cycle is compared, cycles past the shorter run are not",
            names.0, ib.cycles, names.1, ih.cycles
        ));
    }
    for (run, name) in [(base, names.0), (head, names.1)] {
        if let Some(f) = &run.folded {
            notes.push(format!(
                "{name} folded cycles {}-{} (a long run): their phases are not compared one by one and the allocation sites count the kept cycles' events only; the leak per cycle spans them",
                f.first_cycle, f.last_cycle
            ));
        }
        if let Some(e) = &run.error {
            notes.push(format!(
                "{name}: the audit stopped with an error, its later phases are missing: {}",
                e.message
            ));
        }
    }
    if base.run.memlife != head.run.memlife {
        notes.push(format!(
            "written by different memlife versions: {} by {}, {} by {} (a figure whose definition changed between them shows as a change)",
            version(&base.run.memlife),
            names.0,
            version(&head.run.memlife),
            names.1
        ));
    }
    if ib.allocator != ih.allocator {
        notes.push(format!(
            "allocators differ: {} in {}, {} in {}",
            ib.allocator, names.0, ih.allocator, names.1
        ));
    }
    let aligned = |k: &FigureKey| {
        k.phase
            .as_ref()
            .is_none_or(|p| pb.contains(p) && ph.contains(p))
    };
    let keys: BTreeSet<&FigureKey> = fb.keys().chain(fh.keys()).filter(|k| aligned(k)).collect();
    let mut compared = 0;
    let mut raw = Vec::new();
    for key in keys {
        let (b, h) = (fb.get(key), fh.get(key));
        if b.is_none() || h.is_none() {
            if key.kind.higher_is_better() {
                notes.push(format!(
                    "{} only in {}: not compared",
                    key.kind.title(),
                    if b.is_some() { names.0 } else { names.1 }
                ));
                continue;
            }
        } else {
            compared += 1;
        }
        let (bv, hv) = (b.map(|f| f.value), h.map(|f| f.value));
        if let (Some(x), Some(y)) = (bv, hv)
            && equal(x, y)
        {
            continue;
        }
        raw.push(change(key, &fb, &fh, budgets));
    }
    let mut changes = collapse(raw, &fb, &fh);
    for c in &mut changes {
        c.label = c.name();
        c.place = c.scope();
    }
    let checks = checks(base, head);
    let verdict = if changes.iter().any(|c| c.exceeded) {
        Verdict::Exceeded
    } else {
        Verdict::Within
    };
    Ok(Diff {
        base: ib,
        head: ih,
        verdict,
        compared,
        changes,
        sites: sites::compare(base, head),
        checks,
        notes,
    })
}

fn change(key: &FigureKey, fb: &Figures, fh: &Figures, budgets: &Budgets) -> Change {
    let (b, h) = (fb.get(key), fh.get(key));
    let (bv, hv) = (b.map(|f| f.value), h.map(|f| f.value));
    let (x, y) = (bv.unwrap_or(0.0), hv.unwrap_or(0.0));
    let limit = budgets.limit(key.kind);
    let worse = if key.kind.higher_is_better() {
        y < x
    } else {
        y > x
    };
    Change {
        label: String::new(),
        place: String::new(),
        figure: key.kind,
        unit: key.kind.unit(),
        role: key.phase.as_ref().map(|p| p.role.clone()),
        function: h.or(b).and_then(|f| f.function.clone()),
        nth: key.phase.as_ref().map(|p| p.nth),
        cycles: key
            .phase
            .as_ref()
            .map(|p| vec![p.cycle])
            .unwrap_or_default(),
        calls: usize::from(key.phase.is_some()),
        item: key.item.clone(),
        site: h
            .or(b)
            .and_then(|f| f.site.as_ref())
            .map(memlife_report::model::Site::to_string),
        base: bv,
        head: hv,
        delta: y - x,
        percent: (x != 0.0 && bv.is_some()).then(|| 100.0 * (y - x) / x.abs()),
        base_at: b.and_then(|f| f.at.clone()),
        head_at: h.and_then(|f| f.at.clone()),
        worse,
        budget: limit,
        exceeded: limit.exceeded(key.kind, x, y),
    }
}

/// The aligned phase calls (cycle, call in cycle) a figure of this kind, role and item has in
/// both runs.
fn aligned_calls(
    kind: Kind,
    role: Option<&String>,
    item: Option<&String>,
    fb: &Figures,
    fh: &Figures,
) -> BTreeSet<(u32, u32)> {
    let of = |f: &Figures| -> BTreeSet<(u32, u32)> {
        f.keys()
            .filter(|k| k.kind == kind && k.item.as_ref() == item)
            .filter_map(|k| k.phase.as_ref())
            .filter(|p| Some(&p.role) == role)
            .map(|p| (p.cycle, p.nth))
            .collect()
    };
    of(fb).intersection(&of(fh)).copied().collect()
}

/// Whether the changes all went from the same BASE value to the same HEAD value.
fn same_change(list: &[Change]) -> bool {
    list.windows(2)
        .all(|w| w[0].base == w[1].base && w[0].head == w[1].head)
}

/// One row for a figure that changed the same way in every aligned call of its role (every
/// cycle, every call in the cycle), else one per call in the cycle when that holds across
/// cycles, else one per phase call. Then sorted: over budget first, bytes before counts and
/// ratios, largest first.
fn collapse(raw: Vec<Change>, fb: &Figures, fh: &Figures) -> Vec<Change> {
    type Group = (Kind, Option<String>, Option<String>);
    let mut groups: BTreeMap<Group, Vec<Change>> = BTreeMap::new();
    for c in raw {
        groups
            .entry((c.figure, c.role.clone(), c.item.clone()))
            .or_default()
            .push(c);
    }
    let fold = |mut list: Vec<Change>, calls: &BTreeSet<(u32, u32)>, every_nth: bool| {
        let mut first = list.swap_remove(0);
        first.cycles = calls
            .iter()
            .map(|c| c.0)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        first.calls = calls.len();
        if every_nth {
            first.nth = None;
        }
        first
    };
    let mut out = Vec::new();
    for ((kind, role, item), list) in groups {
        if role.is_none() {
            out.extend(list);
            continue;
        }
        let all = aligned_calls(kind, role.as_ref(), item.as_ref(), fb, fh);
        if list.len() > 1 && list.len() == all.len() && same_change(&list) {
            let several = all.iter().any(|c| c.1 > 1);
            out.push(fold(list, &all, several));
            continue;
        }
        let mut by_nth: BTreeMap<Option<u32>, Vec<Change>> = BTreeMap::new();
        for c in list {
            by_nth.entry(c.nth).or_default().push(c);
        }
        for (nth, list) in by_nth {
            let calls: BTreeSet<(u32, u32)> =
                all.iter().filter(|c| Some(c.1) == nth).copied().collect();
            if list.len() > 1 && list.len() == calls.len() && same_change(&list) {
                out.push(fold(list, &calls, false));
            } else {
                out.extend(list);
            }
        }
    }
    let unit_rank = |u: Unit| match u {
        Unit::Bytes => 0,
        Unit::Count => 1,
        Unit::Ratio => 2,
    };
    out.sort_by(|a, b| {
        b.exceeded
            .cmp(&a.exceeded)
            .then_with(|| unit_rank(a.unit).cmp(&unit_rank(b.unit)))
            .then_with(|| b.delta.abs().total_cmp(&a.delta.abs()))
            .then_with(|| a.figure.cmp(&b.figure))
            .then_with(|| a.item.cmp(&b.item))
            .then_with(|| a.cycles.cmp(&b.cycles))
            .then_with(|| a.nth.cmp(&b.nth))
    });
    out
}

fn checks(base: &AuditReport, head: &AuditReport) -> Vec<CheckChange> {
    head.checks
        .iter()
        .filter_map(|h| {
            let b = base.checks.iter().find(|b| b.name == h.name);
            let bv = b.map_or("none", |b| b.verdict.as_str());
            (bv != h.verdict.as_str()).then(|| CheckChange {
                name: h.name.clone(),
                base: bv.to_string(),
                head: h.verdict.as_str().to_string(),
                message: h.message.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::figures::tests::report;

    fn run_diff(base: &AuditReport, head: &AuditReport) -> Diff {
        diff(base, head, ("BASE", "HEAD"), &Budgets::default()).unwrap()
    }

    #[test]
    fn reports_of_different_memlife_versions_are_named() {
        let base = report(1, |v| v["run"]["memlife"] = "0.3.0".into());
        let head = report(1, |v| v["run"]["memlife"] = "0.4.0".into());
        let d = diff(&base, &head, ("a.json", "b.json"), &Budgets::default()).unwrap();
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("different memlife versions: 0.3.0 by a.json, 0.4.0 by b.json")),
            "{:?}",
            d.notes
        );
        let same = diff(&head, &head, ("a", "b"), &Budgets::default()).unwrap();
        assert!(same.notes.iter().all(|n| !n.contains("versions")));
    }

    #[test]
    fn a_run_against_itself_has_no_change() {
        let r = report(3, |_| {});
        let d = run_diff(&r, &r);
        assert!(d.changes.is_empty() && d.sites.is_empty() && d.notes.is_empty());
        assert_eq!(d.verdict, Verdict::Within);
        assert!(d.compared > 20, "{}", d.compared);
    }

    #[test]
    fn a_build_step_that_grew_in_every_cycle_is_one_row_over_budget() {
        let base = report(3, |_| {});
        let head = report(3, |v| {
            for i in [1, 5, 9] {
                v["phases"][i]["spans"][1]["delta"] = 9488.into();
                v["phases"][i]["delta_used"] = 9600.into();
            }
        });
        let d = run_diff(&base, &head);
        assert_eq!(d.verdict, Verdict::Exceeded);
        let names: Vec<String> = d.changes.iter().map(Change::name).collect();
        assert_eq!(names, ["build step conv_b", "build resident"]);
        let step = &d.changes[0];
        assert_eq!(
            (step.base, step.head, step.delta),
            (Some(300.0), Some(9488.0), 9188.0)
        );
        assert_eq!(step.cycles, [1, 2, 3]);
        assert_eq!(step.scope(), "graph_build, cycles 1-3");
        assert!(step.exceeded && step.worse);
    }

    /// `report(1)` with a TFLM model whose build's operator 1 took `step` persistent bytes.
    fn with_arena(step: u64) -> AuditReport {
        report(1, |v| {
            v["arenas"] = serde_json::json!({
                "generation": "2020",
                "models": [{"model": "g_model", "build": 1, "persistent_bytes": 600 + step,
                    "head_bytes": 1024, "needs": 1700 + step, "exact": true}],
                "builds": [{"index": 1, "model": "g_model", "status": "ok", "operators": [
                    {"node": -1, "operator": "setup", "bytes": 600},
                    {"node": 0, "operator": "FULLY_CONNECTED", "bytes": 0},
                    {"node": 1, "operator": "SOFTMAX", "bytes": step}]}],
            });
        })
    }

    #[test]
    fn an_operator_whose_arena_step_grew_exceeds_its_budget() {
        let d = run_diff(&with_arena(32), &with_arena(32 + 4096));
        assert_eq!(d.verdict, Verdict::Exceeded);
        let step = d
            .changes
            .iter()
            .find(|c| c.figure == Kind::ArenaStep)
            .unwrap();
        assert_eq!(step.name(), "arena step g_model: 1 SOFTMAX");
        assert_eq!((step.base, step.head), (Some(32.0), Some(4128.0)));
        assert!(step.exceeded && step.worse);
        let names: Vec<String> = d.changes.iter().map(Change::name).collect();
        for n in ["arena persistent g_model", "smallest arena g_model"] {
            assert!(names.contains(&n.to_string()), "{names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("arena head")), "{names:?}");
        // A few bytes more stay within the default budget (256 B or 5 %).
        assert_eq!(
            run_diff(&with_arena(32), &with_arena(48)).verdict,
            Verdict::Within
        );
    }

    #[test]
    fn a_change_in_one_cycle_only_is_its_own_row_and_small_ones_pass() {
        let base = report(2, |_| {});
        let head = report(2, |v| {
            v["phases"][4]["peak_above_before"] = 1100.into();
        });
        let d = run_diff(&base, &head);
        assert_eq!(d.changes.len(), 1);
        assert_eq!(d.changes[0].cycles, [2]);
        assert!(!d.changes[0].exceeded, "100 B is within 256 B");
        assert_eq!(d.verdict, Verdict::Within);
    }

    #[test]
    fn unaligned_phases_are_noted_not_compared() {
        let base = report(3, |_| {});
        let head = report(2, |_| {});
        let d = run_diff(&base, &head);
        assert!(d.changes.is_empty(), "{:?}", d.changes);
        assert!(
            d.notes[0].contains("phases only in BASE")
                && d.notes[0].contains("load (cycle 3, call 1)"),
            "{:?}",
            d.notes
        );
        assert!(
            d.notes[1].contains("BASE recorded 3 cycles, HEAD 2"),
            "{:?}",
            d.notes
        );
    }

    #[test]
    fn unrelated_firmwares_are_refused_with_the_reason() {
        let base = report(1, |_| {});
        let other = report(1, |v| {
            for (i, f) in [
                "app::Setup",
                "Interp::Allocate",
                "Interp::Invoke",
                "app::Teardown",
            ]
            .iter()
            .enumerate()
            {
                v["phases"][i]["function"] = (*f).into();
            }
        });
        let e = diff(&base, &other, ("a.json", "b.json"), &Budgets::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("share no phase function") && e.contains("load is model_load vs app::Setup"),
            "{e}"
        );
        let roles = report(1, |v| {
            for p in v["phases"].as_array_mut().unwrap() {
                p["alias"] = serde_json::Value::Null;
                p["function"] = "setup".into();
            }
            v["phase_aliases"] = serde_json::json!({});
        });
        let e = diff(&base, &roles, ("a.json", "b.json"), &Budgets::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no phase role in common"), "{e}");
    }

    #[test]
    fn check_verdicts_that_changed_are_listed() {
        let base =
            report(
                1,
                |v| {
                    v["checks"] =
                        serde_json::json!([{"name": "leak", "verdict": "pass", "message": "ok"}])
                },
            );
        let head = report(
            1,
            |v| {
                v["checks"] = serde_json::json!([{"name": "leak", "verdict": "fail", "message": "drops 368 B"}])
            },
        );
        let d = run_diff(&base, &head);
        assert_eq!(d.checks.len(), 1);
        assert_eq!(
            (d.checks[0].base.as_str(), d.checks[0].head.as_str()),
            ("pass", "fail")
        );
    }
}
