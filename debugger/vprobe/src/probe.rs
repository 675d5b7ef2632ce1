//! [`VirtualProbe`]: probe-rs's probe driver interface ([`DebugProbe`], [`RawDapAccess`]) over
//! the register model, wired the way probe-rs's own CMSIS-DAP driver is: its
//! [`ArmCommunicationInterface`] runs the DP/AP protocol on top of raw register accesses. A
//! refused access reaches probe-rs as its own error types
//! ([`VirtualProbeError::into_arm_error`]).

use std::sync::Arc;

use memlife_core::Target;
use memlife_rsp::GdbRemote;
use probe_rs::CoreStatus;
use probe_rs::architecture::arm::sequences::ArmDebugSequence;
use probe_rs::architecture::arm::{
    ArmCommunicationInterface, ArmDebugInterface, ArmError, DapProbe, RawDapAccess, RegisterAddress,
};
use probe_rs::probe::{DebugProbe, DebugProbeError, Probe, WireProtocol};

use crate::dap::{Dap, Port};
use crate::error::VirtualProbeError;
use crate::machine::{Chip, Machine};
use crate::regsel::RegMap;

/// Name probe-rs shows for the probe.
pub const NAME: &str = "QEMU virtual SWD probe";
/// `swj_pins` bit of nRESET.
const PIN_NRESET: u32 = 1 << 7;

/// A debug probe whose wire ends in QEMU's gdbstub.
#[derive(Debug)]
pub struct VirtualProbe {
    dap: Dap,
    speed_khz: u32,
    nreset_low: bool,
}

impl VirtualProbe {
    /// A probe over any live target whose registers `regs` names.
    pub fn new(target: Box<dyn Target + Send>, regs: RegMap, chip: Chip) -> VirtualProbe {
        VirtualProbe {
            dap: Dap::new(Machine::new(target, regs, chip)),
            speed_khz: 4000,
            nreset_low: false,
        }
    }

    /// A probe over a connection to QEMU's gdbstub, presenting an STM32F405. The core is as
    /// QEMU started it, halted at the reset vector (as `memlife --qemu` finds it), so that
    /// what a debugger does first happens before the firmware's first instruction.
    pub fn over_qemu(remote: GdbRemote) -> memlife_core::Result<VirtualProbe> {
        let regs = RegMap::new(remote.layout().registers());
        Ok(VirtualProbe::new(Box::new(remote), regs, Chip::stm32f405()))
    }

    /// As a probe-rs [`Probe`], ready to attach.
    pub fn into_probe(self) -> Probe {
        Probe::from_specific_probe(Box::new(self))
    }

    /// The register model (for tests and statistics).
    pub fn dap(&mut self) -> &mut Dap {
        &mut self.dap
    }
}

fn port(address: RegisterAddress) -> Port {
    match address {
        RegisterAddress::DpRegister(r) => Port::Dp(r.address),
        RegisterAddress::ApRegister(a) => Port::Ap(a),
    }
}

impl DebugProbe for VirtualProbe {
    fn get_name(&self) -> &str {
        NAME
    }

    fn speed_khz(&self) -> u32 {
        self.speed_khz
    }

    fn set_speed(&mut self, speed_khz: u32) -> Result<u32, DebugProbeError> {
        // There is no wire clock: the setting is kept so that it reads back.
        self.speed_khz = speed_khz;
        Ok(speed_khz)
    }

    fn attach(&mut self) -> Result<(), DebugProbeError> {
        Ok(())
    }

    fn detach(&mut self) -> Result<(), probe_rs::Error> {
        Ok(())
    }

    fn target_reset(&mut self) -> Result<(), DebugProbeError> {
        self.dap
            .machine
            .system_reset()
            .map_err(VirtualProbeError::into_probe_error)
    }

    fn target_reset_assert(&mut self) -> Result<(), DebugProbeError> {
        self.nreset_low = true;
        self.dap
            .machine
            .set_reset_pin(true)
            .map_err(VirtualProbeError::into_probe_error)
    }

    fn target_reset_deassert(&mut self) -> Result<(), DebugProbeError> {
        self.nreset_low = false;
        self.dap
            .machine
            .set_reset_pin(false)
            .map_err(VirtualProbeError::into_probe_error)
    }

    fn select_protocol(&mut self, protocol: WireProtocol) -> Result<(), DebugProbeError> {
        match protocol {
            WireProtocol::Swd => Ok(()),
            WireProtocol::Jtag => Err(DebugProbeError::UnsupportedProtocol(protocol)),
        }
    }

    fn active_protocol(&self) -> Option<WireProtocol> {
        Some(WireProtocol::Swd)
    }

    fn has_arm_interface(&self) -> bool {
        true
    }

    fn try_get_arm_debug_interface<'probe>(
        self: Box<Self>,
        sequence: Arc<dyn ArmDebugSequence>,
    ) -> Result<Box<dyn ArmDebugInterface + 'probe>, (Box<dyn DebugProbe>, ArmError)> {
        Ok(ArmCommunicationInterface::create(self, sequence, false))
    }

    fn into_probe(self: Box<Self>) -> Box<dyn DebugProbe> {
        self
    }

    fn try_as_dap_probe(&mut self) -> Option<&mut dyn DapProbe> {
        Some(self)
    }
}

impl RawDapAccess for VirtualProbe {
    fn raw_read_register(&mut self, address: RegisterAddress) -> Result<u32, ArmError> {
        self.dap
            .read(port(address))
            .map_err(VirtualProbeError::into_arm_error)
    }

    fn raw_read_block(
        &mut self,
        address: RegisterAddress,
        values: &mut [u32],
    ) -> Result<(), ArmError> {
        self.dap
            .read_block(port(address), values)
            .map_err(VirtualProbeError::into_arm_error)
    }

    fn raw_write_register(&mut self, address: RegisterAddress, value: u32) -> Result<(), ArmError> {
        self.dap
            .write(port(address), value)
            .map_err(VirtualProbeError::into_arm_error)
    }

    fn raw_write_block(
        &mut self,
        address: RegisterAddress,
        values: &[u32],
    ) -> Result<(), ArmError> {
        self.dap
            .write_block(port(address), values)
            .map_err(VirtualProbeError::into_arm_error)
    }

    fn jtag_sequence(&mut self, _cycles: u8, _tms: bool, _tdi: u64) -> Result<(), DebugProbeError> {
        Err(DebugProbeError::UnsupportedProtocol(WireProtocol::Jtag))
    }

    fn swj_sequence(&mut self, _bit_len: u8, _bits: u64) -> Result<(), DebugProbeError> {
        // Line resets and the JTAG-to-SWD switch: the modelled DP always speaks SWD.
        Ok(())
    }

    fn swj_pins(
        &mut self,
        pin_out: u32,
        pin_select: u32,
        _pin_wait: u32,
    ) -> Result<u32, DebugProbeError> {
        if pin_select & PIN_NRESET != 0 {
            let low = pin_out & PIN_NRESET == 0;
            self.nreset_low = low;
            self.dap
                .machine
                .set_reset_pin(low)
                .map_err(VirtualProbeError::into_probe_error)?;
        }
        Ok(if self.nreset_low { 0 } else { PIN_NRESET })
    }

    fn into_probe(self: Box<Self>) -> Box<dyn DebugProbe> {
        self
    }

    fn core_status_notification(&mut self, _state: CoreStatus) -> Result<(), DebugProbeError> {
        Ok(())
    }
}

impl DapProbe for VirtualProbe {}
