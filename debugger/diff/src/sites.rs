//! Allocation sites of two reports, matched: the same function, file, line and call chain is
//! the same site; what is left is matched by function and callers' functions alone (a line
//! that moved); what is still left is new (only in HEAD) or gone (only in BASE).

use std::collections::BTreeMap;

use serde::Serialize;

use memlife_report::AuditReport;
use memlife_report::model::{EventKind, Site};

/// What one site did over a whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SiteStats {
    /// Allocations made there.
    pub allocs: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes allocated there and not freed when the trace ended.
    pub held: u64,
    /// The roles of the phases it allocated in (`build`, `switch`).
    pub roles: Vec<String>,
}

/// How a site differs between the two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteStatus {
    /// Only in HEAD.
    New,
    /// Only in BASE.
    Gone,
    /// The same function and call chain at another line.
    Moved,
    /// The same site, allocating differently.
    Changed,
}

/// One site that differs.
#[derive(Debug, Clone, Serialize)]
pub struct SiteChange {
    /// How.
    pub status: SiteStatus,
    /// The site (HEAD's, or BASE's when gone).
    pub site: Site,
    /// BASE's `file:line` when it moved.
    pub moved_from: Option<String>,
    /// In BASE.
    pub base: Option<SiteStats>,
    /// In HEAD.
    pub head: Option<SiteStats>,
}

impl SiteChange {
    /// `op_prepare (ops.c:75) <- build_graph <- model_switch`: the site and up to three
    /// callers, which tell apart one line reached from two places.
    pub fn describe(&self) -> String {
        let mut s = self.site.to_string();
        for f in self.site.chain_functions().iter().skip(1).take(3) {
            s.push_str(" <- ");
            s.push_str(f);
        }
        s
    }
}

/// A site's identity: function, file, line and the callers' functions. Callers' lines are
/// left out: one allocation reached through two calls of the same function is one site.
type SiteId = (Option<String>, Option<String>, Option<u32>, Vec<String>);

fn id(site: &Site) -> SiteId {
    (
        site.function.clone(),
        site.file.clone(),
        site.line,
        site.chain_functions()
            .iter()
            .map(|f| f.to_string())
            .collect(),
    )
}

/// Every allocation site of a run (the first call chain seen stands for it) with what it did,
/// each free attributed to the allocation of the same address before it.
pub fn stats(run: &AuditReport) -> BTreeMap<SiteId, (Site, SiteStats)> {
    let mut out: BTreeMap<SiteId, (Site, SiteStats)> = BTreeMap::new();
    let mut live: BTreeMap<u64, (SiteId, u64)> = BTreeMap::new();
    for e in &run.events {
        match e.kind {
            EventKind::Alloc => {
                let key = id(&e.site);
                let (_, s) = out
                    .entry(key.clone())
                    .or_insert_with(|| (e.site.clone(), SiteStats::default()));
                s.allocs += 1;
                s.bytes = s.bytes.saturating_add(e.size);
                if let Some(f) = &e.phase {
                    let role = run.role_of_function(f).to_string();
                    if !s.roles.contains(&role) {
                        s.roles.push(role);
                    }
                }
                live.insert(e.addr, (key, e.size));
            }
            EventKind::Free => {
                live.remove(&e.addr);
            }
        }
    }
    for (key, size) in live.into_values() {
        if let Some((_, s)) = out.get_mut(&key) {
            s.held = s.held.saturating_add(size);
        }
    }
    out
}

/// The sites that differ between `base` and `head`, new and gone first, then moved, then
/// changed; the most bytes first within each.
pub fn compare(base: &AuditReport, head: &AuditReport) -> Vec<SiteChange> {
    let mut b = stats(base);
    let mut h = stats(head);
    let mut out = Vec::new();
    let exact: Vec<SiteId> = b.keys().filter(|s| h.contains_key(*s)).cloned().collect();
    for key in exact {
        let (Some((_, bs)), Some((site, hs))) = (b.remove(&key), h.remove(&key)) else {
            continue;
        };
        if bs.allocs != hs.allocs || bs.bytes != hs.bytes || bs.held != hs.held {
            out.push(SiteChange {
                status: SiteStatus::Changed,
                site,
                moved_from: None,
                base: Some(bs),
                head: Some(hs),
            });
        }
    }
    // What is left: a site that moved keeps its function and callers.
    let head_left: Vec<SiteId> = h.keys().cloned().collect();
    for hkey in head_left {
        let Some(bkey) = b.keys().find(|k| k.0 == hkey.0 && k.3 == hkey.3).cloned() else {
            continue;
        };
        let (Some((bsite, bs)), Some((site, hs))) = (b.remove(&bkey), h.remove(&hkey)) else {
            continue;
        };
        out.push(SiteChange {
            status: SiteStatus::Moved,
            moved_from: Some(bsite.location()),
            site,
            base: Some(bs),
            head: Some(hs),
        });
    }
    out.extend(h.into_values().map(|(site, hs)| SiteChange {
        status: SiteStatus::New,
        site,
        moved_from: None,
        base: None,
        head: Some(hs),
    }));
    out.extend(b.into_values().map(|(site, bs)| SiteChange {
        status: SiteStatus::Gone,
        site,
        moved_from: None,
        base: Some(bs),
        head: None,
    }));
    let weight = |c: &SiteChange| {
        let b = c.base.as_ref().map_or(0, |s| s.bytes);
        let h = c.head.as_ref().map_or(0, |s| s.bytes);
        (b.max(h), c.head.as_ref().map_or(0, |s| s.held))
    };
    out.sort_by(|x, y| {
        x.status
            .cmp(&y.status)
            .then_with(|| weight(y).cmp(&weight(x)))
            .then_with(|| x.site.cmp(&y.site))
    });
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::figures::tests::report;

    fn with_events(events: serde_json::Value) -> AuditReport {
        report(1, |v| v["events"] = events.clone())
    }

    fn alloc(seq: u64, addr: u64, size: u64, function: &str, line: u32) -> serde_json::Value {
        serde_json::json!({"seq": seq, "kind": "alloc", "addr": addr, "size": size, "phase": "graph_build",
            "site": {"function": function, "file": "engine.c", "line": line,
                     "chain": [format!("{function} (engine.c:{line})"), "graph_build (engine.c:118)"]}})
    }

    #[test]
    fn a_moved_line_is_the_same_site_and_new_and_gone_sites_are_said() {
        let base = with_events(serde_json::json!([
            alloc(0, 0x100, 368, "build_graph", 51),
            alloc(1, 0x200, 64, "planner_plan", 110),
            {"seq": 2, "kind": "free", "addr": 0x200, "size": 64},
        ]));
        let head = with_events(serde_json::json!([
            alloc(0, 0x100, 368, "build_graph", 53),
            alloc(1, 0x300, 9216, "relayout", 70),
        ]));
        let changes = compare(&base, &head);
        let status: Vec<(SiteStatus, String)> =
            changes.iter().map(|c| (c.status, c.describe())).collect();
        assert_eq!(
            status,
            [
                (
                    SiteStatus::New,
                    "relayout (engine.c:70) <- graph_build".to_string()
                ),
                (
                    SiteStatus::Gone,
                    "planner_plan (engine.c:110) <- graph_build".to_string()
                ),
                (
                    SiteStatus::Moved,
                    "build_graph (engine.c:53) <- graph_build".to_string()
                ),
            ]
        );
        assert_eq!(changes[2].moved_from.as_deref(), Some("engine.c:51"));
        assert_eq!(changes[0].head.as_ref().unwrap().held, 9216);
        assert_eq!(changes[1].base.as_ref().unwrap().held, 0);
        assert_eq!(changes[0].head.as_ref().unwrap().roles, ["build"]);
    }

    #[test]
    fn one_line_reached_through_two_calls_of_a_caller_is_one_site() {
        let mut second = alloc(1, 0x200, 8, "f", 1);
        second["site"]["chain"][1] = "graph_build (engine.c:120)".into();
        let base = with_events(serde_json::json!([alloc(0, 0x100, 8, "f", 1)]));
        let head = with_events(serde_json::json!([alloc(0, 0x100, 8, "f", 1), second]));
        let changes = compare(&base, &head);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].status, SiteStatus::Changed);
        assert_eq!(changes[0].head.as_ref().unwrap().allocs, 2);
    }

    #[test]
    fn another_caller_is_another_site() {
        let base = with_events(serde_json::json!([alloc(0, 0x100, 8, "f", 1)]));
        let mut other = alloc(0, 0x100, 8, "f", 1);
        other["site"]["chain"][1] = "model_switch (engine.c:140)".into();
        let head = with_events(serde_json::json!([other]));
        let s: Vec<SiteStatus> = compare(&base, &head).iter().map(|c| c.status).collect();
        assert_eq!(s, [SiteStatus::New, SiteStatus::Gone]);
        assert!(compare(&base, &base).is_empty());
    }
}
