//! Byte figures as the pages print them.

/// Bytes as KiB with one decimal (`10.5 KiB`).
pub fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// A signed byte delta as `+9.3 KiB` / `-368 B`: small deltas stay in bytes, where a header's
/// worth matters.
pub fn delta(bytes: i64) -> String {
    if bytes.unsigned_abs() < 1024 {
        format!("{bytes:+} B")
    } else {
        format!("{:+.1} KiB", bytes as f64 / 1024.0)
    }
}
