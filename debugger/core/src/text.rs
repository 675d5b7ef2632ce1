//! Text for a terminal: strings from a file, a target or a script (snapshot descriptions, C
//! strings read from RAM, check messages, a gdb client's words) may hold characters that would
//! drive the terminal (an escape sequence clears the screen or rewrites earlier lines) or hide
//! what the text says (a right-to-left override reverses what follows it, a zero-width space
//! makes two different names look alike). [`printable`] shows them as `\u{202e}`, keeping only
//! newline and tab; [`is_hidden`] names the characters that are not control characters but are
//! escaped all the same.

use std::borrow::Cow;

/// Whether `c` changes how the text around it shows without showing itself: the bidirectional
/// controls (marks, embeddings, overrides, isolates), the zero-width characters (spaces,
/// joiners, the word joiner and invisible operators, the byte-order mark), the soft hyphen,
/// the Mongolian vowel separator and the Unicode line and paragraph separators.
pub fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// Whether `c` is shown escaped by [`printable`]: a control character other than `\n` and
/// `\t`, or a [hidden](is_hidden) one.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_hidden(c)
}

/// `s` with every [unsafe](is_unsafe) character written as `\u{XX}`.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{is_hidden, printable};

    #[test]
    fn control_characters_cannot_reach_the_terminal() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        let shown = printable("snap \u{1b}[2J\u{1b}]0;owned\u{7}\r\u{9b}x");
        assert_eq!(shown, "snap \\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{d}\\u{9b}x");
        assert!(!shown.chars().any(|c| c.is_control()));
    }

    /// A right-to-left override would show `exe.txt` as `txt.exe`; a zero-width space makes
    /// `heap` and `he\u{200b}ap` look the same.
    #[test]
    fn bidi_controls_and_zero_width_characters_are_shown_escaped() {
        assert_eq!(printable("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(printable("he\u{200b}ap"), "he\\u{200b}ap");
        for c in [
            '\u{200e}', '\u{2066}', '\u{2069}', '\u{feff}', '\u{2060}', '\u{61c}',
        ] {
            assert!(is_hidden(c), "{:x}", u32::from(c));
            assert!(!printable(&c.to_string()).contains(c), "{:x}", u32::from(c));
        }
        // Letters of right-to-left scripts and accents are text, not controls.
        assert_eq!(
            printable("\u{5e9}\u{5dc}\u{5d5}\u{5dd} e\u{301}"),
            "\u{5e9}\u{5dc}\u{5d5}\u{5dd} e\u{301}"
        );
    }
}
