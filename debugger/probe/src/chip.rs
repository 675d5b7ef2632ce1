//! `--chip NAME`: validated against probe-rs's target registry before any probe is touched, so a
//! typo says "unknown chip, did you mean ..." instead of a USB error.

use std::sync::Once;

use probe_rs::config::{CoreType, Registry, RegistryError};

use crate::ProbeError;

/// What memlife needs to know about a chip before attaching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChipInfo {
    /// The registry's full name (`STM32F405RGTx`), which may differ in case from what was typed.
    pub name: String,
    /// The cores, in probe-rs's core order (core 0 first).
    pub cores: Vec<ChipCore>,
}

/// One core of a chip, as probe-rs's registry describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChipCore {
    /// The registry's name for it (`main`, `cpu0`).
    pub name: String,
    /// Its architecture.
    pub core_type: CoreType,
}

impl ChipInfo {
    /// The architecture of core 0, the core memlife reads registers from and breaks on.
    pub fn core_type(&self) -> Option<CoreType> {
        self.cores.first().map(|c| c.core_type)
    }
}

/// Adds the chips of the optional plugins (ESP32 family with `esp32`) to probe-rs, once.
pub fn register_plugins() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(feature = "esp32")]
        probe_rs_espressif::register_plugin();
    });
}

/// The registry memlife attaches with: probe-rs's built-in targets plus the plugins'.
pub fn registry() -> Registry {
    register_plugins();
    Registry::from_builtin_families()
}

/// Every chip name the registry knows (package variants included), for suggestions.
pub fn chip_names(registry: &Registry) -> Vec<String> {
    registry
        .families()
        .iter()
        .flat_map(|f| f.variants.iter())
        .flat_map(|c| c.package_variants().cloned().collect::<Vec<_>>())
        .collect()
}

/// Resolves `name` (case-insensitive, as probe-rs matches it) to a chip of the registry.
pub fn resolve_chip(registry: &Registry, name: &str) -> Result<ChipInfo, ProbeError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ProbeError::UnknownChip {
            name: String::new(),
            suggestions: Vec::new(),
            hint: "",
        });
    }
    match registry.get_target_by_name(name) {
        Ok(target) => Ok(ChipInfo {
            name: target.name.clone(),
            cores: target
                .cores
                .iter()
                .map(|c| ChipCore {
                    name: c.name.clone(),
                    core_type: c.core_type,
                })
                .collect(),
        }),
        Err(RegistryError::ChipNotUnique(_, matches)) => Err(ProbeError::AmbiguousChip {
            name: name.to_string(),
            matches,
        }),
        Err(_) => Err(ProbeError::UnknownChip {
            name: name.to_string(),
            suggestions: suggest(name, &chip_names(registry), 5),
            hint: feature_hint(name),
        }),
    }
}

/// Without the `esp32` feature, the Espressif chips are not in the registry at all: say why.
fn feature_hint(name: &str) -> &'static str {
    if cfg!(feature = "esp32") || !name.to_ascii_lowercase().starts_with("esp") {
        ""
    } else {
        "Espressif chips need memlife built with `--features esp32`"
    }
}

/// Up to `max` names closest to `wanted`: names that contain it first, then by edit distance.
pub fn suggest(wanted: &str, names: &[String], max: usize) -> Vec<String> {
    let w = wanted.to_ascii_lowercase();
    let mut scored: Vec<(usize, &String)> = names
        .iter()
        .map(|n| {
            let l = n.to_ascii_lowercase();
            let score = if l.contains(&w) {
                l.len() - w.len()
            } else {
                // Compare against the name's prefix of the typed length too: `stm32f4O5` vs the
                // long `STM32F405RGTx` would otherwise be far apart.
                let prefix: String = l.chars().take(w.chars().count()).collect();
                100 + strsim::levenshtein(&w, &prefix).min(strsim::levenshtein(&w, &l))
            };
            (score, n)
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    // Far-off names are noise, not suggestions.
    let limit = 100 + (w.chars().count() / 3).max(1);
    let mut out: Vec<String> = Vec::new();
    for (score, n) in scored {
        if score > limit || out.len() == max {
            break;
        }
        if !out.iter().any(|o| o.eq_ignore_ascii_case(n)) {
            out.push(n.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn resolves_the_stm32_of_the_demo() {
        let chip = resolve_chip(&registry(), "STM32F405RGTx").unwrap();
        assert_eq!(chip.name, "STM32F405RGTx");
        assert_eq!(chip.core_type(), Some(CoreType::Armv7em));
    }

    #[test]
    fn names_are_case_insensitive() {
        let chip = resolve_chip(&registry(), "stm32f405rgtx").unwrap();
        assert_eq!(chip.name, "STM32F405RGTx");
    }

    #[test]
    fn unknown_chip_gets_suggestions() {
        let err = resolve_chip(&registry(), "STM32F4O5RGTx").unwrap_err();
        let ProbeError::UnknownChip { suggestions, .. } = &err else {
            panic!("{err}")
        };
        assert!(
            suggestions.iter().any(|s| s == "STM32F405RGTx"),
            "{suggestions:?}"
        );
        assert!(err.to_string().contains("STM32F405RGTx"), "{err}");
    }

    #[test]
    fn nonsense_gets_no_noise() {
        let err = resolve_chip(&registry(), "nosuchchip").unwrap_err();
        assert!(matches!(err, ProbeError::UnknownChip { .. }), "{err}");
        assert!(err.to_string().contains("nosuchchip"), "{err}");
    }

    #[test]
    fn empty_name_is_refused() {
        assert!(resolve_chip(&registry(), "  ").is_err());
    }

    #[cfg(feature = "esp32")]
    #[test]
    fn esp32s3_has_two_xtensa_cores() {
        let chip = resolve_chip(&registry(), "esp32s3").unwrap();
        assert_eq!(chip.cores.len(), 2, "{chip:?}");
        assert!(chip.cores.iter().all(|c| c.core_type == CoreType::Xtensa));
    }

    #[cfg(not(feature = "esp32"))]
    #[test]
    fn esp32s3_without_the_feature_says_which_feature() {
        let err = resolve_chip(&registry(), "esp32s3").unwrap_err();
        assert!(err.to_string().contains("--features esp32"), "{err}");
    }

    #[test]
    fn suggestions_rank_containing_names_first() {
        let names: Vec<String> = ["STM32F405RGTx", "STM32F407VGTx", "nRF52840_xxAA", "STM32F4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            suggest("stm32f40", &names, 2),
            ["STM32F405RGTx", "STM32F407VGTx"]
        );
        assert_eq!(suggest("nrf52480", &names, 3), ["nRF52840_xxAA"]);
        assert!(suggest("zzzzzzzzzz", &names, 3).is_empty());
    }
}
