//! Which target an audit runs on: the flags' when they name one, else memlife.toml's
//! `[target]`; the server's reset command and the semihosting directory come from the file
//! either way (a flag wins for the directory). The firmware's serial output, from a QEMU
//! memlife starts, goes where `--serial` says, by default into the audit's output folder.

use std::path::{Path, PathBuf};

use crate::error::PlanError;
use crate::file::TargetTable;
use crate::flags::TargetFlags;
pub use crate::serial::SerialChoice;

/// A debug probe as written (`VID:PID[:SERIAL]`, `qemu[:MACHINE]`): the command line's probe
/// backend reads it, and says where it was written when it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeText {
    /// The text.
    pub text: String,
    /// It came from memlife.toml's `[target] probe` (else from `--probe`).
    pub from_file: bool,
}

impl ProbeText {
    /// Where it was written, for messages: `memlife.toml [target] probe` or `--probe`.
    pub fn origin(&self) -> &'static str {
        if self.from_file {
            "memlife.toml [target] probe"
        } else {
            "--probe"
        }
    }
}

/// The target of an audit, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetPlan {
    /// A running GDB server.
    pub gdb: Option<String>,
    /// A QEMU machine memlife starts.
    pub qemu: Option<String>,
    /// An offline snapshot.
    pub snapshot: Option<PathBuf>,
    /// A probe-rs chip.
    pub chip: Option<String>,
    /// With `chip`: which debug probe.
    pub probe: Option<ProbeText>,
    /// With `chip`: SWD/JTAG clock in kHz.
    pub speed: Option<u32>,
    /// With `chip`: hold reset while attaching.
    pub connect_under_reset: bool,
    /// With `gdb` or `qemu`: the server's reset command, when not the one memlife would choose.
    pub reset: Option<String>,
    /// Seconds a command may talk to a GDB server in all.
    pub deadline: Option<f64>,
    /// The one directory the firmware's semihosting calls may use.
    pub semihosting_dir: Option<PathBuf>,
    /// Where the serial output of the QEMU memlife starts goes; `None`: discarded.
    pub serial: Option<SerialChoice>,
}

impl TargetPlan {
    /// Flags win over the file: a target the flags name is used with their options; otherwise
    /// the file's.
    pub(crate) fn resolve(flags: TargetFlags, file: &TargetTable) -> Result<Self, PlanError> {
        let semihosting_dir = flags
            .semihosting_dir
            .clone()
            .or_else(|| file.semihosting_dir.clone());
        if flags.is_given() {
            return Ok(TargetPlan {
                gdb: flags.gdb,
                qemu: flags.qemu,
                snapshot: flags.snapshot,
                chip: flags.chip,
                probe: flags.probe.map(|text| ProbeText {
                    text,
                    from_file: false,
                }),
                speed: flags.speed,
                connect_under_reset: flags.connect_under_reset,
                reset: file.reset.clone(),
                deadline: flags.deadline,
                semihosting_dir,
                serial: flags.serial,
            });
        }
        if file.chip.is_none()
            && (file.probe.is_some() || file.speed.is_some() || file.connect_under_reset)
        {
            return Err(PlanError::Usage(
                "memlife.toml [target]: probe, speed and connect_under_reset need chip = \"NAME\""
                    .into(),
            ));
        }
        Ok(TargetPlan {
            gdb: file.gdb.clone(),
            qemu: file.qemu.clone(),
            snapshot: None,
            chip: file.chip.clone(),
            probe: file.probe.clone().map(|text| ProbeText {
                text,
                from_file: true,
            }),
            speed: file.speed,
            connect_under_reset: file.connect_under_reset,
            reset: file.reset.clone(),
            deadline: flags.deadline,
            semihosting_dir,
            serial: flags.serial,
        })
    }

    /// The firmware's serial output for an audit writing its files to `out_dir`: `--serial`
    /// when given (only for the QEMU memlife starts), else OUT/serial.txt when memlife starts
    /// QEMU.
    pub(crate) fn with_serial_default(mut self, out_dir: &Path) -> Result<Self, PlanError> {
        match (&self.qemu, &self.serial) {
            (None, Some(_)) => Err(PlanError::Usage(
                "--serial needs --qemu (or qemu = \"MACHINE\" in [target]): it is where the QEMU memlife starts sends the firmware's serial output".into(),
            )),
            (Some(_), None) => {
                self.serial = Some(SerialChoice::File(out_dir.join("serial.txt")));
                Ok(self)
            }
            _ => Ok(self),
        }
    }

    /// The target as the settings name it, before memlife is connected to it.
    pub fn describe(&self) -> String {
        if let Some(addr) = &self.gdb {
            format!("gdb-remote {addr}")
        } else if let Some(machine) = &self.qemu {
            format!("qemu-system-arm -M {machine}")
        } else if let Some(chip) = &self.chip {
            format!("probe-rs {chip}")
        } else if let Some(path) = &self.snapshot {
            format!("snapshot {}", path.display())
        } else {
            "no target".to_string()
        }
    }

    /// The board or machine, when the settings name one.
    pub fn board(&self) -> Option<String> {
        self.qemu.clone().or_else(|| self.chip.clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn table(text: &str) -> TargetTable {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_semihosting_dir_comes_from_the_flag_or_the_file() {
        let file = table("qemu = \"netduinoplus2\"\nsemihosting_dir = \"/cfg/sh\"\n");
        let from_file = TargetPlan::resolve(TargetFlags::default(), &file).unwrap();
        assert_eq!(from_file.semihosting_dir, Some(PathBuf::from("/cfg/sh")));
        assert_eq!(from_file.qemu.as_deref(), Some("netduinoplus2"));
        let flags = TargetFlags {
            qemu: Some("netduinoplus2".into()),
            semihosting_dir: Some("/srv/x".into()),
            ..TargetFlags::default()
        };
        let flagged = TargetPlan::resolve(flags, &file).unwrap();
        assert_eq!(flagged.semihosting_dir, Some(PathBuf::from("/srv/x")));
        let none = TargetPlan::resolve(TargetFlags::default(), &TargetTable::default()).unwrap();
        assert_eq!(none.semihosting_dir, None);
        assert_eq!(none.describe(), "no target");
    }

    #[test]
    fn the_configured_reset_command_reaches_the_target_with_or_without_target_flags() {
        let file = table("gdb = \"127.0.0.1:3333\"\nreset = \"reset init\"\n");
        let from_file = TargetPlan::resolve(TargetFlags::default(), &file).unwrap();
        assert_eq!(from_file.gdb.as_deref(), Some("127.0.0.1:3333"));
        assert_eq!(from_file.reset.as_deref(), Some("reset init"));
        assert_eq!(from_file.describe(), "gdb-remote 127.0.0.1:3333");
        let flags = TargetFlags {
            gdb: Some("h:1".into()),
            ..TargetFlags::default()
        };
        let from_flags = TargetPlan::resolve(flags.clone(), &file).unwrap();
        assert_eq!(from_flags.gdb.as_deref(), Some("h:1"));
        assert_eq!(from_flags.reset.as_deref(), Some("reset init"));
        let none = TargetPlan::resolve(flags, &TargetTable::default()).unwrap();
        assert_eq!(none.reset, None);
    }

    #[test]
    fn probe_options_in_the_file_need_a_chip_and_say_where_they_came_from() {
        let e = TargetPlan::resolve(TargetFlags::default(), &table("probe = \"0483:374b\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("need chip = \"NAME\""), "{e}");
        let board = table("chip = \"STM32F405RGTx\"\nprobe = \"0483:374b\"\nspeed = 4000\n");
        let plan = TargetPlan::resolve(TargetFlags::default(), &board).unwrap();
        let probe = plan.probe.clone().unwrap();
        assert_eq!(probe.text, "0483:374b");
        assert_eq!(probe.origin(), "memlife.toml [target] probe");
        assert_eq!(plan.board().as_deref(), Some("STM32F405RGTx"));
        assert_eq!(plan.speed, Some(4000));
    }

    #[test]
    fn the_serial_output_defaults_to_the_output_folder_only_for_the_qemu_memlife_starts() {
        let qemu = table("qemu = \"mps2-an385\"\n");
        let out = Path::new("memlife-out");
        let default = TargetPlan::resolve(TargetFlags::default(), &qemu)
            .and_then(|t| t.with_serial_default(out))
            .unwrap();
        assert_eq!(
            default.serial,
            Some(SerialChoice::File(out.join("serial.txt")))
        );
        let flags = TargetFlags {
            serial: Some(SerialChoice::None),
            ..TargetFlags::default()
        };
        let chosen = TargetPlan::resolve(flags.clone(), &qemu)
            .and_then(|t| t.with_serial_default(out))
            .unwrap();
        assert_eq!(chosen.serial, Some(SerialChoice::None));
        let gdb = table("gdb = \"127.0.0.1:3333\"\n");
        let remote = TargetPlan::resolve(TargetFlags::default(), &gdb)
            .and_then(|t| t.with_serial_default(out))
            .unwrap();
        assert_eq!(remote.serial, None);
        let e = TargetPlan::resolve(flags, &gdb)
            .and_then(|t| t.with_serial_default(out))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--serial needs --qemu"), "{e}");
    }
}
