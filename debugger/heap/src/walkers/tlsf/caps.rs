//! ESP-IDF heap capability masks (`MALLOC_CAP_*`, `esp_heap_caps.h`) decoded to names.

/// Bit → name, as `esp_heap_caps.h` numbers them.
const NAMES: &[(u32, &str)] = &[
    (0, "EXEC"),
    (1, "32BIT"),
    (2, "8BIT"),
    (3, "DMA"),
    (4, "PID2"),
    (5, "PID3"),
    (6, "PID4"),
    (7, "PID5"),
    (8, "PID6"),
    (9, "PID7"),
    (10, "SPIRAM"),
    (11, "INTERNAL"),
    (12, "DEFAULT"),
    (13, "IRAM_8BIT"),
    (14, "RETENTION"),
    (15, "RTCRAM"),
    (31, "INVALID"),
];

const EXEC: u32 = 1 << 0;
const BYTE: u32 = 1 << 2;
const SPIRAM: u32 = 1 << 10;
const RTCRAM: u32 = 1 << 15;

/// Names of the bits set in `mask`, low bit first; unnamed bits as `BIT<n>`.
pub fn names(mask: u32) -> Vec<String> {
    (0..32)
        .filter(|bit| mask & (1 << bit) != 0)
        .map(|bit| {
            NAMES
                .iter()
                .find(|(b, _)| *b == bit)
                .map_or_else(|| format!("BIT{bit}"), |(_, n)| (*n).to_string())
        })
        .collect()
}

/// The bit a capability name (without `MALLOC_CAP_`) stands for.
pub fn bit(name: &str) -> Option<u32> {
    NAMES.iter().find(|(_, n)| *n == name).map(|(b, _)| *b)
}

/// The memory type a region's capabilities describe, as ESP-IDF's memory-layout tables name
/// them (PSRAM for `SPIRAM`).
pub fn kind(mask: u32) -> &'static str {
    if mask & SPIRAM != 0 {
        "PSRAM"
    } else if mask & RTCRAM != 0 {
        "RTCRAM"
    } else if mask & EXEC != 0 && mask & BYTE != 0 {
        "D/IRAM"
    } else if mask & EXEC != 0 {
        "IRAM"
    } else {
        "DRAM"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_decode_to_names_and_kinds() {
        // ESP32-S3 main D/IRAM heap: DMA|8BIT|32BIT|INTERNAL|DEFAULT and EXEC at lower priority.
        let diram = (1 << 3) | (1 << 2) | (1 << 1) | (1 << 11) | (1 << 12) | 1;
        assert_eq!(
            names(diram),
            ["EXEC", "32BIT", "8BIT", "DMA", "INTERNAL", "DEFAULT"]
        );
        assert_eq!(kind(diram), "D/IRAM");
        assert_eq!(kind((1 << 10) | (1 << 2) | (1 << 1)), "PSRAM");
        assert_eq!(kind(1 | (1 << 1) | (1 << 11)), "IRAM");
        assert_eq!(kind((1 << 2) | (1 << 3)), "DRAM");
        assert_eq!(names(1 << 20), ["BIT20"]);
    }
}
