//! Text that came from a file, a target or a script (snapshot descriptions, C strings read from
//! RAM, check messages, layer names) on its way to a terminal or into XML.
//!
//! - [`printable`], for a terminal: control characters would drive it (an escape sequence clears
//!   the screen or rewrites earlier lines), bidirectional overrides reorder what is shown
//!   (U+202E makes `exe.txt` read `txt.exe`), zero-width characters hide text between visible
//!   characters. Each is shown as `\u{1b}`; only newline and tab pass.
//! - [`xml`], for XML and HTML text and attribute values (JUnit, the HTML report, SVG): the five
//!   markup characters become references, and every character XML 1.0 cannot carry (C0 controls
//!   but tab, newline and carriage return; U+FFFE and U+FFFF) becomes U+FFFD, as do the C1
//!   controls, DEL and the other noncharacters, which XML 1.0 allows but which CI tools
//!   reject or misread. Rust strings hold no lone surrogates: bytes from RAM are decoded lossily
//!   before they get here.

use std::borrow::Cow;

/// Whether `c` would change how a terminal shows the text around it: a control character other
/// than `\n` and `\t`, a bidirectional formatting character, or a zero-width one.
pub fn is_deceptive(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            // Marks, embeddings, overrides and isolates.
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            // Zero-width space, non-joiner, joiner, word joiner, byte order mark.
            | '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}'
        )
        || is_noncharacter(c)
}

/// Unicode's noncharacters: U+FDD0..U+FDEF and the last two code points of every plane.
fn is_noncharacter(c: char) -> bool {
    let v = u32::from(c);
    (0xfdd0..=0xfdef).contains(&v) || v & 0xfffe == 0xfffe
}

/// `s` with every [deceptive](is_deceptive) character written as `\u{XX}`.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_deceptive) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_deceptive(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether XML output may carry `c` as it is (see the module docs).
pub fn is_xml_safe(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => true,
        c if c.is_control() => false,
        c => !is_noncharacter(c),
    }
}

/// `s` escaped for XML and HTML text and quoted attribute values.
pub fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if is_xml_safe(c) => o.push(c),
            _ => o.push('\u{fffd}'),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_cannot_reach_the_terminal() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        let shown = printable("snap \u{1b}[2J\u{1b}]0;owned\u{7}\r\u{9b}x");
        assert_eq!(shown, "snap \\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{d}\\u{9b}x");
        assert!(!shown.chars().any(|c| c.is_control()));
    }

    #[test]
    fn reordering_and_invisible_characters_are_shown_as_escapes() {
        assert_eq!(
            printable("dump-\u{202e}nosj.exe \u{200b}x\u{feff}\u{ffff}"),
            "dump-\\u{202e}nosj.exe \\u{200b}x\\u{feff}\\u{ffff}"
        );
        // Letters of every script pass.
        assert_eq!(printable("conv₁ 畳み込み ñ"), "conv₁ 畳み込み ñ");
    }

    #[test]
    fn xml_carries_only_what_xml_1_0_allows() {
        assert_eq!(
            xml("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(xml("\u{ffff}ok\u{fffe}"), "\u{fffd}ok\u{fffd}");
        assert_eq!(
            xml("a\u{1}b\u{7f}c\u{85}d\u{9f}"),
            "a\u{fffd}b\u{fffd}c\u{fffd}d\u{fffd}"
        );
        assert_eq!(
            xml("\u{fdd0}\u{1fffe}\u{10ffff}"),
            "\u{fffd}\u{fffd}\u{fffd}"
        );
        assert_eq!(xml("tab\tnl\ncr\r ñ 😀"), "tab\tnl\ncr\r ñ 😀");
        // Every char of the output is an XML 1.0 Char.
        let all: String = (0..0x11_0000u32).filter_map(char::from_u32).collect();
        assert!(xml(&all).chars().all(|c| {
            let v = u32::from(c);
            matches!(v, 0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x1_0000..=0x10_ffff)
        }));
    }
}
