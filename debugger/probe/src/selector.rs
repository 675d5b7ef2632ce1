//! `--probe VID:PID[:SERIAL]`: which debug probe to use when several are attached.
//!
//! probe-rs has its own parser, but its messages ("invalid digit found in string") do not say
//! which part of the selector is wrong; this one checks each part and names it, then converts.

use std::fmt;

use probe_rs::probe::DebugProbeSelector;

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
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let mut parts = s.splitn(3, ':');
        let vid = parts.next().unwrap_or_default();
        let Some(pid) = parts.next() else {
            return Err(format!(
                "probe selector `{s}` is not VID:PID[:SERIAL] (e.g. 0483:374b)"
            ));
        };
        let serial = parts.next();
        let vendor_id =
            hex16(vid).map_err(|why| format!("probe selector `{s}`: vendor id {why}"))?;
        let product_id =
            hex16(pid).map_err(|why| format!("probe selector `{s}`: product id {why}"))?;
        let serial = match serial {
            Some("") => return Err(format!("probe selector `{s}`: the serial number is empty")),
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
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
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

fn hex16(s: &str) -> Result<u16, String> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.is_empty() {
        return Err("is empty".into());
    }
    if digits.len() > 4 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("`{s}` is not 1 to 4 hex digits"));
    }
    u16::from_str_radix(digits, 16).map_err(|e| format!("`{s}`: {e}"))
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
        assert!(e.contains("product id") && e.contains("`zz`"), "{e}");
    }

    #[test]
    fn invalid_vid_is_named() {
        let e = ProbeSelector::parse("12345:1").unwrap_err();
        assert!(e.contains("vendor id"), "{e}");
        assert!(
            ProbeSelector::parse(":1")
                .unwrap_err()
                .contains("vendor id is empty")
        );
    }

    #[test]
    fn invalid_missing_pid() {
        assert!(
            ProbeSelector::parse("0483")
                .unwrap_err()
                .contains("VID:PID")
        );
    }

    #[test]
    fn invalid_empty_serial() {
        assert!(
            ProbeSelector::parse("0483:374b:")
                .unwrap_err()
                .contains("serial")
        );
    }
}
