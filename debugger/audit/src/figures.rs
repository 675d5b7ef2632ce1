//! Figures read from the target (or a snapshot file) may be anything: differences between them
//! saturate instead of wrapping or overflowing.

/// `to - from` as a signed figure, saturated at the ends of `i64`.
pub(crate) fn delta(from: u64, to: u64) -> i64 {
    let d = i128::from(to) - i128::from(from);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_saturate() {
        assert_eq!(delta(1, u64::MAX), i64::MAX);
        assert_eq!(delta(u64::MAX, 0), i64::MIN);
        assert_eq!(delta(10, 7), -3);
    }
}
