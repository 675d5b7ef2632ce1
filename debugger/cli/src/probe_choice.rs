//! `--probe`: a USB debug probe (`VID:PID[:SERIAL]`) or the virtual SWD probe over QEMU
//! (`qemu`, `qemu:MACHINE`), which runs the same probe-rs code path without a board.

use std::fmt;

use crate::boards::ProbeSelector;

/// QEMU's STM32F405 board, what `--probe qemu` starts.
pub const DEFAULT_MACHINE: &str = "netduinoplus2";

/// Which probe `--chip` goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeChoice {
    /// A probe on USB.
    Usb(ProbeSelector),
    /// memlife's virtual SWD probe over a QEMU it starts with the ELF.
    Qemu {
        /// `qemu-system-arm -M` machine.
        machine: String,
    },
}

impl ProbeChoice {
    /// Parses `qemu`, `qemu:MACHINE` or `VID:PID[:SERIAL]`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t == "qemu" {
            return Ok(ProbeChoice::Qemu {
                machine: DEFAULT_MACHINE.to_string(),
            });
        }
        if let Some(machine) = t.strip_prefix("qemu:") {
            let ok = !machine.is_empty()
                && machine
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
            if !ok {
                return Err(format!(
                    "--probe {t}: give a QEMU machine name after `qemu:` (e.g. qemu:{DEFAULT_MACHINE})"
                ));
            }
            return Ok(ProbeChoice::Qemu {
                machine: machine.to_string(),
            });
        }
        ProbeSelector::parse(t)
            .map(ProbeChoice::Usb)
            .map_err(|e| e.to_string())
    }
}

impl fmt::Display for ProbeChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeChoice::Usb(sel) => write!(f, "{sel}"),
            ProbeChoice::Qemu { machine } => write!(f, "qemu:{machine}"),
        }
    }
}

#[cfg(all(test, feature = "probe"))]
mod tests {
    use super::*;

    #[test]
    fn qemu_and_usb_selectors() {
        assert_eq!(
            ProbeChoice::parse("qemu"),
            Ok(ProbeChoice::Qemu {
                machine: "netduinoplus2".into()
            })
        );
        assert_eq!(
            ProbeChoice::parse("qemu:olimex-stm32-h405"),
            Ok(ProbeChoice::Qemu {
                machine: "olimex-stm32-h405".into()
            })
        );
        assert!(ProbeChoice::parse("qemu:").unwrap_err().contains("machine"));
        assert!(ProbeChoice::parse("qemu:a b").is_err());
        assert!(matches!(
            ProbeChoice::parse("0483:374b"),
            Ok(ProbeChoice::Usb(_))
        ));
        assert!(ProbeChoice::parse("1234:zz").is_err());
    }
}
