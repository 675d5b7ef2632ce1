//! The graph-build stair chart ([`memlife_report::views::Stairs`]): one step per operator, the
//! largest outlined in red and named. When the build was traced, each step is split by
//! component (see [`crate::palette`]): the blocks allocated since the previous step and still
//! live at its end, largest first from the bottom; what the trace cannot account for stays in
//! the build's colour.

use plotters::prelude::*;

use memlife_report::views::{Stairs, Step};

use super::{ALARM, FONT, Frame, USED, category_label, k, role_color};
use crate::palette::{Palette, rgb};
use crate::{Result, delta, kib};

/// The coloured pieces of a step from `prev` to `resident` (bytes above the build's entry):
/// its parts stacked from `prev` up, cut at `resident` (the step may also have freed older
/// blocks), then the rest of the step in `None` (the build's own colour).
pub fn pieces(step: &Step, prev: i64) -> Vec<(Option<&str>, i64, i64)> {
    let top = step.resident.max(0);
    let mut y = prev.max(0);
    let mut out = Vec::new();
    for part in &step.parts {
        let next = y
            .saturating_add(i64::try_from(part.bytes).unwrap_or(i64::MAX))
            .min(top);
        if next > y {
            out.push((Some(part.name.as_str()), y, next));
            y = next;
        }
    }
    if top > y {
        out.push((None, y, top));
    } else if top < prev.max(0) {
        // A step down: nothing kept, drawn as before in the build's colour.
        out.push((None, top, prev.max(0)));
    }
    out
}

/// Draws the stairs, steps coloured by component from `palette`.
pub fn svg(st: &Stairs, palette: &mut Palette) -> Result<String> {
    svg_in(st, palette, y_range(st))
}

/// The y range (KiB, lowest and highest) that holds the stairs and their labels.
pub fn y_range(st: &Stairs) -> (f64, f64) {
    let top = st
        .steps
        .iter()
        .map(|s| s.resident)
        .chain([st.total, 0])
        .max()
        .unwrap_or(0);
    let bottom = st
        .steps
        .iter()
        .map(|s| s.resident)
        .chain([0])
        .min()
        .unwrap_or(0);
    (
        -(k(bottom.unsigned_abs()) * 1.1),
        k(top.max(0) as u64) * 1.18 + 0.5,
    )
}

/// Draws the stairs on the y range `(ymin, ymax)` in KiB (charts shown side by side share one,
/// so equal steps look equal).
pub fn svg_in(st: &Stairs, palette: &mut Palette, (ymin, ymax): (f64, f64)) -> Result<String> {
    let n = st.steps.len();
    let names: Vec<String> = st
        .steps
        .iter()
        .map(|s| s.name.clone())
        .chain(["whole build".to_string()])
        .collect();
    let label_of = |v: &f64| category_label(&names, *v);
    let frame = Frame {
        x_labels: Some(n + 1),
        x_format: &label_of,
        y_desc: "resident build memory (KiB)",
        ..Frame::new("build stairs", 400, -0.5f64..(n as f64 + 0.5), ymin..ymax)
    };
    super::draw(&frame, |plot| {
        let build = role_color("build");
        let mut prev = 0i64;
        for (i, s) in st.steps.iter().enumerate() {
            let x = i as f64;
            let biggest = i == st.largest && s.delta > 0;
            // The step itself, from the previous level to this one, by component.
            for (name, lo, hi) in pieces(s, prev) {
                let c = match name {
                    Some(n) => rgb(palette.colour(n)),
                    None if biggest && s.parts.is_empty() => ALARM,
                    None => build,
                };
                plot.draw(Rectangle::new(
                    [(x - 0.38, k(lo as u64)), (x + 0.38, k(hi as u64))],
                    c.filled(),
                ))?;
            }
            if biggest {
                // The largest step outlined in red, whatever its components' colours.
                plot.draw(Rectangle::new(
                    [
                        (x - 0.40, k(prev.max(0) as u64)),
                        (x + 0.40, k(s.resident.max(0) as u64)),
                    ],
                    ALARM.stroke_width(3),
                ))?;
            }
            // What was already resident, faint, so the stairs read as a staircase.
            plot.draw(Rectangle::new(
                [(x - 0.38, 0.0), (x + 0.38, k(prev.max(0) as u64))],
                build.mix(0.22).filled(),
            ))?;
            prev = s.resident;
        }
        // The whole build, with what it allocates around the operators (arena, tables).
        let x = n as f64;
        let whole = Step {
            name: String::new(),
            delta: st.total,
            resident: st.total,
            parts: st.total_parts.clone(),
        };
        for (name, lo, hi) in pieces(&whole, 0) {
            let c = name.map_or(USED.mix(0.8), |n| rgb(palette.colour(n)).mix(1.0));
            plot.draw(Rectangle::new(
                [(x - 0.38, k(lo as u64)), (x + 0.38, k(hi as u64))],
                c.filled(),
            ))?;
        }
        plot.draw(Text::new(
            kib(st.total.max(0) as u64),
            (x - 0.45, k(st.total.max(0) as u64) + ymax * 0.06),
            (FONT, 12).into_font().color(&USED),
        ))?;
        if let Some(s) = st.largest_step() {
            let x = st.largest as f64;
            plot.draw(Text::new(
                format!("largest step: {} {}", s.name, delta(s.delta)),
                (x - 0.4, k(s.resident.max(0) as u64) + ymax * 0.075),
                (FONT, 14).into_font().style(FontStyle::Bold).color(&ALARM),
            ))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlife_report::model::Part;

    fn step(resident: i64, parts: &[(&str, u64)]) -> Step {
        Step {
            name: "op".into(),
            delta: 0,
            resident,
            parts: parts
                .iter()
                .map(|(n, b)| Part {
                    name: n.to_string(),
                    bytes: *b,
                    ..Part::default()
                })
                .collect(),
        }
    }

    #[test]
    fn a_step_is_its_components_stacked_from_the_level_before() {
        // 264 B kept: a 136-byte context and a 128-byte table, exactly the step.
        let s = step(1264, &[("operator contexts", 136), ("requant lut", 128)]);
        assert_eq!(
            pieces(&s, 1000),
            vec![
                (Some("operator contexts"), 1000, 1136),
                (Some("requant lut"), 1136, 1264)
            ]
        );
        // The trace accounts for less than the walk: the rest in the build's colour.
        let s = step(1300, &[("operator contexts", 136)]);
        assert_eq!(
            pieces(&s, 1000),
            vec![(Some("operator contexts"), 1000, 1136), (None, 1136, 1300)]
        );
        // The step also freed older blocks: its parts are cut at the level it reached.
        let s = step(1100, &[("arena", 300)]);
        assert_eq!(pieces(&s, 1000), vec![(Some("arena"), 1000, 1100)]);
        // A step down keeps nothing.
        let s = step(900, &[]);
        assert_eq!(pieces(&s, 1000), vec![(None, 900, 1000)]);
        // Untraced: the whole step in the build's colour.
        assert_eq!(pieces(&step(1200, &[]), 1000), vec![(None, 1000, 1200)]);
    }
}
