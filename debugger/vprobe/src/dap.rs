//! The SW-DP and its one AHB-AP (MEM-AP), at the register level a probe driver sees.
//!
//! Debug port (ADIv5 DPv1, as an STM32F4's SW-DP):
//! - `0x0` read `DPIDR` (`0x2BA01477`), write `ABORT` (`STKERRCLR` clears `STICKYERR`).
//! - `0x4` `CTRL/STAT` (with `SELECT.DPBANKSEL` 0): `CDBGPWRUPREQ`/`CSYSPWRUPREQ` (bits 28, 30)
//!   are acknowledged in `CDBGPWRUPACK`/`CSYSPWRUPACK` (29, 31); `STICKYERR` (5) is set by a
//!   failed AP transfer. AP registers can be reached only while both domains are powered.
//! - `0x8` write `SELECT`: `APSEL` 31:24, `APBANKSEL` 7:4, `DPBANKSEL` 3:0.
//! - `0xC` read `RDBUFF`: the last AP read's value (the driver has already returned it: at
//!   this level reads are not posted).
//!
//! Access port 0, AMBA AHB3 MEM-AP:
//! - `0x00` `CSW`: `Size` 2:0 (byte, halfword, word), `AddrInc` 5:4 (off or single; packed
//!   is not modelled), `DeviceEn` (6) reads 1; the rest is kept as written.
//! - `0x04` `TAR`; `0x0C` `DRW` (auto-increment wraps in 1 KiB, as the architecture allows);
//!   `0x10`-`0x1C` `BD0`-`3` (words at `TAR[31:4] + 4n`).
//! - `0xF0` `BASE2` 0, `0xF4` `CFG` 0 (little-endian, 32-bit addresses and data), `0xF8`
//!   `BASE` (ROM table, ADIv5 format, present), `0xFC` `IDR` `0x24770011`.
//!
//! Other APs read `IDR` 0 (absent, as on hardware); anything else is an error naming it.

use crate::error::Result;
use crate::machine::Machine;
pub use crate::port_error::PortError;

/// `DPIDR` of an STM32F4's SW-DP: Arm designer, version 1, part 0xBA.
pub const DPIDR: u32 = 0x2BA0_1477;
/// `IDR` of a Cortex-M4's AHB-AP.
pub const AP_IDR: u32 = 0x2477_0011;

const CDBGPWRUPREQ: u32 = 1 << 28;
const CSYSPWRUPREQ: u32 = 1 << 30;
const STICKYERR: u32 = 1 << 5;
const STKERRCLR: u32 = 1 << 2;
/// `CTRL/STAT` bits the debugger writes and reads back (requests, lane mask, overrun detect).
const CTRL_WRITABLE: u32 = CDBGPWRUPREQ | CSYSPWRUPREQ | 0xF00 | 1;

/// A DAP register: DP or AP, with its low address byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    /// Debug port register (address bits 3:2).
    Dp(u8),
    /// Access port register (address bits 3:2 within the `SELECT`ed bank).
    Ap(u8),
}

/// The DP/AP state over the system.
#[derive(Debug)]
pub struct Dap {
    /// What the MEM-AP reaches.
    pub machine: Machine,
    select: u32,
    ctrl: u32,
    sticky: bool,
    rdbuff: u32,
    csw: u32,
    tar: u32,
    /// DAP transactions so far (each register access).
    pub transactions: u64,
}

impl Dap {
    /// A DP in its reset state (powered down) over `machine`.
    pub fn new(machine: Machine) -> Dap {
        Dap {
            machine,
            select: 0,
            ctrl: 0,
            sticky: false,
            rdbuff: 0,
            csw: 0x0300_0002, // word size, as a reset AHB-AP reads
            tar: 0,
            transactions: 0,
        }
    }

    fn powered(&self) -> bool {
        self.ctrl & (CDBGPWRUPREQ | CSYSPWRUPREQ) == CDBGPWRUPREQ | CSYSPWRUPREQ
    }

    fn ctrl_stat(&self) -> u32 {
        // Each acknowledge follows its request, one bit higher.
        let acks = (self.ctrl & (CDBGPWRUPREQ | CSYSPWRUPREQ)) << 1;
        self.ctrl | acks | if self.sticky { STICKYERR } else { 0 }
    }

    fn ap_register(&self, a: u8) -> (u8, u8) {
        let apsel = (self.select >> 24) as u8;
        let bank = ((self.select >> 4) & 0xF) as u8;
        (apsel, bank << 4 | (a & 0xC))
    }

    /// Reads a register.
    pub fn read(&mut self, port: Port) -> Result<u32> {
        self.transactions += 1;
        match port {
            Port::Dp(a) => Ok(self.read_dp(a & 0xC)?),
            Port::Ap(a) => {
                let r = self.read_ap(a);
                match r {
                    Ok(v) => {
                        self.rdbuff = v;
                        Ok(v)
                    }
                    Err(e) => {
                        self.sticky = true;
                        Err(e)
                    }
                }
            }
        }
    }

    /// Writes a register.
    pub fn write(&mut self, port: Port, value: u32) -> Result<()> {
        self.transactions += 1;
        match port {
            Port::Dp(a) => Ok(self.write_dp(a & 0xC, value)?),
            Port::Ap(a) => {
                let r = self.write_ap(a, value);
                if r.is_err() {
                    self.sticky = true;
                }
                r
            }
        }
    }

    fn read_dp(&mut self, a: u8) -> Result<u32, PortError> {
        match a {
            0x0 => Ok(DPIDR),
            0x4 => match self.select & 0xF {
                0 => Ok(self.ctrl_stat()),
                bank => Err(PortError::DpBank { bank }),
            },
            0x8 => Err(PortError::Resend),
            _ => Ok(self.rdbuff),
        }
    }

    fn write_dp(&mut self, a: u8, value: u32) -> Result<(), PortError> {
        match a {
            0x0 => {
                if value & STKERRCLR != 0 {
                    self.sticky = false;
                }
                Ok(())
            }
            0x4 => match self.select & 0xF {
                0 => {
                    if value & !(CTRL_WRITABLE | 0x32) != 0 {
                        return Err(PortError::CtrlStat { value });
                    }
                    self.ctrl = value & CTRL_WRITABLE;
                    Ok(())
                }
                bank => Err(PortError::DpBank { bank }),
            },
            0x8 => {
                self.select = value;
                Ok(())
            }
            _ => Err(PortError::RdbuffWrite { value }),
        }
    }

    fn check_powered(&self) -> Result<(), PortError> {
        if self.powered() {
            Ok(())
        } else {
            Err(PortError::PoweredDown)
        }
    }

    fn size(&self) -> Result<u32, PortError> {
        match self.csw & 0x7 {
            0 => Ok(1),
            1 => Ok(2),
            2 => Ok(4),
            size => Err(PortError::TransferSize { size }),
        }
    }

    fn increments(&self) -> Result<bool, PortError> {
        match (self.csw >> 4) & 0x3 {
            0 => Ok(false),
            1 => Ok(true),
            mode => Err(PortError::PackedIncrement { mode }),
        }
    }

    fn advance(&mut self, by: u32) {
        // The architecture guarantees increments within 1 KiB only; this AP wraps there.
        self.tar = (self.tar & !0x3FF) | (self.tar.wrapping_add(by) & 0x3FF);
    }

    fn read_ap(&mut self, a: u8) -> Result<u32> {
        self.check_powered()?;
        let (apsel, reg) = self.ap_register(a);
        if apsel != 0 {
            return match reg {
                0xFC => Ok(0), // no AP here
                register => Err(PortError::NoSuchAp {
                    ap: apsel,
                    register,
                }
                .into()),
            };
        }
        match reg {
            0x00 => Ok(self.csw | 1 << 6),
            0x04 => Ok(self.tar),
            0x0C => self.read_drw(),
            0x10..=0x1C => {
                let addr = (self.tar & !0xF) + u32::from(reg - 0x10);
                self.machine.read_word(addr)
            }
            0xF0 => Ok(0),
            0xF4 => Ok(0),
            0xF8 => Ok(self.machine_rom_base() | 0b11),
            0xFC => Ok(AP_IDR),
            register => Err(PortError::ApRegister { register }.into()),
        }
    }

    fn machine_rom_base(&self) -> u32 {
        self.machine.rom_base()
    }

    fn write_ap(&mut self, a: u8, value: u32) -> Result<()> {
        self.check_powered()?;
        let (apsel, reg) = self.ap_register(a);
        if apsel != 0 {
            return Err(PortError::NoSuchAp {
                ap: apsel,
                register: reg,
            }
            .into());
        }
        match reg {
            0x00 => {
                self.csw = value & !(1 << 6 | 1 << 7);
                self.size()?;
                Ok(())
            }
            0x04 => {
                self.tar = value;
                Ok(())
            }
            0x0C => self.write_drw(value),
            0x10..=0x1C => {
                let addr = (self.tar & !0xF) + u32::from(reg - 0x10);
                self.machine.write_word(addr, value)
            }
            register => Err(PortError::ApRegisterWrite { register }.into()),
        }
    }

    fn read_drw(&mut self) -> Result<u32> {
        let size = self.size()?;
        let inc = self.increments()?;
        let addr = self.tar;
        if !addr.is_multiple_of(size) {
            return Err(PortError::Unaligned { addr, size }.into());
        }
        let v = if size == 4 {
            self.machine.read_word(addr)?
        } else {
            // Narrow data arrives on its byte lanes.
            self.machine.read_narrow(addr, size as usize)? << (8 * (addr % 4))
        };
        if inc {
            self.advance(size);
        }
        Ok(v)
    }

    fn write_drw(&mut self, value: u32) -> Result<()> {
        let size = self.size()?;
        let inc = self.increments()?;
        let addr = self.tar;
        if !addr.is_multiple_of(size) {
            return Err(PortError::Unaligned { addr, size }.into());
        }
        if size == 4 {
            self.machine.write_word(addr, value)?;
        } else {
            let lane = value >> (8 * (addr % 4));
            self.machine.write_narrow(addr, size as usize, lane)?;
        }
        if inc {
            self.advance(size);
        }
        Ok(())
    }

    /// Words left before auto-increment wraps.
    fn words_to_wrap(&self) -> usize {
        ((0x400 - (self.tar & 0x3FF)) / 4) as usize
    }

    fn is_word_block(&self, port: Port) -> bool {
        let Port::Ap(a) = port else { return false };
        let (apsel, reg) = self.ap_register(a);
        apsel == 0
            && reg == 0x0C
            && self.csw & 0x7 == 2
            && (self.csw >> 4) & 3 == 1
            && self.tar.is_multiple_of(4)
    }

    /// Repeated reads of one register: a word `DRW` with auto-increment is one memory request
    /// per run up to the 1 KiB wrap, as a real probe streams it.
    pub fn read_block(&mut self, port: Port, values: &mut [u32]) -> Result<()> {
        if !self.is_word_block(port) {
            for v in values.iter_mut() {
                *v = self.read(port)?;
            }
            return Ok(());
        }
        self.check_powered()?;
        let mut rest = values;
        while !rest.is_empty() {
            let n = rest.len().min(self.words_to_wrap());
            let (now, later) = rest.split_at_mut(n);
            self.transactions += n as u64;
            if let Err(e) = self.machine.read_words(self.tar, now) {
                self.sticky = true;
                return Err(e);
            }
            self.advance(4 * n as u32);
            if let Some(&last) = now.last() {
                self.rdbuff = last;
            }
            rest = later;
        }
        Ok(())
    }

    /// Repeated writes of one register, batched like [`Dap::read_block`].
    pub fn write_block(&mut self, port: Port, values: &[u32]) -> Result<()> {
        if !self.is_word_block(port) {
            for &v in values {
                self.write(port, v)?;
            }
            return Ok(());
        }
        self.check_powered()?;
        let mut rest = values;
        while !rest.is_empty() {
            let n = rest.len().min(self.words_to_wrap());
            let (now, later) = rest.split_at(n);
            self.transactions += n as u64;
            if let Err(e) = self.machine.write_words(self.tar, now) {
                self.sticky = true;
                return Err(e);
            }
            self.advance(4 * n as u32);
            rest = later;
        }
        Ok(())
    }
}
