//! [`signed_delta`], the one subtraction of two heap figures every view makes.

/// `to - from` in bytes, saturating at the ends of i64: heap figures come from target RAM (via
/// the report) and may be anything.
pub fn signed_delta(from: u64, to: u64) -> i64 {
    let d = i128::from(to) - i128::from(from);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    /// `as i64` turned a figure above i64::MAX negative and the subtraction overflowed.
    #[test]
    fn delta_saturates_on_huge_figures() {
        assert_eq!(super::signed_delta(1, 1 << 63), i64::MAX);
        assert_eq!(super::signed_delta(u64::MAX, 0), i64::MIN);
        assert_eq!(super::signed_delta(10, 4), -6);
    }
}
