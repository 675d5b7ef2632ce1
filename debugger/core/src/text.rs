//! Text for a terminal: strings from a file, a target or a script (snapshot descriptions, C
//! strings read from RAM, check messages) may hold control characters that would drive the
//! terminal (an escape sequence clears the screen or rewrites earlier lines). [`printable`]
//! shows them as `\u{1b}`, keeping only newline and tab.

use std::borrow::Cow;

/// `s` with every control character except `\n` and `\t` written as `\u{XX}`.
pub fn printable(s: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_characters_cannot_reach_the_terminal() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        let shown = printable("snap \u{1b}[2J\u{1b}]0;owned\u{7}\r\u{9b}x");
        assert_eq!(shown, "snap \\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{d}\\u{9b}x");
        assert!(!shown.chars().any(|c| c.is_control()));
    }
}
