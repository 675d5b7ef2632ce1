//! Span labels: what the report and the scripts call a span (a layer, an operator), from the
//! firmware's own strings, and the names scripts give ([`SpanLabels`]). Target strings are
//! untrusted: they are bounded when read and their control characters escaped before anyone
//! prints them.
//!
//! `[labels.KEY]` (KEY a role or a span function) says which argument tells a function's spans
//! apart (`arg`, the second by default: the first is often `this` or a context) and where the
//! name is: `names`, a global array indexed by that argument (its elements strings, or structs
//! whose `field` is); or `string = true`, the argument is itself a `char *`.

use std::collections::BTreeMap;

use memlife_core::Memory;
use memlife_dwarf::Symbols;
use memlife_dwarf::value::{Value, read_c_string, read_variable};

use crate::config::SpanLabels as LabelSettings;

/// Longest name read from target memory (bytes).
pub const MAX_LABEL: usize = 64;

/// Span names by span function: those scripts gave (`t.label_spans`), and those `[labels]`
/// read from the firmware as spans ran, filed under their index.
#[derive(Debug, Default)]
pub struct SpanLabels {
    names: BTreeMap<String, Vec<String>>,
}

impl SpanLabels {
    /// Names the spans of `function` by their second argument (`names[arg]`), for reports.
    pub fn set(&mut self, function: &str, names: Vec<String>) {
        self.names.insert(function.to_string(), names);
    }

    /// Every name known, by span function.
    pub fn all(&self) -> &BTreeMap<String, Vec<String>> {
        &self.names
    }

    /// The argument that tells `function`'s spans apart and the span's name, when `settings`
    /// (its `[labels]`) gives one that can be read from `mem`.
    pub fn read(
        &mut self,
        settings: Option<&LabelSettings>,
        symbols: &Symbols,
        mem: &mut dyn Memory,
        function: &str,
        args: &[u64; 4],
    ) -> (u64, Option<String>) {
        let Some(cfg) = settings else {
            return (args[1], None);
        };
        let arg = args.get(cfg.arg).copied().unwrap_or(0);
        let label = if cfg.string {
            read_c_string(mem, arg, MAX_LABEL)
        } else if let Some(names) = &cfg.names {
            name_from_table(symbols, mem, names, cfg.field.as_deref(), arg)
        } else {
            None
        };
        let label = label.map(|s| escape(&s));
        if let Some(l) = &label {
            self.remember(function, arg, l);
        }
        (arg, label)
    }

    /// Files a label under its index in the report's `labels` (what `t.label_spans` fills),
    /// for readers of the JSON; a name the script gave stays. Gaps read as the report's own
    /// fallback, `function(index)`.
    fn remember(&mut self, function: &str, arg: u64, label: &str) {
        const MAX_INDEX: u64 = 1024;
        if arg > MAX_INDEX {
            return; // a string argument's address, not an index
        }
        let names = self.names.entry(function.to_string()).or_default();
        let i = arg as usize;
        while names.len() <= i {
            names.push(format!("{function}({})", names.len()));
        }
        if let Some(slot) = names.get_mut(i)
            && *slot == format!("{function}({i})")
        {
            *slot = label.to_string();
        }
    }
}

/// `names[index]` (or its `field`): a `char *`, read from target memory, or a `char[]`.
fn name_from_table(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    names: &str,
    field: Option<&str>,
    index: u64,
) -> Option<String> {
    let table = read_variable(symbols, mem, names).ok()?;
    let element = table.elements()?.get(usize::try_from(index).ok()?)?;
    let value = match field {
        Some(f) => element.field(f)?,
        None => element,
    };
    match value {
        Value::Pointer(p) => read_c_string(mem, *p, MAX_LABEL),
        Value::Array { elements, .. } => {
            let bytes: Vec<u8> = elements
                .iter()
                .map_while(|v| match v {
                    Value::Int(b) => u8::try_from(*b).ok(),
                    Value::UInt(b) => u8::try_from(*b).ok(),
                    _ => None,
                })
                .take_while(|b| *b != 0)
                .take(MAX_LABEL)
                .collect();
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        _ => None,
    }
}

/// `s` with every control character written as an escape (`\n`, `\t`, `\u{1b}`), so a string
/// from target memory cannot move a terminal's cursor or forge lines.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape("conv1"), "conv1");
        assert_eq!(escape("a\nb\t\u{1b}[2J"), "a\\nb\\t\\u{1b}[2J");
    }
}
