//! The tables and keys `memlife.toml` may have, checked before the file is read into its types,
//! so that a typo is named with the nearest valid name instead of serde's list of every field.

use memlife_audit::config::nearest;

/// The tables of `memlife.toml` and their keys (`None`: any key, a name the user chooses).
const SCHEMA: &[(&str, Option<&[&str]>)] = &[
    (
        "target",
        Some(&[
            "qemu",
            "gdb",
            "chip",
            "probe",
            "speed",
            "connect_under_reset",
            "reset",
            "semihosting_dir",
            "halt_on",
        ]),
    ),
    ("phases", None),
    ("spans", None),
    ("labels", None),
    ("components", None),
    ("budgets", None),
    (
        "trace",
        Some(&[
            "method",
            "skip",
            "backtrace",
            "keep_cycles",
            "allocations",
            "requests",
            "scope",
        ]),
    ),
    ("lifecycle", Some(&["cycle_starts", "model"])),
    (
        "tensors",
        Some(&["table", "count", "name", "addr", "size", "first", "last"]),
    ),
    ("expect", Some(&["exit", "failing"])),
    // Checked by memlife_diff::Budgets, which knows the figures.
    ("diff", None),
];

/// Top-level keys that are values, not tables.
const TOP_KEYS: &[&str] = &[
    "elf",
    "allocator",
    "poisoning",
    "walk",
    "timeout",
    "fail_on_skip",
    "matrix",
];

/// Every table and key of a parsed file is one memlife knows; the error names the first that
/// is not and the nearest that is.
pub(crate) fn check_names(table: &toml::Table) -> Result<(), String> {
    let tables = || SCHEMA.iter().map(|(t, _)| *t);
    for (key, value) in table {
        if let Some((_, keys)) = SCHEMA.iter().find(|(t, _)| t == key) {
            let (Some(keys), Some(inner)) = (keys, value.as_table()) else {
                continue;
            };
            for k in inner.keys() {
                if !keys.contains(&k.as_str()) {
                    return Err(format!(
                        "unknown key `{k}` in [{key}]{}",
                        nearest(k, keys.iter().copied())
                    ));
                }
            }
        } else if !TOP_KEYS.contains(&key.as_str()) {
            let what = if value.is_table() {
                format!("unknown table [{key}]")
            } else {
                format!("unknown key `{key}`")
            };
            return Err(format!(
                "{what}{}",
                nearest(key, tables().chain(TOP_KEYS.iter().copied()))
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn check(text: &str) -> Result<(), String> {
        check_names(&toml::from_str::<toml::Table>(text).unwrap())
    }

    #[test]
    fn unknown_tables_and_keys_name_the_nearest_valid_one() {
        assert_eq!(
            check("[budget]\nx = 1").unwrap_err(),
            "unknown table [budget]; did you mean `budgets`?"
        );
        assert_eq!(
            check("[target]\nqemuu = \"x\"").unwrap_err(),
            "unknown key `qemuu` in [target]; did you mean `qemu`?"
        );
        assert_eq!(
            check("elff = \"a.elf\"").unwrap_err(),
            "unknown key `elff`; did you mean `elf`?"
        );
        assert!(
            check("[tensors]\ntabel = \"x\"")
                .unwrap_err()
                .contains("did you mean `table`?")
        );
        assert!(check("elf = \"a\"\n[phases]\nmy_role = \"f\"\n[budgets]\nany = 1").is_ok());
    }

    #[test]
    fn every_top_level_key_the_readme_lists_is_known() {
        // `walk` and `poisoning` were refused as unknown keys although memlife.toml documents
        // them (README, "memlife.toml").
        assert_eq!(
            check(
                "elf = \"a\"\nallocator = \"tlsf\"\npoisoning = \"light\"\nwalk = \"sparse\"\ntimeout = 5\nfail_on_skip = true\n"
            ),
            Ok(())
        );
    }
}
