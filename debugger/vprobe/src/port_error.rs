//! [`PortError`], what the DP and MEM-AP models of `dap` refuse. Apart from `dap` because the
//! crate's error carries it and `dap` returns the crate's error.

/// A DP or AP register access the port model refuses: a malformed transfer, or a register
/// it does not model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PortError {
    /// A DP register bank other than 0 (`SELECT.DPBANKSEL`).
    #[error(
        "DP register 0x4 in bank {bank} (SELECT.DPBANKSEL) is not modelled; only CTRL/STAT (bank 0) is"
    )]
    DpBank {
        /// The selected bank.
        bank: u32,
    },
    /// `RESEND`: transfers never fail on this wire.
    #[error("DP RESEND (0x8) is not modelled: transfers here never fail on the wire")]
    Resend,
    /// `CTRL/STAT` bits other than the power-up requests, `MASKLANE` and `ORUNDETECT`.
    #[error(
        "CTRL/STAT write {value:#010x}: only the power-up requests, MASKLANE and ORUNDETECT are modelled"
    )]
    CtrlStat {
        /// The value written.
        value: u32,
    },
    /// A write to `RDBUFF`.
    #[error("DP register 0xC is read-only (RDBUFF); write {value:#010x}")]
    RdbuffWrite {
        /// The value written.
        value: u32,
    },
    /// An AP access before the debug and system domains are powered up.
    #[error("AP access with the debug domain powered down (CTRL/STAT power-up requests not set)")]
    PoweredDown,
    /// An access to an AP other than 0 (other than reading its `IDR`).
    #[error("AP {ap} register {register:#04x}: there is no AP {ap}")]
    NoSuchAp {
        /// `SELECT.APSEL`.
        ap: u8,
        /// The register (bank and address).
        register: u8,
    },
    /// A MEM-AP register the model does not have.
    #[error("MEM-AP register {register:#04x} is not modelled")]
    ApRegister {
        /// The register (bank and address).
        register: u8,
    },
    /// A write to a read-only or unmodelled MEM-AP register.
    #[error("MEM-AP register {register:#04x} is not writable or not modelled")]
    ApRegisterWrite {
        /// The register (bank and address).
        register: u8,
    },
    /// A `CSW.Size` wider than a word.
    #[error("CSW.Size {size} is not supported by an AHB3 MEM-AP without the large data extension")]
    TransferSize {
        /// The `Size` field.
        size: u32,
    },
    /// Packed transfers (`CSW.AddrInc` 2).
    #[error("CSW.AddrInc {mode} (packed) is not modelled")]
    PackedIncrement {
        /// The `AddrInc` field.
        mode: u32,
    },
    /// A `DRW` access at an address not aligned to its size.
    #[error("unaligned {size}-byte access at {addr:#010x}")]
    Unaligned {
        /// `TAR`.
        addr: u32,
        /// Bytes per transfer.
        size: u32,
    },
}
