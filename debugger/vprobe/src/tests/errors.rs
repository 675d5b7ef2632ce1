//! Each refusal as the variant a caller matches on, and how each reaches probe-rs.

use probe_rs::architecture::arm::dp::DpRegisterAddress;
use probe_rs::architecture::arm::{ArmError, DapError, RawDapAccess, RegisterAddress};
use probe_rs::probe::{DebugProbe, DebugProbeError};

use super::*;
use crate::dwt::{DWT_COMP0, DWT_CTRL, DwtError};
use crate::error::{Access, Capability};
use crate::fpb::{FP_COMP0, FP_CTRL, FP_REMAP, FpbError};
use crate::{Result, VirtualProbe};

fn port_error<T: std::fmt::Debug>(r: Result<T>) -> PortError {
    match r {
        Err(VirtualProbeError::Port(e)) => e,
        other => panic!("expected a port error, got {other:?}"),
    }
}

/// The error and its sources, as `{:#}` prints them.
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
fn malformed_transfers_are_port_errors() {
    let mut r = Rig::new();
    assert_eq!(port_error(r.dap.read(Port::Dp(0x8))), PortError::Resend);
    // Bit 3 (STICKYCMP) is not one of the modelled CTRL/STAT bits.
    assert_eq!(
        port_error(r.dap.write(Port::Dp(0x4), 0x5000_0008)),
        PortError::CtrlStat { value: 0x5000_0008 }
    );
    assert_eq!(
        port_error(r.dap.write(Port::Dp(0xC), 7)),
        PortError::RdbuffWrite { value: 7 }
    );
    r.dap.write(Port::Dp(0x8), 0x2).unwrap(); // DPBANKSEL 2
    assert_eq!(
        port_error(r.dap.write(Port::Dp(0x4), 0)),
        PortError::DpBank { bank: 2 }
    );
    r.dap.write(Port::Dp(0x8), 0).unwrap();
    assert_eq!(
        port_error(r.dap.read(Port::Ap(0x08))),
        PortError::ApRegister { register: 0x08 }
    );
    r.dap.write(Port::Dp(0x8), 0xF0).unwrap(); // APBANKSEL 0xF
    assert_eq!(
        port_error(r.dap.write(Port::Ap(0x0C), 0)),
        PortError::ApRegisterWrite { register: 0xFC }
    );
    r.dap.write(Port::Dp(0x8), 0x0100_0000).unwrap(); // AP 1
    let e = port_error(r.dap.write(Port::Ap(0x0), 0));
    assert_eq!(e, PortError::NoSuchAp { ap: 1, register: 0 });
    assert_eq!(e.to_string(), "AP 1 register 0x00: there is no AP 1");
    r.dap.write(Port::Dp(0x8), 0).unwrap();
    assert_eq!(
        port_error(r.dap.write(Port::Ap(0x00), 0x2300_0003)),
        PortError::TransferSize { size: 3 }
    );
    assert_eq!(
        port_error(r.dap.read(Port::Ap(0x0C))),
        PortError::TransferSize { size: 3 },
        "a DRW transfer at the refused size is refused too"
    );
    assert!(r.calls().is_empty(), "nothing refused reaches QEMU");
}

#[test]
fn selectors_the_description_lacks_are_named() {
    let mut r = Rig::debug();
    let e = r.write32(machine::DCRSR, 0x21).unwrap_err();
    assert!(
        matches!(
            &e,
            VirtualProbeError::Selector(RegselError::NotDescribed { selector: 0x21, missing, .. })
                if missing == "fpscr"
        ),
        "{e}"
    );
    let e = r.write32(machine::DCRSR, 0x45).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::Selector(RegselError::NoFloatRegister {
                selector: 0x45,
                single: 5
            })
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "DCRSR.REGSEL 0x45 (s5): QEMU's target description has neither `s5` nor a 64-bit `d2`"
    );
}

#[test]
fn comparator_refusals_name_their_unit() {
    let mut r = Rig::debug();
    let e = r.write32(FP_REMAP, 1).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::Fpb(FpbError::FlashPatch { value: 1 })),
        "{e}"
    );
    let e = r.write32(DWT_CTRL, 1).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::Dwt(DwtError::CtrlWrite { value: 1 })),
        "{e}"
    );
    // Transparent: the unit's message is the message.
    assert_eq!(e.to_string(), DwtError::CtrlWrite { value: 1 }.to_string());
}

#[test]
fn addresses_the_model_lacks_or_refuses_are_named() {
    let mut r = Rig::debug();
    let e = r.read32(0xE000_0000).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::UnmodelledAddress { addr: 0xE000_0000 }
        ),
        "{e}"
    );
    let e = r.read32(0xE00F_F800).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::NotRomTableRegister {
                addr: 0xE00F_F800,
                offset: 0x800
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "0xe00ff800 (ROM table offset 0x800) is not a ROM table register"
    );
    let e = r.read32(machine::DCRSR).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::WriteOnly {
                name: "DCRSR",
                addr: machine::DCRSR
            }
        ),
        "{e}"
    );
    assert_eq!(e.to_string(), "DCRSR (0xe000edf4) is write-only");
    let e = r.write32(machine::DBGMCU, 0).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::ReadOnly {
                name: "DBGMCU_IDCODE",
                addr: machine::DBGMCU
            }
        ),
        "{e}"
    );
    for addr in [0xE000_1FE0, 0xE00F_F000] {
        let e = r.write32(addr, 0).unwrap_err();
        assert!(
            matches!(e, VirtualProbeError::IdentificationRegister { addr: a } if a == addr),
            "{e}"
        );
    }
    r.csw(0, false);
    r.dap.write(Port::Ap(0x04), machine::DHCSR).unwrap();
    let e = r.dap.read(Port::Ap(0x0C)).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::NarrowAccess {
                addr: machine::DHCSR,
                len: 1,
                access: Access::Read
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "1-byte read at 0xe000edf0: the modelled debug registers take 32-bit accesses only"
    );
    let e = r.dap.write(Port::Ap(0x0C), 0).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::NarrowAccess {
                access: Access::Write,
                ..
            }
        ),
        "{e}"
    );
    assert!(r.calls().is_empty(), "nothing refused reaches QEMU");
}

#[test]
fn memory_qemu_does_not_have_is_a_bus_fault_keeping_the_gdbstub_error() {
    let mut r = Rig::debug();
    let e = r.read32(0x2000_4000).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::Memory {
                access: Access::Read,
                addr: 0x2000_4000,
                len: 4,
                source: TargetError::Unmapped { .. }
            }
        ),
        "{e}"
    );
    assert!(e.is_bus_fault());
    assert!(matches!(
        e.target_error(),
        Some(TargetError::Unmapped {
            addr: 0x2000_4000,
            len: 4
        })
    ));
    let lines = chain(&e);
    assert_eq!(
        lines,
        [
            "reading 4 bytes at 0x20004000",
            "memory at 0x20004000 (4 bytes) is not accessible"
        ]
    );
}

#[test]
fn register_requests_qemu_refuses_name_the_selector() {
    let mut r = Rig::debug();
    r.log.lock().unwrap().refuse_registers = true;
    let e = r.write32(machine::DCRSR, 13).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::CoreRegister {
                access: Access::Read,
                selector: 13,
                source: TargetError::Refused { code: 0x0E, .. }
            }
        ),
        "{e}"
    );
    assert!(!e.is_bus_fault(), "a register is no bus access");
    assert_eq!(chain(&e)[0], "reading core register 0x0d");
    let e = r.write32(machine::DCRSR, 1 << 16 | 13).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::CoreRegister {
                access: Access::Write,
                selector: 13,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn run_control_qemu_fails_names_the_action() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 1).unwrap(); // run
    r.log.lock().unwrap().halt_times_out = true;
    let e = r.write32(machine::DHCSR, KEY | 0b11).unwrap_err();
    assert!(
        matches!(
            &e,
            VirtualProbeError::Gdbstub {
                action,
                source: TargetError::Timeout { .. }
            } if action == "halting the core (C_HALT)"
        ),
        "{e}"
    );
}

#[test]
fn a_target_without_a_capability_says_which() {
    // Run control, to let the core run.
    let mut r = Rig::debug();
    r.log.lock().unwrap().bare = true;
    let e = r.write32(machine::DHCSR, KEY | 1).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::TargetLacks(Capability::RunControl)),
        "{e}"
    );
    assert_eq!(e.to_string(), "the target has no run control");
    // Memory writes.
    let e = r.write32(0x2000_0000, 1).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::TargetLacks(Capability::MemoryWrite)),
        "{e}"
    );
    // Breakpoints, for an enabled FPB comparator.
    let mut r = Rig::debug();
    r.write32(FP_CTRL, 0b11).unwrap();
    r.write32(FP_COMP0, 0x0800_0200 | 1 << 30 | 1).unwrap();
    r.log.lock().unwrap().bare = true;
    let e = r.write32(machine::DHCSR, KEY | 1).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::TargetLacks(Capability::Breakpoints)),
        "{e}"
    );
    // Watchpoints, for an enabled DWT comparator.
    let mut r = Rig::debug();
    r.write32(machine::DEMCR, 1 << 24).unwrap(); // TRCENA
    r.write32(DWT_COMP0, 0x2000_0010).unwrap();
    r.write32(DWT_COMP0 + 8, 6).unwrap(); // FUNCTION0: write
    r.log.lock().unwrap().bare = true;
    let e = r.write32(machine::DHCSR, KEY | 1).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::TargetLacks(Capability::Watchpoints)),
        "{e}"
    );
}

#[test]
fn after_the_firmware_ends_every_access_says_how() {
    for (end, text) in [
        (StopReason::Exited(3), "the firmware exited with status 3"),
        (
            StopReason::Terminated(9),
            "the firmware was terminated by signal 9",
        ),
    ] {
        let mut r = Rig::debug();
        r.write32(machine::DHCSR, KEY | 1).unwrap(); // run
        r.push_stop(end);
        r.read32(machine::DHCSR).unwrap(); // the poll sees the end
        let e = r.read32(0x2000_0000).unwrap_err();
        match end {
            StopReason::Exited(_) => assert!(
                matches!(e, VirtualProbeError::FirmwareExited { status: 3, .. }),
                "{e}"
            ),
            _ => assert!(
                matches!(e, VirtualProbeError::FirmwareTerminated { signal: 9, .. }),
                "{e}"
            ),
        }
        assert_eq!(e.to_string(), text);
        // The end as memlife's core error, for a probe-rs backend to find under probe-rs's.
        let ended = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<memlife_core::TargetError>())
            .unwrap_or_else(|| panic!("no core error under {e:?}"));
        assert_eq!(ended.kind(), memlife_core::ErrorKind::Gone, "{ended}");
        if let StopReason::Exited(_) = end {
            assert!(
                matches!(ended, memlife_core::TargetError::Exited(3)),
                "{ended}"
            );
        }
        assert!(r.read32(machine::DHCSR).is_err(), "nor the debug registers");
    }
}

// ---- into probe-rs -------------------------------------------------------------------------

/// The virtual probe over [`fake_core`], the DP powered down as after a power-on.
fn probe() -> (VirtualProbe, Arc<Mutex<Shared>>) {
    let log = Arc::new(Mutex::new(Shared::default()));
    let (core, regs) = fake_core(&log);
    (
        VirtualProbe::new(Box::new(core), regs, Chip::stm32f405()),
        log,
    )
}

fn dp(address: u8) -> RegisterAddress {
    RegisterAddress::DpRegister(DpRegisterAddress {
        address,
        bank: None,
    })
}

/// This driver's error inside a probe-rs error.
fn driver_error(e: &DebugProbeError) -> &VirtualProbeError {
    let DebugProbeError::ProbeSpecific(boxed) = e else {
        panic!("expected the driver's own error, got {e:?}");
    };
    boxed
        .downcast_ref::<VirtualProbeError>()
        .expect("the virtual probe's error")
}

#[test]
fn a_refused_transfer_reaches_probe_rs_as_this_drivers_error() {
    let (mut probe, _) = probe();
    let e = probe
        .raw_read_register(RegisterAddress::ApRegister(0x0C))
        .unwrap_err();
    let ArmError::Probe(inner) = &e else {
        panic!("expected ArmError::Probe, got {e:?}");
    };
    assert!(
        matches!(
            driver_error(inner),
            VirtualProbeError::Port(PortError::PoweredDown)
        ),
        "{e:?}"
    );
    // The message is said once, under probe-rs's own words.
    let lines = chain(&e);
    let said = PortError::PoweredDown.to_string();
    assert_eq!(lines.iter().filter(|l| **l == said).count(), 1, "{lines:?}");
    assert_eq!(lines.last(), Some(&said), "{lines:?}");
}

#[test]
fn a_bus_fault_reaches_probe_rs_as_the_fault_acknowledge() {
    let (mut probe, _) = probe();
    probe.raw_write_register(dp(0x4), 0x5000_0000).unwrap(); // power up
    probe
        .raw_write_register(RegisterAddress::ApRegister(0x00), 0x2300_0002)
        .unwrap();
    probe
        .raw_write_register(RegisterAddress::ApRegister(0x04), 0x2000_4000)
        .unwrap();
    let e = probe
        .raw_read_register(RegisterAddress::ApRegister(0x0C))
        .unwrap_err();
    assert!(matches!(e, ArmError::Dap(DapError::FaultResponse)), "{e:?}");
    // As after a FAULT on the wire, CTRL/STAT says STICKYERR.
    assert_eq!(probe.raw_read_register(dp(0x4)).unwrap() & 1 << 5, 1 << 5);
    let mut block = [0u32; 2];
    let e = probe
        .raw_read_block(RegisterAddress::ApRegister(0x0C), &mut block)
        .unwrap_err();
    assert!(matches!(e, ArmError::Dap(DapError::FaultResponse)), "{e:?}");
}

#[test]
fn gdbstub_errors_other_than_a_fault_stay_the_drivers_with_their_source() {
    let (mut probe, log) = probe();
    log.lock().unwrap().refuse_registers = true;
    let e = probe
        .dap()
        .machine
        .write_word(machine::DCRSR, 13)
        .unwrap_err()
        .into_arm_error();
    let ArmError::Probe(inner) = &e else {
        panic!("expected ArmError::Probe, got {e:?}");
    };
    assert!(
        matches!(
            driver_error(inner),
            VirtualProbeError::CoreRegister { selector: 13, .. }
        ),
        "{e:?}"
    );
    let lines = chain(&e);
    assert!(
        lines.ends_with(&[
            "reading core register 0x0d".to_string(),
            "the target refused p: error 0x0e".to_string()
        ]),
        "{lines:?}"
    );
}

#[test]
fn timeouts_reach_probe_rs_as_its_timeouts() {
    let (mut probe, log) = probe();
    probe
        .dap()
        .machine
        .write_word(machine::DHCSR, KEY | 1)
        .unwrap();
    probe
        .dap()
        .machine
        .write_word(machine::DHCSR, KEY | 1)
        .unwrap(); // run
    log.lock().unwrap().halt_times_out = true;
    let timed_out = || VirtualProbeError::Gdbstub {
        action: "halting the core (C_HALT)".into(),
        source: TargetError::Timeout {
            after: Duration::from_secs(1),
            waiting_for: "reply",
        },
    };
    assert!(matches!(timed_out().into_arm_error(), ArmError::Timeout));
    assert!(matches!(
        timed_out().into_probe_error(),
        DebugProbeError::Timeout
    ));
    // Through the driver: nRESET driven low halts QEMU, which does not answer.
    let e = probe.target_reset_assert().unwrap_err();
    assert!(matches!(e, DebugProbeError::Timeout), "{e:?}");
}

#[test]
fn probe_level_failures_are_this_drivers_error() {
    let (mut probe, log) = probe();
    log.lock().unwrap().bare = true;
    let e = probe.target_reset().unwrap_err();
    assert!(
        matches!(
            driver_error(&e),
            VirtualProbeError::TargetLacks(Capability::RunControl)
        ),
        "{e:?}"
    );
}
