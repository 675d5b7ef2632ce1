//! The diff as text: a table for the terminal (colour only when asked: the caller knows whether
//! stdout is a terminal) and markdown for a pull-request comment (short: the verdict, the
//! changed figures, the top sites).

use std::fmt::Write;

use memlife_core::text::printable;

use crate::compare::{Change, Diff, Verdict};
use crate::figures::Unit;
use crate::sites::{SiteChange, SiteStatus};

/// Rows the markdown lists before saying how many more there are.
pub const MARKDOWN_ROWS: usize = 25;
/// Sites the markdown lists.
pub const MARKDOWN_SITES: usize = 8;

/// A value in its unit: `9488 B`, `14`, `0.985`.
pub fn value(unit: Unit, v: Option<f64>) -> String {
    match (v, unit) {
        (None, _) => "-".into(),
        (Some(x), Unit::Bytes) => format!("{x:.0} B"),
        (Some(x), Unit::Count) => format!("{x:.0}"),
        (Some(x), Unit::Ratio) => format!("{x:.3}"),
    }
}

/// A change in its unit with its share of BASE: `+9224 B (+3493.9%)`.
pub fn delta(c: &Change) -> String {
    let d = match c.unit {
        Unit::Bytes => format!("{:+.0} B", c.delta),
        Unit::Count => format!("{:+.0}", c.delta),
        Unit::Ratio => format!("{:+.3}", c.delta),
    };
    let tag = match (c.base, c.head) {
        (None, _) => " (new)".to_string(),
        (_, None) => " (gone)".to_string(),
        _ => c
            .percent
            .map_or_else(String::new, |p| format!(" ({p:+.1}%)")),
    };
    format!("{d}{tag}")
}

/// The budget: `256 B or 5%`.
pub fn budget(c: &Change) -> String {
    let abs = match c.unit {
        Unit::Bytes => format!("{:.0} B", c.budget.absolute),
        Unit::Count => format!("{:.0}", c.budget.absolute),
        Unit::Ratio => format!("{:.3}", c.budget.absolute),
    };
    format!("{abs} / {}%", c.budget.percent)
}

/// `at layer head_p4 (was: entry)` when a peak moved, else where it is.
pub fn at(c: &Change) -> String {
    match (&c.base_at, &c.head_at) {
        (Some(b), Some(h)) if b != h => format!("{h} (was {b})"),
        (None, Some(h)) => h.clone(),
        (Some(b), None) => format!("was {b}"),
        (Some(_), Some(h)) => h.clone(),
        (None, None) => String::new(),
    }
}

/// One line about a site.
pub fn site_line(s: &SiteChange) -> String {
    let stats = |st: &crate::sites::SiteStats| {
        let mut t = format!("{} allocs, {} B", st.allocs, st.bytes);
        if st.held > 0 {
            let _ = write!(t, ", {} B never freed", st.held);
        }
        if !st.roles.is_empty() {
            let _ = write!(t, " in {}", st.roles.join("/"));
        }
        t
    };
    match s.status {
        SiteStatus::New => format!(
            "new     {}: {}",
            s.describe(),
            s.head.as_ref().map(stats).unwrap_or_default()
        ),
        SiteStatus::Gone => format!(
            "gone    {}: {}",
            s.describe(),
            s.base.as_ref().map(stats).unwrap_or_default()
        ),
        SiteStatus::Moved => format!(
            "moved   {} (was {}): {} -> {}",
            s.describe(),
            s.moved_from.as_deref().unwrap_or("?"),
            s.base.as_ref().map(stats).unwrap_or_default(),
            s.head.as_ref().map(stats).unwrap_or_default()
        ),
        SiteStatus::Changed => format!(
            "changed {}: {} -> {}",
            s.describe(),
            s.base.as_ref().map(stats).unwrap_or_default(),
            s.head.as_ref().map(stats).unwrap_or_default()
        ),
    }
}

/// The one-line verdict: `EXCEEDED: 3 of 12 changes over budget (412 figures compared)`.
pub fn headline(d: &Diff) -> String {
    let over = d.exceeded().count();
    match d.verdict {
        Verdict::Exceeded => format!(
            "EXCEEDED: {over} of {} changes over budget ({} figures compared)",
            d.changes.len(),
            d.compared
        ),
        Verdict::Within if d.changes.is_empty() => {
            format!("WITHIN: no change ({} figures compared)", d.compared)
        }
        Verdict::Within => format!(
            "WITHIN: {} changes, none over budget ({} figures compared)",
            d.changes.len(),
            d.compared
        ),
    }
}

/// Report text (a site's function, a check's message, a layer name from firmware RAM) as the
/// terminal and the markdown show it: escape sequences, bidirectional overrides and zero-width
/// characters written out (`\u{1b}`), and no line breaks, which would forge rows.
fn shown(s: &str) -> String {
    printable(s).replace('\n', "\\n").replace('\t', " ")
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The terminal table. `color`: ANSI colours (over budget red, improvements green).
pub fn table(d: &Diff, color: bool) -> String {
    let paint = |code: &str, s: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "memlife diff: {} ({}) -> {} ({})",
        shown(&d.base.name),
        shown(base_name(&d.base.elf)),
        shown(&d.head.name),
        shown(base_name(&d.head.elf))
    );
    let head = headline(d);
    let _ = writeln!(
        out,
        "{}",
        match d.verdict {
            Verdict::Exceeded => paint("1;31", &head),
            Verdict::Within => paint("1;32", &head),
        }
    );
    if !d.changes.is_empty() {
        let rows: Vec<[String; 7]> = d
            .changes
            .iter()
            .map(|c| {
                [
                    if c.exceeded { "!".into() } else { " ".into() },
                    shown(&c.name()),
                    shown(&c.scope()),
                    value(c.unit, c.base),
                    value(c.unit, c.head),
                    delta(c),
                    shown(&format!("{}  {}", budget(c), at(c))),
                ]
            })
            .collect();
        let titles = [
            "",
            "figure",
            "where",
            "base",
            "head",
            "change",
            "budget  at",
        ];
        let mut w = [0usize; 7];
        for r in rows
            .iter()
            .map(|r| r.each_ref().map(|s| s.chars().count()))
            .chain([titles.map(str::len)])
        {
            for (i, n) in r.iter().enumerate() {
                w[i] = w[i].max(*n);
            }
        }
        out.push('\n');
        let line = |cells: [&str; 7]| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i].saturating_sub(c.chars().count());
                if (3..=5).contains(&i) {
                    let _ = write!(l, "{}{c}  ", " ".repeat(pad));
                } else if i == 6 {
                    l.push_str(c);
                } else {
                    let _ = write!(l, "{c}{}  ", " ".repeat(pad));
                }
            }
            l.trim_end().to_string()
        };
        let _ = writeln!(out, "{}", line(titles));
        for (r, c) in rows.iter().zip(&d.changes) {
            let text = line(r.each_ref().map(String::as_str));
            let text = if c.exceeded {
                paint("31", &text)
            } else if !c.worse {
                paint("32", &text)
            } else {
                text
            };
            let _ = writeln!(out, "{text}");
        }
    }
    if !d.sites.is_empty() {
        let _ = writeln!(out, "\nallocation sites:");
        for s in &d.sites {
            let _ = writeln!(out, "  {}", shown(&site_line(s)));
        }
    }
    if !d.checks.is_empty() {
        let _ = writeln!(out, "\nchecks:");
        for c in &d.checks {
            let _ = writeln!(
                out,
                "  {}: {} -> {}: {}",
                shown(&c.name),
                c.base,
                c.head,
                shown(&c.message)
            );
        }
    }
    for n in &d.notes {
        let _ = writeln!(out, "note: {}", shown(n));
    }
    out
}

/// Markdown cells hold no `|`, no line breaks and nothing a terminal would act on (the file is
/// also read with `cat`).
fn cell(s: &str) -> String {
    printable(s)
        .replace('|', "\\|")
        .replace(['\n', '\r', '\t'], " ")
}

/// The markdown for a pull-request comment.
pub fn markdown(d: &Diff) -> String {
    let mut m = String::new();
    let icon = match d.verdict {
        Verdict::Exceeded => "❌",
        Verdict::Within => "✅",
    };
    let _ = writeln!(m, "### {icon} memlife diff: {}\n", cell(&headline(d)));
    let _ = writeln!(
        m,
        "`{}` ({}) → `{}` ({})\n",
        cell(&d.base.name),
        cell(base_name(&d.base.elf)),
        cell(&d.head.name),
        cell(base_name(&d.head.elf))
    );
    if !d.changes.is_empty() {
        m.push_str("| | figure | where | base | head | change | budget |\n|---|---|---|---:|---:|---:|---|\n");
        for c in d.changes.iter().take(MARKDOWN_ROWS) {
            let mark = if c.exceeded {
                "❌"
            } else if c.worse {
                ""
            } else {
                "✅"
            };
            let at = at(c);
            let scope = if at.is_empty() {
                c.scope()
            } else {
                format!("{} · {at}", c.scope())
            };
            let _ = writeln!(
                m,
                "| {mark} | {} | {} | {} | {} | {} | {} |",
                cell(&c.name()),
                cell(&scope),
                value(c.unit, c.base),
                value(c.unit, c.head),
                cell(&delta(c)),
                cell(&budget(c))
            );
        }
        if d.changes.len() > MARKDOWN_ROWS {
            let _ = writeln!(
                m,
                "\n… and {} smaller changes (see the JSON).",
                d.changes.len() - MARKDOWN_ROWS
            );
        }
        m.push('\n');
    }
    if !d.sites.is_empty() {
        m.push_str("**Allocation sites**\n\n");
        for s in d.sites.iter().take(MARKDOWN_SITES) {
            let _ = writeln!(
                m,
                "- {}",
                cell(&site_line(s))
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        if d.sites.len() > MARKDOWN_SITES {
            let _ = writeln!(m, "- … and {} more", d.sites.len() - MARKDOWN_SITES);
        }
        m.push('\n');
    }
    if !d.checks.is_empty() {
        m.push_str("**Checks**\n\n");
        for c in &d.checks {
            let _ = writeln!(
                m,
                "- `{}`: {} → {}: {}",
                cell(&c.name),
                c.base,
                c.head,
                cell(&c.message)
            );
        }
        m.push('\n');
    }
    for n in &d.notes {
        let _ = writeln!(m, "> {}", cell(n));
    }
    m
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::figures::tests::report;
    use crate::{Budgets, diff};

    fn reorder() -> Diff {
        let base = report(1, |_| {});
        let head = report(1, |v| {
            v["phases"][1]["spans"][1]["delta"] = 9488.into();
        });
        diff(
            &base,
            &head,
            ("base.json", "head.json"),
            &Budgets::default(),
        )
        .unwrap()
    }

    #[test]
    fn the_table_names_the_change_and_colours_only_when_asked() {
        let d = reorder();
        let plain = table(&d, false);
        assert!(
            plain.contains("EXCEEDED: 1 of 1 changes over budget"),
            "{plain}"
        );
        let row = plain
            .lines()
            .find(|l| l.contains("build step conv_b"))
            .unwrap();
        assert!(
            row.starts_with('!')
                && row.contains("300 B")
                && row.contains("9488 B")
                && row.contains("+9188 B (+3062.7%)"),
            "{row}"
        );
        assert!(!plain.contains('\x1b'));
        assert!(table(&d, true).contains("\x1b[31m"));
    }

    #[test]
    fn markdown_has_the_verdict_and_a_row_per_change() {
        let md = markdown(&reorder());
        assert!(md.starts_with("### ❌ memlife diff: EXCEEDED"), "{md}");
        assert!(md.contains("| ❌ | build step conv_b | graph_build, cycle 1 | 300 B | 9488 B | +9188 B (+3062.7%) | 256 B / 5% |"), "{md}");
        let base = report(1, |_| {});
        let same = diff(&base, &base, ("a", "b"), &Budgets::default()).unwrap();
        let md = markdown(&same);
        assert!(
            md.contains("✅ memlife diff: WITHIN: no change") && !md.contains("| figure |"),
            "{md}"
        );
    }

    #[test]
    fn report_text_cannot_drive_the_terminal() {
        // A layer name read from firmware RAM: an OSC title sequence ended by BEL, a
        // right-to-left override and a line break that would forge a row.
        let hostile = "conv\u{1b}]0;pwned\u{7}\u{202e}b\nFAKE";
        let tweak = |v: &mut serde_json::Value| {
            v["labels"]["op_init"][1] = hostile.into();
        };
        let base = report(1, tweak);
        let head = report(1, |v| {
            tweak(v);
            v["phases"][1]["spans"][1]["delta"] = 9488.into();
        });
        let d = diff(&base, &head, ("a", "b"), &Budgets::default()).unwrap();
        for (what, text) in [("table", table(&d, false)), ("markdown", markdown(&d))] {
            assert!(
                !text.contains(['\u{1b}', '\u{7}', '\u{202e}']),
                "{what}: {text}"
            );
            assert!(
                text.contains("conv\\u{1b}]0;pwned\\u{7}\\u{202e}b"),
                "{what}: {text}"
            );
            assert!(
                !text.lines().any(|l| l.starts_with("FAKE")),
                "{what}: {text}"
            );
        }
        // Colour stays: only memlife's own sequences reach the terminal.
        let coloured = table(&d, true);
        assert_eq!(coloured.matches('\u{1b}').count(), 4, "{coloured}");
    }

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn hostile_figures_do_not_panic() {
        let base = report(1, |_| {});
        let head = report(1, |v| {
            v["phases"][0]["peak_above_before"] = u64::MAX.into();
            v["phases"][1]["delta_used"] = i64::MIN.into();
            v["phases"][1]["spans"][0]["after_used"] = u64::MAX.into();
            v["phases"][3]["after"]["free"] = 0.into();
            v["events"] = serde_json::json!([
                {"seq": 0, "kind": "alloc", "addr": 1, "size": u64::MAX, "site": {"function": "f"}},
                {"seq": 1, "kind": "alloc", "addr": 2, "size": u64::MAX, "site": {"function": "f"}}]);
            v["heap_map"] = serde_json::json!({"blocks": [
                {"addr": 1, "size": u64::MAX, "leaked": true}, {"addr": 2, "size": u64::MAX, "leaked": true}]});
        });
        let d = diff(&base, &head, ("BASE", "HEAD"), &Budgets::default()).unwrap();
        assert_eq!(d.verdict, Verdict::Exceeded);
        let _ = table(&d, true);
        let _ = markdown(&d);
        serde_json::to_string(&d).unwrap();
    }
}
