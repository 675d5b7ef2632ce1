//! Errors of opening a probe session, and how probe-rs errors become [`TargetError`]s.

use memlife_core::TargetError;

/// Why a probe-rs target could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The chip name is not in probe-rs's registry.
    #[error("unknown chip `{name}`{}", unknown_chip_text(suggestions, hint))]
    UnknownChip {
        /// What was asked for.
        name: String,
        /// Close names from the registry.
        suggestions: Vec<String>,
        /// Why the registry may lack it (a cargo feature), or empty.
        hint: &'static str,
    },
    /// The chip name matches several chips.
    #[error("chip name `{name}` is ambiguous; it matches {matches}")]
    AmbiguousChip {
        /// What was asked for.
        name: String,
        /// The matching names, as probe-rs lists them.
        matches: String,
    },
    /// No attached probe matches.
    #[error(
        "no debug probe found{}: {}",
        looked_for(selector),
        no_probe_hint(found)
    )]
    NoProbe {
        /// The `--probe` selector, if one was given.
        selector: Option<String>,
        /// The probes that are attached (none match the selector).
        found: Vec<String>,
    },
    /// Several probes are attached and none was chosen.
    #[error("{} debug probes are attached; choose one with --probe VID:PID[:SERIAL]: {}", found.len(), found.join("; "))]
    SeveralProbes {
        /// The attached probes.
        found: Vec<String>,
    },
    /// The probe was found but could not be opened, configured or attached.
    #[error("{context}")]
    Probe {
        /// What memlife was doing.
        context: String,
        /// probe-rs's error.
        #[source]
        source: probe_rs::Error,
    },
    /// The session opened, then the first request on it failed.
    #[error("{context}")]
    Target {
        /// What memlife was doing.
        context: String,
        /// The error of the request.
        #[source]
        source: TargetError,
    },
}

fn unknown_chip_text(suggestions: &[String], hint: &str) -> String {
    if !hint.is_empty() {
        format!(": {hint}")
    } else if suggestions.is_empty() {
        " (no similar name in probe-rs's chip list; names look like STM32F405RGTx, nRF52840_xxAA, esp32s3)".into()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}

fn looked_for(selector: &Option<String>) -> String {
    match selector {
        Some(s) => format!(" matching --probe {s}"),
        None => " (looked for any USB probe probe-rs supports: ST-Link, J-Link, CMSIS-DAP, ESP USB-JTAG, ...)".into(),
    }
}

fn no_probe_hint(found: &[String]) -> String {
    if found.is_empty() {
        format!(
            "none is attached, or it is not accessible (on Linux, install probe-rs's udev rules; `memlife probes` lists what is visible){}",
            crate::usb::usb_hint()
        )
    } else {
        format!("attached are {}", found.join("; "))
    }
}

/// A probe-rs error as a core [`TargetError`], keeping probe-rs's error as the source. A
/// target that ended under the probe (the virtual probe's firmware exited: it puts the core's
/// [`TargetError`] under its own error, which probe-rs wraps) is that end, not a broken link,
/// so that whoever started the target can start it again.
pub fn target_error(context: &str, e: probe_rs::Error) -> TargetError {
    if let Some(ended) = ended_under(&e) {
        return ended;
    }
    match e {
        // probe-rs gives no duration; its halt and memory timeouts are a few hundred ms.
        probe_rs::Error::Timeout => {
            TargetError::timeout(std::time::Duration::from_millis(500), "a probe-rs request")
        }
        other => TargetError::transport(context, other),
    }
}

/// The end of the target (`Exited`, `Gone`) found anywhere in `e`'s source chain.
fn ended_under(e: &probe_rs::Error) -> Option<TargetError> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        match err.downcast_ref::<TargetError>() {
            Some(TargetError::Exited(status)) => return Some(TargetError::Exited(*status)),
            Some(TargetError::Gone(why)) => return Some(TargetError::Gone(why.clone())),
            _ => {}
        }
        cur = err.source();
    }
    None
}

/// Memory access errors carry the address: an access fault is [`TargetError::Unmapped`], not a
/// dead link, so a walker can report a bad pointer instead of giving up on the target.
pub fn memory_error(addr: u64, len: usize, e: probe_rs::Error) -> TargetError {
    if is_bus_fault(&e) {
        TargetError::Unmapped { addr, len }
    } else {
        target_error(&format!("accessing {len} bytes at {addr:#010x}"), e)
    }
}

/// Whether the access port answered FAULT (a bus fault at the address: no memory there) or the
/// address is outside its space. probe-rs's MEM-AP layer wraps a data transfer's error in
/// `ArmError::AccessPort`, so the answer is looked for along the whole source chain.
fn is_bus_fault(e: &probe_rs::Error) -> bool {
    use probe_rs::architecture::arm::{ArmError, DapError};
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(ArmError::Dap(DapError::FaultResponse) | ArmError::OutOfBounds) =
            err.downcast_ref::<ArmError>()
        {
            return true;
        }
        cur = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(e: &dyn std::error::Error) -> Vec<String> {
        let mut out = vec![e.to_string()];
        let mut cur = e.source();
        while let Some(c) = cur {
            out.push(c.to_string());
            cur = c.source();
        }
        out
    }

    #[test]
    fn probe_rs_errors_stay_the_source_and_print_once() {
        let e = target_error(
            "halting core 0",
            probe_rs::Error::Other("SWD wire fault".into()),
        );
        let lines = chain(&e);
        assert_eq!(lines[0], "connection to the target failed: halting core 0");
        assert!(lines[1].contains("SWD wire fault"), "{lines:?}");
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("SWD wire fault"))
                .count(),
            1
        );
        let opened = ProbeError::Probe {
            context: "attaching to STM32F405RGTx".into(),
            source: probe_rs::Error::Other("no ack".into()),
        };
        let lines = chain(&opened);
        assert_eq!(lines[0], "attaching to STM32F405RGTx");
        assert_eq!(
            lines.iter().filter(|l| l.contains("no ack")).count(),
            1,
            "{lines:?}"
        );
    }

    /// A DRW transfer's error as probe-rs's MEM-AP layer returns it from `read_32`.
    fn drw_read_error(source: probe_rs::architecture::arm::ArmError) -> probe_rs::Error {
        use probe_rs::architecture::arm::ap::{AccessPortError, DRW};
        use probe_rs::architecture::arm::{ArmError, FullyQualifiedApAddress};
        probe_rs::Error::Arm(ArmError::from_access_port(
            AccessPortError::register_read_error::<DRW, _>(source),
            &FullyQualifiedApAddress::v1_with_default_dp(0),
        ))
    }

    #[test]
    fn a_fault_answer_under_the_access_port_is_unmapped_memory() {
        use probe_rs::architecture::arm::{ArmError, DapError};
        let e = memory_error(
            0x6000_0000,
            4,
            drw_read_error(ArmError::Dap(DapError::FaultResponse)),
        );
        assert!(
            matches!(
                e,
                TargetError::Unmapped {
                    addr: 0x6000_0000,
                    len: 4
                }
            ),
            "{e:?}"
        );
        // Any other failure of the transfer is the link's.
        let e = memory_error(
            0x2000_0000,
            4,
            drw_read_error(ArmError::Dap(DapError::NoAcknowledge)),
        );
        assert_eq!(e.kind(), memlife_core::ErrorKind::Transport, "{e}");
    }

    /// A probe's own error that carries the end of the target as its source, as the virtual
    /// probe's does once the firmware exited.
    #[derive(Debug, thiserror::Error)]
    #[error("the firmware exited with status {0}")]
    struct EndedProbe(i32, #[source] TargetError);
    impl probe_rs::probe::ProbeError for EndedProbe {}

    #[test]
    fn an_end_under_the_probe_is_the_targets_end_not_a_broken_link() {
        use probe_rs::architecture::arm::ArmError;
        use probe_rs::probe::DebugProbeError;
        let ended = |status| {
            DebugProbeError::ProbeSpecific(EndedProbe(status, TargetError::Exited(status)).into())
        };
        // As the status poll of `wait_for_stop` sees it, and under a MEM-AP transfer.
        let e = target_error("reading core status", probe_rs::Error::Probe(ended(0)));
        assert!(matches!(e, TargetError::Exited(0)), "{e:?}");
        let e = memory_error(0x2000_0000, 4, drw_read_error(ArmError::Probe(ended(3))));
        assert!(matches!(e, TargetError::Exited(3)), "{e:?}");
        assert_eq!(e.kind(), memlife_core::ErrorKind::Gone);
    }

    #[test]
    fn a_fault_answer_is_unmapped_memory() {
        use probe_rs::architecture::arm::{ArmError, DapError};
        let e = memory_error(
            0x6000_0000,
            4,
            probe_rs::Error::Arm(ArmError::Dap(DapError::FaultResponse)),
        );
        assert!(
            matches!(
                e,
                TargetError::Unmapped {
                    addr: 0x6000_0000,
                    len: 4
                }
            ),
            "{e:?}"
        );
    }
}
