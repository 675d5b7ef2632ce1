//! Composition: what the heap holds at a moment, from the trace. The blocks allocated and not
//! yet freed at an event, grouped by component (`memlife.toml` `[components]`, which maps
//! functions or `file:line` sites to names) or, without a mapping for a block, by its
//! allocation site.
//!
//! The engine composes each traced phase's peak as it runs ([`compose`], kept in the phase's
//! record); the report's views compose each build step the same way, and
//! [`AuditReport::live_at`] gives the blocks behind any event, across folded cycles.
//!
//! Pure: replays trace events, so it needs the trace method (the only one that records them).

use std::collections::BTreeMap;

use crate::AuditReport;
use crate::model::{EventKind, Part, Site, TraceEvent};

/// Whether a `[components]` key is a `file:line` site rather than a function.
pub fn is_site_key(key: &str) -> bool {
    key.rsplit_once(':').is_some_and(|(f, l)| {
        !f.is_empty() && !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The component of a block allocated at `site`: its `file:line`, then its function, then its
/// callers innermost first (a function's name covers what it allocates through helpers); the
/// site itself when nothing maps.
pub fn component_of(site: &Site, components: &BTreeMap<String, String>) -> String {
    if let (Some(file), Some(line)) = (&site.file, site.line)
        && let Some(name) = components.get(&format!("{file}:{line}"))
    {
        return name.clone();
    }
    let functions = site
        .function
        .iter()
        .map(String::as_str)
        .chain(site.chain.iter().map(|c| c.split(" (").next().unwrap_or(c)));
    for f in functions {
        if let Some(name) = components.get(f) {
            return name.clone();
        }
    }
    site.to_string()
}

/// The blocks live after event `until` that events from `seq_begin` on allocated (each block's
/// allocation event), in address order. `events` are in sequence order.
pub fn live_blocks(events: &[TraceEvent], seq_begin: u64, until: u64) -> Vec<&TraceEvent> {
    let start = events.partition_point(|e| e.seq < seq_begin);
    let mut live: BTreeMap<u64, &TraceEvent> = BTreeMap::new();
    replay(
        &mut live,
        events[start..].iter().take_while(|e| e.seq <= until),
    );
    live.into_values().collect()
}

/// Plays `events` onto `live` (block address → the event that allocated it): a free removes
/// its block, an allocation adds or replaces one.
pub fn replay<'a>(
    live: &mut BTreeMap<u64, &'a TraceEvent>,
    events: impl Iterator<Item = &'a TraceEvent>,
) {
    for e in events {
        match e.kind {
            EventKind::Alloc => {
                live.insert(e.addr, e);
            }
            EventKind::Free => {
                live.remove(&e.addr);
            }
        }
    }
}

/// The parts of the peak reached by event `peak_seq` in a phase entered at event `seq_begin`,
/// largest first. `events` are in sequence order.
pub fn compose(
    events: &[TraceEvent],
    seq_begin: u64,
    peak_seq: u64,
    components: &BTreeMap<String, String>,
) -> Vec<Part> {
    let live = live_blocks(events, seq_begin, peak_seq);
    let mut parts: BTreeMap<String, Part> = BTreeMap::new();
    for e in live {
        let name = component_of(&e.site, components);
        let p = parts.entry(name.clone()).or_insert(Part {
            name,
            bytes: 0,
            requested: 0,
            blocks: 0,
        });
        p.bytes += e.size;
        p.requested += e.request.unwrap_or(e.size);
        p.blocks += 1;
    }
    let mut parts: Vec<Part> = parts.into_values().collect();
    parts.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    parts
}

impl AuditReport {
    /// The blocks events `from..to` allocated and left live at `to`, by component, largest
    /// first: what a stretch of the run kept (a build step, a whole build).
    pub fn kept_between(&self, from: u64, to: u64) -> Vec<Part> {
        if to <= from {
            return Vec::new();
        }
        compose(&self.events, from, to - 1, &self.components)
    }

    /// The traced blocks allocated and not freed up to event `until` (inclusive), replayed from
    /// the first kept event, or across the folded cycles from the blocks live at their end.
    pub fn live_at(&self, until: u64) -> Vec<&TraceEvent> {
        let Some(f) = self.folded.as_ref().filter(|f| until >= f.seq_end) else {
            return live_blocks(&self.events, 0, until);
        };
        let mut live: BTreeMap<u64, &TraceEvent> =
            f.live_after.iter().map(|e| (e.addr, e)).collect();
        let after = self.events.partition_point(|e| e.seq < f.seq_end);
        replay(
            &mut live,
            self.events[after..].iter().take_while(|e| e.seq <= until),
        );
        live.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(function: &str, line: u32, caller: &str) -> Site {
        Site {
            function: Some(function.into()),
            file: Some("loader.c".into()),
            line: Some(line),
            chain: vec![
                format!("{function} (loader.c:{line})"),
                format!("{caller} (main.c:9)"),
            ],
        }
    }

    fn ev(seq: u64, kind: EventKind, addr: u64, size: u64, site: Site) -> TraceEvent {
        TraceEvent {
            seq,
            kind,
            addr,
            size,
            request: (kind == EventKind::Alloc).then_some(size - 8),
            used_after: 0,
            phase: None,
            span: None,
            site,
            task: None,
            tick: None,
        }
    }

    fn events() -> Vec<TraceEvent> {
        let w = site("parse_model", 188, "loader_load");
        let f = site("loader_load", 210, "model_load");
        let x = site("other", 5, "helper");
        vec![
            ev(0, EventKind::Alloc, 0x100, 64, x.clone()), // before the phase: not counted
            ev(1, EventKind::Alloc, 0x200, 1000, f.clone()),
            ev(2, EventKind::Alloc, 0x300, 48, w.clone()),
            ev(3, EventKind::Free, 0x300, 48, w.clone()), // freed before the peak
            ev(4, EventKind::Alloc, 0x300, 40, w.clone()), // reused address
            ev(5, EventKind::Alloc, 0x400, 24, w.clone()),
            ev(6, EventKind::Alloc, 0x500, 16, x.clone()),
            ev(7, EventKind::Free, 0x200, 1000, f.clone()), // after the peak
        ]
    }

    #[test]
    fn groups_the_blocks_live_at_the_peak_by_component_then_site() {
        let events = events();
        let mut comp = BTreeMap::new();
        comp.insert("loader.c:210".to_string(), "file buffer".to_string());
        comp.insert("parse_model".to_string(), "weights".to_string());
        let parts = compose(&events, 1, 6, &comp);
        let got: Vec<(&str, u64, u64, u64)> = parts
            .iter()
            .map(|p| (p.name.as_str(), p.bytes, p.requested, p.blocks))
            .collect();
        assert_eq!(
            got,
            vec![
                ("file buffer", 1000, 992, 1),
                ("weights", 64, 48, 2),
                ("other (loader.c:5)", 16, 8, 1),
            ]
        );
        // A caller's name covers what it allocates through others; no mapping: by site.
        comp.clear();
        comp.insert("helper".to_string(), "helpers".to_string());
        assert_eq!(compose(&events, 1, 6, &comp)[2].name, "helpers");
        let by_site = compose(&events, 1, 6, &BTreeMap::new());
        assert_eq!(by_site[0].name, "loader_load (loader.c:210)");
        assert_eq!(by_site[1].name, "parse_model (loader.c:188)");
    }

    #[test]
    fn site_keys_are_file_colon_line() {
        assert!(is_site_key("loader.c:210"));
        assert!(!is_site_key("parse_model"));
        assert!(!is_site_key("loader.c:"));
        assert!(!is_site_key("ns::f"));
    }

    /// What a stretch kept: the blocks it allocated that are live at its end, one figure per
    /// component; nothing for an empty stretch (and no underflow at event 0).
    #[test]
    fn a_stretch_keeps_what_it_allocated_and_did_not_free() {
        let mut r = AuditReport {
            events: events(),
            ..AuditReport::default()
        };
        r.components
            .insert("parse_model".to_string(), "weights".to_string());
        let kept: Vec<(String, u64)> = r
            .kept_between(2, 6)
            .into_iter()
            .map(|p| (p.name, p.bytes))
            .collect();
        assert_eq!(kept, [("weights".to_string(), 64)]);
        assert!(r.kept_between(0, 0).is_empty());
        assert!(r.kept_between(5, 3).is_empty());
        let live: Vec<u64> = r.live_at(7).iter().map(|e| e.addr).collect();
        assert_eq!(live, [0x100, 0x300, 0x400, 0x500]);
    }
}
