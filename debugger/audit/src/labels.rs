//! Span labels: what the report and the scripts call a span (a layer, an operator), from the
//! firmware's own strings. Target strings are untrusted: they are bounded when read and their
//! control characters escaped before anyone prints them.

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
