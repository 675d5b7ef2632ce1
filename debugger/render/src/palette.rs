//! Component colours: one colour per peak component (a `[components]` name, or an allocation
//! site when nothing maps), the same in the peak bars, the heap map and the build stairs.
//!
//! The rule, on the component's name, lower-cased, first match wins:
//!
//! | the name contains                    | kind                    | colour        |
//! |--------------------------------------|-------------------------|---------------|
//! | `context`, `ctx`                     | operator contexts       | light green   |
//! | `relayout`, `re-layout`, `re_layout` | weight re-layout        | dark green    |
//! | `lut`, `lookup`                      | lookup tables           | yellow        |
//! | `pool`, `arena`                      | memory pool / arena     | orange        |
//! | `transient`, `temp`, `scratch`       | transient build helpers | grey          |
//!
//! Every other name takes the next colour of [`OTHERS`] in the order the page first meets it
//! (largest peak part first), so two components of one page differ until the ten are used up;
//! then the list repeats. None of these is the heap map's leak red or its free green, so a
//! coloured block still reads as used and not leaked.

/// A named kind of component, found by keyword in its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Operator contexts (per-operator state the build keeps).
    Context,
    /// Weights re-laid out for a kernel.
    Relayout,
    /// Lookup tables (requantisation, activation tables).
    Lookup,
    /// A memory pool or tensor arena.
    Pool,
    /// Buffers a build uses and frees.
    Transient,
}

/// The keywords of each kind, in the order they are tried.
const RULES: [(Kind, &[&str]); 5] = [
    (Kind::Context, &["context", "ctx"]),
    (Kind::Relayout, &["relayout", "re-layout", "re_layout"]),
    (Kind::Lookup, &["lut", "lookup"]),
    (Kind::Pool, &["pool", "arena"]),
    (Kind::Transient, &["transient", "temp", "scratch"]),
];

/// The kind a component name names, if any (see the module's table).
pub fn kind_of(name: &str) -> Option<Kind> {
    let lower = name.to_lowercase();
    RULES
        .iter()
        .find(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map(|(k, _)| *k)
}

/// The colour of a named kind.
pub fn kind_colour(kind: Kind) -> &'static str {
    match kind {
        Kind::Context => "#8fd68b",
        Kind::Relayout => "#1b6e35",
        Kind::Lookup => "#f2cb1d",
        Kind::Pool => "#f28a1e",
        Kind::Transient => "#9b9b9b",
    }
}

/// The colours of components no keyword names, taken in turn: blues, purples, teal, browns,
/// pinks, far from the named kinds' colours and from the heap map's red and light green.
pub const OTHERS: [&str; 10] = [
    "#3b6fc6", "#8a5bc4", "#21a0a8", "#a0522d", "#d46aa8", "#6d8fe0", "#5a3d8a", "#7ec3d6",
    "#c49a6c", "#34495e",
];

/// The colours of one page: named kinds by the rule, the others in order of first request.
#[derive(Debug, Default, Clone)]
pub struct Palette {
    others: Vec<String>,
}

impl Palette {
    /// A palette that has handed out no colour yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The colour of component `name`: its kind's, else the one it was given first, else the
    /// next free one of [`OTHERS`].
    pub fn colour(&mut self, name: &str) -> &'static str {
        if let Some(k) = kind_of(name) {
            return kind_colour(k);
        }
        let i = match self.others.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.others.push(name.to_string());
                self.others.len() - 1
            }
        };
        OTHERS[i % OTHERS.len()]
    }
}

/// `#rrggbb` as plotters' colour (the charts drawn with plotters use the same palette); a
/// malformed string is grey, never a panic.
pub fn rgb(hex: &str) -> plotters::style::RGBColor {
    let byte = |i: usize| {
        hex.get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(128)
    };
    if hex.len() == 7 && hex.starts_with('#') {
        plotters::style::RGBColor(byte(1), byte(3), byte(5))
    } else {
        plotters::style::RGBColor(128, 128, 128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_colours_parse_and_bad_ones_are_grey() {
        assert_eq!(rgb("#8fd68b"), plotters::style::RGBColor(0x8f, 0xd6, 0x8b));
        assert_eq!(rgb("nonsense"), plotters::style::RGBColor(128, 128, 128));
        assert_eq!(rgb("#zz0000"), plotters::style::RGBColor(128, 0, 0));
    }

    #[test]
    fn the_seed_kinds_get_their_colours_by_keyword() {
        for (name, kind) in [
            ("operator contexts", Kind::Context),
            ("op_ctx", Kind::Context),
            ("weight re-layout", Kind::Relayout),
            ("Relayout buffers", Kind::Relayout),
            ("requant LUT", Kind::Lookup),
            ("lookup tables", Kind::Lookup),
            ("memory pool", Kind::Pool),
            ("tensor arena", Kind::Pool),
            ("transient build helpers", Kind::Transient),
            ("parse temporaries", Kind::Transient),
            ("scratch", Kind::Transient),
        ] {
            assert_eq!(kind_of(name), Some(kind), "{name}");
        }
        assert_eq!(kind_colour(Kind::Context), "#8fd68b");
        assert_eq!(kind_colour(Kind::Relayout), "#1b6e35");
        assert_eq!(kind_colour(Kind::Lookup), "#f2cb1d");
        assert_eq!(kind_colour(Kind::Pool), "#f28a1e");
        assert_eq!(kind_colour(Kind::Transient), "#9b9b9b");
    }

    #[test]
    fn the_first_matching_rule_wins() {
        // Both "context" and "pool": contexts come first in the table.
        assert_eq!(kind_of("context pool"), Some(Kind::Context));
        assert_eq!(kind_of("weights"), None);
        assert_eq!(kind_of("file buffer"), None);
    }

    #[test]
    fn other_components_get_distinct_stable_colours() {
        let mut p = Palette::new();
        let w = p.colour("weights");
        let f = p.colour("file buffer");
        let i = p.colour("inflate buffer");
        assert_ne!(w, f);
        assert_ne!(f, i);
        assert_ne!(w, i);
        // Asked again, in any order: the same colour.
        assert_eq!(p.colour("file buffer"), f);
        assert_eq!(p.colour("weights"), w);
        // A named kind takes no slot of the others.
        assert_eq!(p.colour("tensor arena"), kind_colour(Kind::Pool));
        assert_eq!(p.colour("a fourth"), OTHERS[3]);
        // None of the others is a named kind's colour, the leak red or the free green.
        let named: Vec<&str> = RULES.iter().map(|(k, _)| kind_colour(*k)).collect();
        for c in OTHERS {
            assert!(!named.contains(&c), "{c}");
            assert_ne!(c, crate::heapmap::LEAKED);
            assert_ne!(c, crate::heapmap::FREE);
        }
        let distinct: std::collections::HashSet<&str> = OTHERS.iter().copied().collect();
        assert_eq!(distinct.len(), OTHERS.len());
    }
}
