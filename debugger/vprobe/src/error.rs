//! [`VirtualProbeError`], what the emulated debug port refuses and why, and how it reaches
//! probe-rs.
//!
//! probe-rs expects a probe driver to report a failed transfer as its own error types: a bus
//! fault behind the MEM-AP is the `FAULT` acknowledge ([`DapError::FaultResponse`]) and a
//! timeout is [`ArmError::Timeout`] or [`DebugProbeError::Timeout`]; anything particular to the
//! driver is the driver's error type, marked [`probe_rs::probe::ProbeError`] and carried as
//! [`DebugProbeError::ProbeSpecific`] (as probe-rs's CMSIS-DAP and ST-Link drivers do). A
//! caller gets it back with `BoxedProbeError::downcast_ref::<VirtualProbeError>()`.

use std::borrow::Cow;
use std::fmt;

use memlife_core::TargetError;
use probe_rs::architecture::arm::{ArmError, DapError};
use probe_rs::probe::DebugProbeError;

use crate::dwt::DwtError;
use crate::fpb::FpbError;
use crate::port_error::PortError;
use crate::regsel::RegselError;

/// The crate's `Result`.
pub type Result<T, E = VirtualProbeError> = std::result::Result<T, E>;

/// A bus access's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A read.
    Read,
    /// A write.
    Write,
}

impl Access {
    /// `reading` or `writing`, as an action is described.
    fn gerund(self) -> &'static str {
        match self {
            Access::Read => "reading",
            Access::Write => "writing",
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
        })
    }
}

/// An optional part of the [`memlife_core::Target`] the probe is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// [`memlife_core::Control`]: halt, step, resume, reset.
    RunControl,
    /// [`memlife_core::Breakpoints`]: where FPB comparators go.
    Breakpoints,
    /// [`memlife_core::Watchpoints`]: where DWT comparators go.
    Watchpoints,
    /// [`memlife_core::MemoryWrite`].
    MemoryWrite,
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Capability::RunControl => "run control",
            Capability::Breakpoints => "breakpoints",
            Capability::Watchpoints => "watchpoints",
            Capability::MemoryWrite => "memory write",
        })
    }
}

/// Why the virtual probe could not do a DAP transfer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VirtualProbeError {
    /// The DP or the MEM-AP refuses the register access (a malformed transfer).
    #[error(transparent)]
    Port(#[from] PortError),
    /// A core register transfer names a register the model or QEMU lacks.
    #[error(transparent)]
    Selector(#[from] RegselError),
    /// The FPB refuses a write.
    #[error(transparent)]
    Fpb(#[from] FpbError),
    /// The DWT refuses an access.
    #[error(transparent)]
    Dwt(#[from] DwtError),
    /// An address at or above `0xE0000000` where the model has nothing.
    #[error(
        "{addr:#010x} is not modelled by the virtual probe (it models the debug registers, FPB, DWT, ROM table, CoreSight IDs, DBGMCU and QEMU's NVIC/SCB)"
    )]
    UnmodelledAddress {
        /// The address accessed.
        addr: u32,
    },
    /// An address in the ROM table's block that the table does not define.
    #[error("{addr:#010x} (ROM table offset {offset:#05x}) is not a ROM table register")]
    NotRomTableRegister {
        /// The address read.
        addr: u32,
        /// Its offset in the table's block.
        offset: u32,
    },
    /// A write-only register read.
    #[error("{name} ({addr:#010x}) is write-only")]
    WriteOnly {
        /// The register's name (`DCRSR`).
        name: &'static str,
        /// Its address.
        addr: u32,
    },
    /// A read-only register written.
    #[error("{name} ({addr:#010x}) is read-only")]
    ReadOnly {
        /// The register's name (`DBGMCU_IDCODE`).
        name: &'static str,
        /// Its address.
        addr: u32,
    },
    /// A CoreSight identification or ROM table word written.
    #[error("{addr:#010x} is a read-only identification register")]
    IdentificationRegister {
        /// The address written.
        addr: u32,
    },
    /// A byte or halfword access to a modelled debug register.
    #[error(
        "{len}-byte {access} at {addr:#010x}: the modelled debug registers take 32-bit accesses only"
    )]
    NarrowAccess {
        /// The address accessed.
        addr: u32,
        /// Bytes (1 or 2).
        len: usize,
        /// Read or write.
        access: Access,
    },
    /// A core register transfer (`DCRSR` write) while the core runs.
    #[error("DCRSR write {dcrsr:#010x} while the core runs: core registers need a halted core")]
    CoreRunning {
        /// The value written to `DCRSR`.
        dcrsr: u32,
    },
    /// `DEMCR` bits the model does not have (the debug monitor, `VC_SFERR`).
    #[error(
        "DEMCR write {value:#010x}: only VC_CORERESET, the fault catches (VC_MMERR to VC_HARDERR) and TRCENA are modelled (bits {unmodelled:#010x} are not)"
    )]
    DemcrBits {
        /// The value written.
        value: u32,
        /// The bits of it that are not modelled.
        unmodelled: u32,
    },
    /// QEMU's gdbstub refused or failed a memory access; an unmapped address is what a real
    /// AHB-AP answers with a bus fault.
    #[error("{} {len} bytes at {addr:#010x}", access.gerund())]
    Memory {
        /// Read or write.
        access: Access,
        /// First address.
        addr: u32,
        /// Bytes.
        len: usize,
        /// What the gdbstub connection said.
        #[source]
        source: TargetError,
    },
    /// QEMU's gdbstub refused or failed a core register transfer.
    #[error("{} core register {selector:#04x}", access.gerund())]
    CoreRegister {
        /// Read or write.
        access: Access,
        /// The `DCRSR.REGSEL` selector.
        selector: u8,
        /// What the gdbstub connection said.
        #[source]
        source: TargetError,
    },
    /// QEMU's gdbstub refused or failed a run control or breakpoint request.
    #[error("{action}")]
    Gdbstub {
        /// What the probe was doing (`halting the core (C_HALT)`).
        action: Cow<'static, str>,
        /// What the gdbstub connection said.
        #[source]
        source: TargetError,
    },
    /// The target underneath lacks what the debug registers need.
    #[error("the target has no {0}")]
    TargetLacks(Capability),
    /// The firmware exited (semihosting): every later access fails with this.
    #[error("the firmware exited with status {status}")]
    FirmwareExited {
        /// Its exit status.
        status: i32,
        /// The same end as memlife's core error (`TargetError::Exited`): probe-rs wraps this
        /// error in its own, and a probe-rs backend finds the end in the source chain by this
        /// (memlife_probe does not know the virtual probe's types).
        #[source]
        ended: TargetError,
    },
    /// QEMU was terminated: every later access fails with this.
    #[error("the firmware was terminated by signal {signal}")]
    FirmwareTerminated {
        /// The signal number.
        signal: u8,
        /// The same end as memlife's core error (`TargetError::Gone`), as for
        /// [`VirtualProbeError::FirmwareExited`].
        #[source]
        ended: TargetError,
    },
}

impl VirtualProbeError {
    /// A failed gdbstub request, described by what the probe was doing (a `&'static str` costs
    /// nothing until the request fails: run control is polled often).
    pub(crate) fn gdbstub(
        action: impl Into<Cow<'static, str>>,
    ) -> impl FnOnce(TargetError) -> Self {
        let action = action.into();
        move |source| VirtualProbeError::Gdbstub { action, source }
    }

    /// The gdbstub connection's error underneath, if the probe got one.
    pub fn target_error(&self) -> Option<&TargetError> {
        match self {
            VirtualProbeError::Memory { source, .. }
            | VirtualProbeError::CoreRegister { source, .. }
            | VirtualProbeError::Gdbstub { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether a real AHB-AP would have answered the transfer with a bus fault: memory that
    /// QEMU says is not there.
    pub fn is_bus_fault(&self) -> bool {
        matches!(
            self,
            VirtualProbeError::Memory {
                source: TargetError::Unmapped { .. },
                ..
            }
        )
    }

    fn is_timeout(&self) -> bool {
        matches!(self.target_error(), Some(TargetError::Timeout { .. }))
    }

    /// As probe-rs's ARM layer expects a DAP transfer's failure: a bus fault is the `FAULT`
    /// acknowledge, a timeout is [`ArmError::Timeout`], the rest is this driver's error.
    pub fn into_arm_error(self) -> ArmError {
        if self.is_bus_fault() {
            // The FAULT acknowledge carries no words: what faulted goes to the log.
            tracing::debug!(error = %DisplayChain(&self), "virtual probe: bus fault");
            ArmError::Dap(DapError::FaultResponse)
        } else if self.is_timeout() {
            tracing::debug!(error = %DisplayChain(&self), "virtual probe: timeout");
            ArmError::Timeout
        } else {
            ArmError::Probe(self.into_probe_error())
        }
    }

    /// As probe-rs's probe layer expects a driver's failure (reset, the reset pin): a timeout
    /// is [`DebugProbeError::Timeout`], the rest is this driver's error.
    pub fn into_probe_error(self) -> DebugProbeError {
        if self.is_timeout() {
            tracing::debug!(error = %DisplayChain(&self), "virtual probe: timeout");
            DebugProbeError::Timeout
        } else {
            DebugProbeError::from(self)
        }
    }
}

/// Marks the error as a probe driver's own, so that probe-rs carries it whole.
impl probe_rs::probe::ProbeError for VirtualProbeError {}

/// An error with its sources, `: `-separated, for the log.
struct DisplayChain<'a>(&'a dyn std::error::Error);

impl fmt::Display for DisplayChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cur = self.0.source();
        while let Some(e) = cur {
            write!(f, ": {e}")?;
            cur = e.source();
        }
        Ok(())
    }
}
