//! `--probe VID:PID[:SERIAL]`: which debug probe to use when several are attached.
//!
//! probe-rs has its own parser, but its messages ("invalid digit found in string") do not say
//! which part of the selector is wrong; this one checks each part and names it, then converts.

use std::fmt;

use probe_rs::probe::DebugProbeSelector;

/// Why a `--probe` value is not a selector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// No `:` between the vendor and the product id.
    #[error("probe selector `{selector}` is not VID:PID[:SERIAL] (e.g. 0483:374b)")]
    NotVidPid {
        /// The selector as given (trimmed).
        selector: String,
    },
    /// The vendor or the product id is not a 16-bit hex number.
    #[error("probe selector `{selector}`: {part} {problem}")]
    BadId {
        /// The selector as given (trimmed).
        selector: String,
        /// Which id.
        part: IdPart,
        /// What is wrong with it.
        problem: IdProblem,
    },
    /// A `:` after the product id with nothing after it.
    #[error("probe selector `{selector}`: the serial number is empty")]
    EmptySerial {
        /// The selector as given (trimmed).
        selector: String,
    },
}

/// One of the two USB ids of a selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdPart {
    /// The vendor id (before the first `:`).
    Vendor,
    /// The product id (after it).
    Product,
}

impl fmt::Display for IdPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdPart::Vendor => "vendor id",
            IdPart::Product => "product id",
        })
    }
}

/// What is wrong with a USB id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdProblem {
    /// Nothing was given.
    Empty,
    /// Not 1 to 4 hex digits (with an optional `0x`).
    NotHex {
        /// The id as given.
        text: String,
    },
}

impl fmt::Display for IdProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdProblem::Empty => f.write_str("is empty"),
            IdProblem::NotHex { text } => write!(f, "`{text}` is not 1 to 4 hex digits"),
        }
    }
}

/// A parsed `VID:PID[:SERIAL]` (hex vendor and product id, optional serial number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSelector {
    /// USB vendor id.
    pub vendor_id: u16,
    /// USB product id.
    pub product_id: u16,
    /// Serial number; may itself contain colons (ESP USB-JTAG serials are MAC addresses).
    pub serial: Option<String>,
}

impl ProbeSelector {
    /// Parses `VID:PID` or `VID:PID:SERIAL`, VID and PID as 1 to 4 hex digits (`0483:374b`).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let s = s.trim();
        let mut parts = s.splitn(3, ':');
        let vid = parts.next().unwrap_or_default();
        let Some(pid) = parts.next() else {
            return Err(SelectorError::NotVidPid {
                selector: s.to_string(),
            });
        };
        let serial = parts.next();
        let id = |text: &str, part: IdPart| {
            hex16(text).map_err(|problem| SelectorError::BadId {
                selector: s.to_string(),
                part,
                problem,
            })
        };
        let vendor_id = id(vid, IdPart::Vendor)?;
        let product_id = id(pid, IdPart::Product)?;
        let serial = match serial {
            Some("") => {
                return Err(SelectorError::EmptySerial {
                    selector: s.to_string(),
                });
            }
            Some(sn) => Some(sn.to_string()),
            None => None,
        };
        Ok(ProbeSelector {
            vendor_id,
            product_id,
            serial,
        })
    }

    /// The probe-rs selector with the same meaning.
    pub fn to_probe_rs(&self) -> DebugProbeSelector {
        DebugProbeSelector {
            vendor_id: self.vendor_id,
            product_id: self.product_id,
            interface: None,
            serial_number: self.serial.clone(),
        }
    }
}

impl std::str::FromStr for ProbeSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, SelectorError> {
        Self::parse(s)
    }
}

impl fmt::Display for ProbeSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:04x}", self.vendor_id, self.product_id)?;
        if let Some(sn) = &self.serial {
            write!(f, ":{sn}")?;
        }
        Ok(())
    }
}

fn hex16(s: &str) -> Result<u16, IdProblem> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.is_empty() {
        return Err(IdProblem::Empty);
    }
    let not_hex = || IdProblem::NotHex {
        text: s.to_string(),
    };
    if digits.len() > 4 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(not_hex());
    }
    // 1 to 4 hex digits always fit; the error is kept for the type's sake.
    u16::from_str_radix(digits, 16).map_err(|_| not_hex())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn vid_pid() {
        let s = ProbeSelector::parse("0483:374b").unwrap();
        assert_eq!(
            (s.vendor_id, s.product_id, s.serial),
            (0x0483, 0x374b, None)
        );
        assert_eq!(
            ProbeSelector::parse("0x483:0X374B").unwrap().product_id,
            0x374b
        );
    }

    #[test]
    fn serial_keeps_its_colons() {
        let s = ProbeSelector::parse("303a:1001:DC:DA:0C:D3:FE:D8").unwrap();
        assert_eq!(s.serial.as_deref(), Some("DC:DA:0C:D3:FE:D8"));
        assert_eq!(s.to_string(), "303a:1001:DC:DA:0C:D3:FE:D8");
        let p = s.to_probe_rs();
        assert_eq!((p.vendor_id, p.product_id), (0x303a, 0x1001));
        assert_eq!(p.serial_number.as_deref(), Some("DC:DA:0C:D3:FE:D8"));
    }

    #[test]
    fn invalid_pid_is_named() {
        let e = ProbeSelector::parse("1234:zz").unwrap_err();
        assert_eq!(
            e,
            SelectorError::BadId {
                selector: "1234:zz".into(),
                part: IdPart::Product,
                problem: IdProblem::NotHex { text: "zz".into() }
            }
        );
        let text = e.to_string();
        assert!(
            text.contains("product id") && text.contains("`zz`"),
            "{text}"
        );
        assert_eq!(
            text,
            "probe selector `1234:zz`: product id `zz` is not 1 to 4 hex digits"
        );
    }

    #[test]
    fn invalid_vid_is_named() {
        let e = ProbeSelector::parse("12345:1").unwrap_err();
        assert!(
            matches!(
                e,
                SelectorError::BadId {
                    part: IdPart::Vendor,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("vendor id"), "{e}");
        let e = ProbeSelector::parse(":1").unwrap_err();
        assert!(
            matches!(
                e,
                SelectorError::BadId {
                    part: IdPart::Vendor,
                    problem: IdProblem::Empty,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("vendor id is empty"), "{e}");
    }

    #[test]
    fn invalid_missing_pid() {
        let e = ProbeSelector::parse(" 0483 ").unwrap_err();
        assert_eq!(
            e,
            SelectorError::NotVidPid {
                selector: "0483".into()
            }
        );
        assert!(e.to_string().contains("VID:PID"), "{e}");
    }

    #[test]
    fn invalid_empty_serial() {
        let e = ProbeSelector::parse("0483:374b:").unwrap_err();
        assert_eq!(
            e,
            SelectorError::EmptySerial {
                selector: "0483:374b:".into()
            }
        );
        assert!(e.to_string().contains("serial"), "{e}");
    }

    #[test]
    fn from_str_is_parse() {
        let s: ProbeSelector = "0483:374b".parse().unwrap();
        assert_eq!((s.vendor_id, s.product_id), (0x0483, 0x374b));
        assert!("0483".parse::<ProbeSelector>().is_err());
    }
}
