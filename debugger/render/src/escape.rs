//! Escaping: every string that reaches the page (symbols, file paths, check messages, script
//! names) goes through [`text`], in element content and in attributes alike.

/// Escapes `s` for HTML/SVG text and double- or single-quoted attributes; characters XML 1.0
/// cannot carry (and the controls it allows but tools reject) become U+FFFD
/// ([`memlife_core::text::xml`]).
pub fn text(s: &str) -> String {
    memlife_core::text::xml(s)
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
        assert_eq!(text("\u{ffff}layer"), "\u{fffd}layer");
    }
}
