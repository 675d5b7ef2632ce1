//! The water level against the firmware's own clock: used heap at each allocator event, its x
//! the tick count (FreeRTOS's `xTickCount`) the event carries, phases as coloured bands over
//! the ticks they took. Drawn only when the events carry ticks (an RTOS firmware); the steps'
//! chart stays the main one, since many events share a tick.

use plotters::prelude::*;

use memlife_report::AuditReport;
use memlife_report::views::Views;

use super::{Frame, USED, held, k, role_color};
use crate::Result;

/// The curve's points from the events' (tick, used bytes after the event), in event order:
/// at most two per tick (its highest level, then its last), since a long run has thousands of
/// events in few ticks.
pub fn points(events: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    // The tick being gathered: its highest level and its last.
    let mut open: Option<(u64, u64, u64)> = None;
    for (tick, used) in events {
        open = match open {
            Some((t, high, _)) if t == tick => Some((t, high.max(used), used)),
            Some((t, high, last)) => {
                out.extend([(t, high), (t, last)]);
                Some((tick, used, used))
            }
            None => Some((tick, used, used)),
        };
    }
    if let Some((t, high, last)) = open {
        out.extend([(t, high), (t, last)]);
    }
    out.dedup();
    out
}

/// The chart, or `None` when no event carries a tick.
pub fn svg(report: &AuditReport, views: &Views<'_>) -> Result<Option<String>> {
    let points = points(
        report
            .events
            .iter()
            .filter_map(|e| e.tick.map(|t| (t, e.used_after))),
    );
    let Some(last) = points.iter().map(|p| p.0).max() else {
        return Ok(None);
    };
    let first = points.iter().map(|p| p.0).min().unwrap_or(0);
    let highest = points.iter().map(|p| p.1).max().unwrap_or(0);
    let (x0, x1) = (first as f64, last as f64 + 1.0);
    let ymax = k(report.run.heap_size.max(highest)) * 1.05 + 0.5;
    let frame = Frame {
        x_label_area: 40,
        x_desc: Some("firmware ticks (xTickCount)"),
        y_desc: "used heap (KiB)",
        ..Frame::new("water-level-ticks", 300, x0..x1, 0f64..ymax)
    };
    let svg = super::draw(&frame, |plot| {
        for s in &views.timeline.phases {
            let Some(t) = s.record.ticks else { continue };
            plot.draw(Rectangle::new(
                [(t.begin as f64, 0.0), (t.end as f64 + 0.999, ymax)],
                role_color(&s.role).mix(0.18).filled(),
            ))?;
        }
        let mut stepped = held(points.iter().map(|&(x, u)| (x as f64, k(u))));
        if let Some(end) = stepped.last().copied() {
            stepped.push((x1, end.1));
        }
        plot.series(
            AreaSeries::new(stepped.iter().copied(), 0.0, USED.mix(0.25))
                .border_style(USED.stroke_width(2)),
        )
    })?;
    Ok(Some(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tick_keeps_its_highest_level_then_its_last() {
        assert_eq!(
            points([(5, 10), (5, 30), (5, 20), (7, 40), (9, 15), (9, 15)]),
            [(5, 30), (5, 20), (7, 40), (9, 15)]
        );
        assert!(points([]).is_empty());
    }
}
