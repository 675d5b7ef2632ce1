//! Escaping: every string that reaches the page (symbols, file paths, check messages, script
//! names) goes through [`text`], in element content and in attributes alike.

/// Escapes `s` for HTML/SVG text and double- or single-quoted attributes; control characters
/// other than newline and tab become numeric references (or vanish when XML forbids them).
pub fn text(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\n' | '\t' => o.push(ch),
            // XML 1.0 has no way to write these; a symbol never needs them.
            c if (c as u32) < 0x20 || c == '\u{7f}' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            text("<script>a&b</script> \"x\" 'y'"),
            "&lt;script&gt;a&amp;b&lt;/script&gt; &quot;x&quot; &#39;y&#39;"
        );
    }

    #[test]
    fn control_characters_do_not_reach_the_page() {
        assert_eq!(text("a\u{1}b\nc"), "a\u{fffd}b\nc");
    }
}
