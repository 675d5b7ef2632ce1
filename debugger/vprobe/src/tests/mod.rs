//! The register model against a scripted core: what each DAP access turns into.

mod errors;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memlife_core::{
    BreakpointKind, Breakpoints, Control, Memory, MemoryWrite, Register, Registers, Result,
    StopReason, Target, TargetError, WatchKind, Watchpoints,
};

use crate::dap::{AP_IDR, DPIDR, Dap, Port, PortError};
use crate::error::VirtualProbeError;
use crate::machine::{self, Chip, Machine, dfsr};
use crate::regsel::{RegMap, RegselError, described};

/// What the fake core was asked to do, in order.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Read(u64, usize),
    Write(u64, Vec<u8>),
    Halt,
    Resume,
    Step,
    Reset,
    AddBp(u64),
    RemoveBp(u64),
    AddWatch(u64, u64, WatchKind),
    RemoveWatch(u64, u64, WatchKind),
}

#[derive(Default)]
struct Shared {
    calls: Vec<Call>,
    /// Stops the core reports, in order, when asked while running.
    stops: VecDeque<StopReason>,
    /// Register requests are answered with an error code.
    refuse_registers: bool,
    /// Halt requests get no answer in time.
    halt_times_out: bool,
    /// The target offers no run control, breakpoints, watchpoints or memory writes.
    bare: bool,
}

struct FakeCore {
    mem: BTreeMap<u64, u8>,
    regs: BTreeMap<u16, u64>,
    halted: bool,
    log: Arc<Mutex<Shared>>,
}

impl FakeCore {
    fn log(&self, c: Call) {
        self.log.lock().unwrap().calls.push(c);
    }

    fn refuses_registers(&self, request: &'static str) -> Result<()> {
        if self.log.lock().unwrap().refuse_registers {
            return Err(TargetError::Refused {
                request,
                code: 0x0E,
            });
        }
        Ok(())
    }

    fn bare(&self) -> bool {
        self.log.lock().unwrap().bare
    }
}

impl Memory for FakeCore {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.log(Call::Read(addr, buf.len()));
        if !self.halted {
            return Err(TargetError::NotHalted);
        }
        let len = buf.len();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = *self
                .mem
                .get(&(addr + i as u64))
                .ok_or(TargetError::Unmapped { addr, len })?;
        }
        Ok(())
    }
}

impl MemoryWrite for FakeCore {
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        self.log(Call::Write(addr, data.to_vec()));
        for (i, &b) in data.iter().enumerate() {
            self.mem.insert(addr + i as u64, b);
        }
        Ok(())
    }
}

impl Registers for FakeCore {
    fn read_register(&mut self, reg: Register) -> Result<u64> {
        self.refuses_registers("p")?;
        let n = match reg {
            Register::Numbered(n) => n,
            Register::ProgramCounter => 15,
            _ => return Err(TargetError::Unsupported("role")),
        };
        Ok(self.regs.get(&n).copied().unwrap_or(0))
    }
    fn write_register(&mut self, reg: Register, value: u64) -> Result<()> {
        self.refuses_registers("P")?;
        let Register::Numbered(n) = reg else {
            return Err(TargetError::Unsupported("role"));
        };
        self.regs.insert(n, value);
        Ok(())
    }
    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        Ok(Vec::new())
    }
}

impl Control for FakeCore {
    fn halt(&mut self) -> Result<StopReason> {
        self.log(Call::Halt);
        if self.log.lock().unwrap().halt_times_out {
            return Err(TargetError::Timeout {
                after: Duration::from_secs(1),
                waiting_for: "reply",
            });
        }
        self.halted = true;
        let next = self.log.lock().unwrap().stops.pop_front();
        Ok(next.unwrap_or(StopReason::Halted))
    }
    fn resume(&mut self) -> Result<()> {
        self.log(Call::Resume);
        self.halted = false;
        Ok(())
    }
    fn step(&mut self) -> Result<StopReason> {
        self.log(Call::Step);
        let pc = self.regs.entry(15).or_insert(0);
        *pc += 2;
        Ok(StopReason::Step)
    }
    fn wait_for_stop(&mut self, _timeout: Duration) -> Result<Option<StopReason>> {
        if self.halted {
            return Ok(None);
        }
        let next = self.log.lock().unwrap().stops.pop_front();
        if next.is_some() {
            self.halted = true;
        }
        Ok(next)
    }
    fn reset(&mut self, halt: bool) -> Result<()> {
        self.log(Call::Reset);
        self.halted = halt;
        Ok(())
    }
    fn is_halted(&self) -> bool {
        self.halted
    }
}

impl Breakpoints for FakeCore {
    fn add_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        assert_eq!(kind, BreakpointKind::Hardware, "FPB comparators are Z1");
        self.log(Call::AddBp(addr));
        Ok(())
    }
    fn remove_breakpoint(&mut self, addr: u64, _kind: BreakpointKind) -> Result<()> {
        self.log(Call::RemoveBp(addr));
        Ok(())
    }
    fn inserted(&self) -> Vec<(u64, BreakpointKind)> {
        Vec::new()
    }
}

impl Watchpoints for FakeCore {
    fn add_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        self.log(Call::AddWatch(addr, len, kind));
        Ok(())
    }
    fn remove_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        self.log(Call::RemoveWatch(addr, len, kind));
        Ok(())
    }
}

impl Target for FakeCore {
    fn describe(&self) -> String {
        "fake".into()
    }
    fn control(&mut self) -> Option<&mut dyn Control> {
        (!self.bare()).then_some(self as &mut dyn Control)
    }
    fn breakpoints(&mut self) -> Option<&mut dyn Breakpoints> {
        (!self.bare()).then_some(self as &mut dyn Breakpoints)
    }
    fn watchpoints(&mut self) -> Option<&mut dyn Watchpoints> {
        (!self.bare()).then_some(self as &mut dyn Watchpoints)
    }
    fn memory_write(&mut self) -> Option<&mut dyn MemoryWrite> {
        (!self.bare()).then_some(self as &mut dyn MemoryWrite)
    }
    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}

struct Rig {
    dap: Dap,
    log: Arc<Mutex<Shared>>,
}

/// A halted fake core with 8 KiB of RAM at 0x20000000 holding its own offsets as bytes, and
/// its registers as QEMU's target description names them (no FPU).
fn fake_core(log: &Arc<Mutex<Shared>>) -> (FakeCore, RegMap) {
    let mut mem = BTreeMap::new();
    for i in 0..0x2000u64 {
        mem.insert(0x2000_0000 + i, i as u8);
    }
    let core = FakeCore {
        mem,
        regs: BTreeMap::from([(15, 0x0800_0100), (25, 0x0100_0000)]),
        halted: true,
        log: log.clone(),
    };
    let low: Vec<String> = (0..13).map(|i| format!("r{i}")).collect();
    let mut names: Vec<(&str, u32, u32)> = low
        .iter()
        .zip(0..)
        .map(|(n, i)| (n.as_str(), i, 32))
        .collect();
    names.extend([
        ("sp", 13, 32),
        ("lr", 14, 32),
        ("pc", 15, 32),
        ("xpsr", 25, 32),
        ("msp", 26, 32),
        ("psp", 27, 32),
        ("primask", 28, 32),
        ("basepri", 29, 32),
        ("faultmask", 30, 32),
        ("control", 31, 32),
    ]);
    (core, RegMap::new(&described(&names)))
}

impl Rig {
    /// A powered-up DAP over [`fake_core`].
    fn new() -> Rig {
        let log = Arc::new(Mutex::new(Shared::default()));
        let (core, regs) = fake_core(&log);
        let machine = Machine::new(Box::new(core), regs, Chip::stm32f405());
        let mut dap = Dap::new(machine);
        dap.write(Port::Dp(0x4), 0x5000_0000).unwrap();
        Rig { dap, log }
    }

    /// [`Rig::new`] with halting debug on (`C_DEBUGEN`), still halted.
    fn debug() -> Rig {
        let mut r = Rig::new();
        r.write32(machine::DHCSR, KEY | 0b11).unwrap();
        assert!(r.calls().is_empty());
        r
    }

    fn calls(&self) -> Vec<Call> {
        std::mem::take(&mut self.log.lock().unwrap().calls)
    }

    fn push_stop(&self, r: StopReason) {
        self.log.lock().unwrap().stops.push_back(r);
    }

    fn csw(&mut self, size: u32, inc: bool) {
        self.dap
            .write(Port::Ap(0x00), 0x2300_0000 | size | u32::from(inc) << 4)
            .unwrap();
    }

    fn read32(&mut self, addr: u32) -> crate::Result<u32> {
        self.csw(2, false);
        self.dap.write(Port::Ap(0x04), addr).unwrap();
        self.dap.read(Port::Ap(0x0C))
    }

    fn write32(&mut self, addr: u32, v: u32) -> crate::Result<()> {
        self.csw(2, false);
        self.dap.write(Port::Ap(0x04), addr).unwrap();
        self.dap.write(Port::Ap(0x0C), v)
    }
}

const KEY: u32 = 0xA05F_0000;

#[test]
fn dp_powers_up_with_a_handshake() {
    let log = Arc::new(Mutex::new(Shared::default()));
    let core = FakeCore {
        mem: BTreeMap::new(),
        regs: BTreeMap::new(),
        halted: true,
        log,
    };
    let mut dap = Dap::new(Machine::new(
        Box::new(core),
        RegMap::default(),
        Chip::stm32f405(),
    ));
    assert_eq!(dap.read(Port::Dp(0x0)).unwrap(), DPIDR);
    assert_eq!(dap.read(Port::Dp(0x4)).unwrap() >> 28, 0, "powered down");
    let e = dap.read(Port::Ap(0xC)).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::Port(PortError::PoweredDown)),
        "{e}"
    );
    assert!(e.to_string().contains("powered down"), "{e}");
    assert_eq!(
        dap.read(Port::Dp(0x4)).unwrap() & 1 << 5,
        1 << 5,
        "STICKYERR"
    );
    dap.write(Port::Dp(0x0), 1 << 2).unwrap(); // ABORT.STKERRCLR
    assert_eq!(dap.read(Port::Dp(0x4)).unwrap() & 1 << 5, 0);
    dap.write(Port::Dp(0x4), 0x5000_0F00).unwrap();
    assert_eq!(
        dap.read(Port::Dp(0x4)).unwrap() & 0xF000_0000,
        0xF000_0000,
        "both acks"
    );
    dap.write(Port::Dp(0x8), 0x0000_00F0).unwrap(); // SELECT bank 0xF
    assert_eq!(dap.read(Port::Ap(0xC)).unwrap(), AP_IDR);
    assert_eq!(
        dap.read(Port::Dp(0xC)).unwrap(),
        AP_IDR,
        "RDBUFF has the last AP read"
    );
    assert_eq!(dap.read(Port::Ap(0x8)).unwrap(), 0xE00F_F003, "BASE");
    assert_eq!(dap.read(Port::Ap(0x4)).unwrap(), 0, "CFG");
    dap.write(Port::Dp(0x8), 0x0100_00F0).unwrap(); // AP 1
    assert_eq!(dap.read(Port::Ap(0xC)).unwrap(), 0, "no AP 1");
    let e = dap.read(Port::Ap(0x0)).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::Port(PortError::NoSuchAp {
                ap: 1,
                register: 0xF0
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("AP 1"), "{e}");
    dap.write(Port::Dp(0x8), 0x0000_0001).unwrap(); // DPBANKSEL 1
    let e = dap.read(Port::Dp(0x4)).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::Port(PortError::DpBank { bank: 1 })),
        "{e}"
    );
    assert!(e.to_string().contains("bank 1"), "{e}");
}

#[test]
fn auto_incrementing_word_blocks_are_one_memory_request() {
    let mut r = Rig::debug();
    r.csw(2, true);
    r.dap.write(Port::Ap(0x04), 0x2000_0100).unwrap();
    let mut words = [0u32; 64];
    r.dap.read_block(Port::Ap(0x0C), &mut words).unwrap();
    assert_eq!(words[0], u32::from_le_bytes([0x00, 0x01, 0x02, 0x03]));
    assert_eq!(words[63], u32::from_le_bytes([0xFC, 0xFD, 0xFE, 0xFF]));
    assert_eq!(r.calls(), vec![Call::Read(0x2000_0100, 256)]);
    assert_eq!(
        r.dap.read(Port::Ap(0x04)).unwrap(),
        0x2000_0200,
        "TAR advanced"
    );
    // A block that crosses the 1 KiB auto-increment boundary is split there (and TAR wraps).
    r.dap.write(Port::Ap(0x04), 0x2000_03F8).unwrap();
    let mut four = [0u32; 4];
    r.dap.read_block(Port::Ap(0x0C), &mut four).unwrap();
    assert_eq!(
        r.calls(),
        vec![Call::Read(0x2000_03F8, 8), Call::Read(0x2000_0000, 8)]
    );
    r.dap.write(Port::Ap(0x04), 0x2000_0000).unwrap();
    r.dap.write_block(Port::Ap(0x0C), &[1, 2]).unwrap();
    assert_eq!(
        r.calls(),
        vec![Call::Write(0x2000_0000, vec![1, 0, 0, 0, 2, 0, 0, 0])]
    );
}

#[test]
fn byte_and_halfword_transfers_use_their_lanes() {
    let mut r = Rig::debug();
    r.csw(0, true);
    r.dap.write(Port::Ap(0x04), 0x2000_0013).unwrap();
    assert_eq!(r.dap.read(Port::Ap(0x0C)).unwrap(), 0x13 << 24);
    assert_eq!(r.dap.read(Port::Ap(0x04)).unwrap(), 0x2000_0014);
    r.csw(1, false);
    r.dap.write(Port::Ap(0x04), 0x2000_0022).unwrap();
    assert_eq!(r.dap.read(Port::Ap(0x0C)).unwrap(), 0x2322 << 16);
    r.dap.write(Port::Ap(0x0C), 0xBEEF_0000).unwrap();
    assert_eq!(
        r.calls().last(),
        Some(&Call::Write(0x2000_0022, vec![0xEF, 0xBE]))
    );
    r.dap.write(Port::Ap(0x04), 0x2000_0021).unwrap();
    let e = r.dap.read(Port::Ap(0x0C)).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::Port(PortError::Unaligned {
                addr: 0x2000_0021,
                size: 2
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("unaligned"), "{e}");
    // Packed transfers are not modelled.
    r.dap.write(Port::Ap(0x00), 0x2300_0022).unwrap();
    let e = r.dap.read(Port::Ap(0x0C)).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::Port(PortError::PackedIncrement { mode: 2 })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("packed"), "{e}");
}

#[test]
fn banked_data_registers_reach_the_tar_block() {
    let mut r = Rig::debug();
    r.csw(2, false);
    r.dap.write(Port::Ap(0x04), 0x2000_0048).unwrap();
    r.dap.write(Port::Dp(0x8), 0x10).unwrap(); // APBANKSEL 1: BD0-3
    assert_eq!(
        r.dap.read(Port::Ap(0x4)).unwrap(),
        u32::from_le_bytes([0x44, 0x45, 0x46, 0x47])
    );
}

#[test]
fn rom_table_and_component_ids_are_readable() {
    let mut r = Rig::debug();
    assert_eq!(r.read32(0xE00F_F000).unwrap(), 0xFFF0_F003, "SCS entry");
    assert_eq!(r.read32(0xE00F_FFF4).unwrap(), 0x10, "ROM table class");
    assert_eq!(r.read32(0xE000_EFE0).unwrap(), 0x0C, "SCS part");
    assert_eq!(r.read32(0xE000_1FE0).unwrap(), 0x02, "DWT part");
    assert_eq!(r.read32(0xE000_2FE0).unwrap(), 0x03, "FPB part");
    assert_eq!(r.read32(0xE000_0FE0).unwrap(), 0x01, "ITM part");
    assert_eq!(r.read32(0xE004_2000).unwrap(), 0x1007_6413, "DBGMCU_IDCODE");
    r.write32(0xE004_2004, 7).unwrap();
    assert_eq!(r.read32(0xE004_2004).unwrap(), 7);
    assert!(r.calls().is_empty(), "none of this reaches QEMU");
}

#[test]
fn unmodelled_addresses_are_errors_naming_them() {
    let mut r = Rig::debug();
    for addr in [0xE000_0000u32, 0xE004_0000, 0xE000_1004, 0xE00F_F800] {
        let e = r.read32(addr).unwrap_err();
        assert!(e.to_string().contains(&format!("{addr:#010x}")), "{e}");
    }
    // MON_EN: the debug monitor is not modelled (the fault catches are).
    let e = r.write32(0xE000_EDFC, 1 << 16).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::DemcrBits {
                unmodelled: 0x0001_0000,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("DEMCR"), "{e}");
    // QEMU's own SCS registers pass through.
    let _ = r.read32(0xE000_ED00);
    assert_eq!(r.calls(), vec![Call::Read(0xE000_ED00, 4)]);
}

#[test]
fn dhcsr_halts_steps_and_runs() {
    let mut r = Rig::new();
    // The rig starts halted. Turning debug on leaves it halted; clearing C_HALT then runs it.
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    assert!(r.calls().is_empty());
    assert_eq!(r.read32(machine::DHCSR).unwrap() & 1 << 17, 1 << 17);
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    assert_eq!(r.calls(), vec![Call::Resume]);
    let dhcsr = r.read32(machine::DHCSR).unwrap();
    assert_eq!(dhcsr & 1 << 17, 0, "running");
    assert_eq!(dhcsr & 1 << 24, 1 << 24, "S_RETIRE_ST after running");
    assert_eq!(
        r.read32(machine::DHCSR).unwrap() & 1 << 24,
        0,
        "cleared by the read"
    );
    // Without the key nothing happens.
    r.write32(machine::DHCSR, 0b11).unwrap();
    assert!(r.calls().is_empty());
    r.write32(machine::DHCSR, KEY | 0b11).unwrap();
    assert_eq!(r.calls(), vec![Call::Halt]);
    let dhcsr = r.read32(machine::DHCSR).unwrap();
    assert_eq!(
        dhcsr & 0x3_0003,
        0x3_0003,
        "S_HALT, S_REGRDY, C_HALT, C_DEBUGEN"
    );
    assert_eq!(r.read32(machine::DFSR).unwrap(), dfsr::HALTED);
    r.write32(machine::DFSR, dfsr::HALTED).unwrap();
    assert_eq!(r.read32(machine::DFSR).unwrap(), 0, "write one to clear");
    // C_STEP with C_HALT cleared: one instruction.
    r.write32(machine::DHCSR, KEY | 0b1101).unwrap();
    assert_eq!(r.calls(), vec![Call::Step]);
    assert_eq!(r.read32(machine::DHCSR).unwrap() & 1 << 17, 1 << 17);
    assert_eq!(r.read32(machine::DFSR).unwrap(), dfsr::HALTED);
}

#[test]
fn a_stop_while_running_is_seen_by_polling() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    r.calls();
    r.push_stop(StopReason::Breakpoint(0x0800_0200));
    assert_eq!(r.read32(machine::DHCSR).unwrap() & 1 << 17, 1 << 17);
    assert_eq!(r.read32(machine::DFSR).unwrap(), dfsr::BKPT);
}

#[test]
fn core_registers_go_through_dcrsr_and_dcrdr() {
    let mut r = Rig::debug();
    r.write32(machine::DCRSR, 15).unwrap();
    assert_eq!(r.read32(machine::DCRDR).unwrap(), 0x0800_0100);
    r.write32(machine::DCRSR, 16).unwrap();
    assert_eq!(
        r.read32(machine::DCRDR).unwrap(),
        0x0100_0000,
        "xPSR is gdb's 25"
    );
    r.write32(machine::DCRDR, 0x2000_1000).unwrap();
    r.write32(machine::DCRSR, 1 << 16 | 13).unwrap();
    r.write32(machine::DCRSR, 13).unwrap();
    assert_eq!(r.read32(machine::DCRDR).unwrap(), 0x2000_1000);
    // CONTROL/FAULTMASK/BASEPRI/PRIMASK packed.
    r.write32(machine::DCRDR, 0x0201_1001).unwrap();
    r.write32(machine::DCRSR, 1 << 16 | 0x14).unwrap();
    r.write32(machine::DCRSR, 0x14).unwrap();
    assert_eq!(r.read32(machine::DCRDR).unwrap(), 0x0201_1001);
    let e = r.write32(machine::DCRSR, 0x13).unwrap_err();
    assert!(
        matches!(
            e,
            VirtualProbeError::Selector(RegselError::Unknown { selector: 0x13 })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("0x13"), "{e}");
    // Not while running.
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    let e = r.write32(machine::DCRSR, 0).unwrap_err();
    assert!(
        matches!(e, VirtualProbeError::CoreRunning { dcrsr: 0 }),
        "{e}"
    );
    assert!(e.to_string().contains("halted"), "{e}");
}

#[test]
fn fpb_comparators_become_hardware_breakpoints_when_the_core_runs() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 0b11).unwrap();
    r.write32(0xE000_2000, 0b11).unwrap(); // FP_CTRL KEY|ENABLE
    r.write32(0xE000_2008, 0x0800_0200 | 1 << 30 | 1).unwrap();
    assert!(r.calls().is_empty(), "nothing sent until the core runs");
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    assert_eq!(r.calls(), vec![Call::AddBp(0x0800_0200), Call::Resume]);
    r.push_stop(StopReason::Breakpoint(0x0800_0200));
    r.read32(machine::DHCSR).unwrap();
    r.write32(0xE000_2008, 0).unwrap();
    // A step leaves the breakpoints as they are; running removes it.
    r.write32(machine::DHCSR, KEY | 0b1101).unwrap();
    assert_eq!(r.calls(), vec![Call::Step]);
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    assert_eq!(r.calls(), vec![Call::RemoveBp(0x0800_0200), Call::Resume]);
}

#[test]
fn running_from_an_enabled_comparator_halts_at_once() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 0b11).unwrap();
    r.write32(0xE000_2000, 0b11).unwrap();
    r.write32(0xE000_2008, 0x0800_0100 | 1 << 30 | 1).unwrap(); // at the pc
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    assert_eq!(r.calls(), vec![Call::AddBp(0x0800_0100)], "never resumed");
    assert_eq!(r.read32(machine::DHCSR).unwrap() & 1 << 17, 1 << 17);
    assert_eq!(r.read32(machine::DFSR).unwrap(), dfsr::BKPT);
}

#[test]
fn dwt_comparators_become_watchpoints_and_report_matched() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 0b11).unwrap();
    r.write32(0xE000_1020, 0x2000_0010).unwrap();
    r.write32(0xE000_1024, 2).unwrap();
    r.write32(0xE000_1028, 6).unwrap();
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    assert_eq!(r.calls(), vec![Call::Resume], "no TRCENA, no watchpoint");
    r.write32(machine::DHCSR, KEY | 0b11).unwrap();
    r.write32(machine::DEMCR, 1 << 24).unwrap();
    r.write32(machine::DFSR, 0x1F).unwrap(); // sticky bits of the halt
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    assert_eq!(
        r.calls(),
        vec![
            Call::Halt,
            Call::AddWatch(0x2000_0010, 4, WatchKind::Write),
            Call::Resume
        ]
    );
    r.push_stop(StopReason::Watchpoint {
        addr: 0x2000_0012,
        kind: WatchKind::Write,
    });
    r.read32(machine::DHCSR).unwrap();
    assert_eq!(r.read32(machine::DFSR).unwrap(), dfsr::DWTTRAP);
    assert_eq!(r.read32(0xE000_1028).unwrap(), 6 | 1 << 24, "MATCHED");
    assert_eq!(r.read32(0xE000_1028).unwrap(), 6);
}

#[test]
fn sysresetreq_resets_and_vector_catch_halts() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    r.calls();
    r.write32(machine::DEMCR, 1).unwrap(); // VC_CORERESET
    assert!(
        r.calls().is_empty(),
        "a modelled register does not reach QEMU"
    );
    r.write32(machine::AIRCR, 0x05FA_0004).unwrap();
    let calls = r.calls();
    assert!(calls.contains(&Call::Reset), "{calls:?}");
    assert!(!calls.contains(&Call::Resume), "caught at the reset vector");
    let dhcsr = r.read32(machine::DHCSR).unwrap();
    assert_eq!(dhcsr & 1 << 25, 1 << 25, "S_RESET_ST");
    assert_eq!(dhcsr & 1 << 17, 1 << 17, "halted");
    assert_eq!(
        r.read32(machine::DHCSR).unwrap() & 1 << 25,
        0,
        "cleared by reading"
    );
    assert_eq!(
        r.read32(machine::DFSR).unwrap() & dfsr::VCATCH,
        dfsr::VCATCH
    );
    // Without vector catch the core runs on after the reset.
    r.write32(machine::DEMCR, 0).unwrap();
    r.write32(machine::AIRCR, 0x05FA_0004).unwrap();
    assert_eq!(r.calls(), vec![Call::Reset, Call::Resume]);
}

#[test]
fn memory_is_read_while_running_by_pausing_the_core() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    r.calls();
    assert_eq!(
        r.read32(0x2000_0004).unwrap(),
        u32::from_le_bytes([4, 5, 6, 7])
    );
    assert_eq!(
        r.calls(),
        vec![Call::Halt, Call::Read(0x2000_0004, 4), Call::Resume]
    );
    // A stop that happens meanwhile is kept: the core stays halted.
    r.push_stop(StopReason::Breakpoint(0x0800_0300));
    r.read32(0x2000_0008).unwrap();
    assert_eq!(r.calls(), vec![Call::Halt, Call::Read(0x2000_0008, 4)]);
    assert_eq!(r.read32(machine::DFSR).unwrap(), dfsr::BKPT);
}

#[test]
fn comparators_changed_while_running_act_at_once() {
    let mut r = Rig::debug();
    r.write32(machine::DHCSR, KEY | 1).unwrap();
    r.calls();
    r.write32(0xE000_2008, 0x0800_0200 | 1 << 30 | 1).unwrap();
    assert!(r.calls().is_empty(), "the unit is off: nothing to do");
    r.write32(0xE000_2000, 0b11).unwrap();
    assert_eq!(
        r.calls(),
        vec![Call::Halt, Call::AddBp(0x0800_0200), Call::Resume]
    );
    assert_eq!(
        r.read32(machine::DHCSR).unwrap() & 1 << 17,
        0,
        "still running"
    );
}
