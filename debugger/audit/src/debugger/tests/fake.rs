//! A fake target that replays a script of firmware steps, a fake allocator over it, and a small
//! builder of scripts in terms of calls, returns, mallocs and frees.
//!
//! The symbols are a real firmware's (the heap crate's committed `heap4-fragmentation.elf`), so
//! every address is a real function's and the host-side resume decodes real instructions. The
//! heap is a fake: three counters in RAM (bytes used, bytes free, the minimum ever free) and a
//! size word in front of each user pointer.

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use memlife_core::{
    BreakpointKind, Breakpoints, Control, Memory, MemoryWrite, Register, Registers, Result,
    StopReason, Target, TargetError, cortex_m,
};
use memlife_dwarf::Symbols;
use memlife_heap::{
    AllocatorKind, BlockRef, EntryPoint, HeapError, HeapState, HeapStatus, HeapWalker, LinkState,
    LowWaterMark, ResolvedSymbol, WalkContext,
};

use crate::config::{
    AuditConfig, EngineSettings, EngineTuning, PeakMethod, SpanLabels, TensorTable,
};
use crate::debugger::Debugger;

/// RAM of the fake target (the firmware's `_estack` is its end).
pub const RAM: u64 = 0x2000_0000;
const RAM_LEN: usize = 0x3_0000;
/// The fake allocator's counters.
pub const USED: u64 = RAM;
pub const FREE: u64 = RAM + 4;
pub const MIN: u64 = RAM + 8;
/// The fake heap's capacity.
pub const HEAP_SIZE: u64 = 0x1000;
/// Where the scripts keep their stacks and their blocks.
pub const STACK: u64 = RAM + 0x2_0000;
pub const BLOCKS: u64 = RAM + 0x1000;

/// What the firmware does next: arrive at `pc` with these registers, after writing `pokes` and
/// lowering each word of `lowers` to at most its value (what an allocator does to its
/// minimum-ever counter, whatever memlife wrote there).
#[derive(Debug, Clone, Default)]
pub struct Step {
    pub pc: u64,
    pub sp: u64,
    pub lr: u64,
    pub args: [u64; 4],
    pub pokes: Vec<(u64, u32)>,
    pub lowers: Vec<(u64, u32)>,
    /// The program exits here with this status (semihosting `SYS_EXIT`): the target is gone.
    pub exit: Option<i32>,
}

/// What the test reads back after the run.
#[derive(Debug, Default)]
pub struct Log {
    /// The pc of every stop.
    pub stops: Vec<u64>,
    /// The RAM at the end (for the watermark's restored value).
    pub ram: Vec<u8>,
}

/// A target that runs the script: on resume it executes steps (applying their pokes) until it
/// reaches one whose pc has a breakpoint, and stops there; a script that runs out never stops.
pub struct FakeTarget {
    ram: Vec<u8>,
    regs: [u64; 26],
    script: VecDeque<Step>,
    inserted: BTreeSet<u64>,
    pending: Option<StopReason>,
    /// The program's exit status, once it exited: nothing answers after that.
    exited: Option<i32>,
    log: Rc<RefCell<Log>>,
    /// Hardware breakpoints, like an FPB's comparators: one more is refused.
    pub capacity: Option<usize>,
}

impl FakeTarget {
    pub fn new(script: Vec<Step>, log: Rc<RefCell<Log>>) -> Self {
        let mut t = FakeTarget {
            ram: vec![0; RAM_LEN],
            regs: [0; 26],
            script: script.into(),
            inserted: BTreeSet::new(),
            pending: None,
            exited: None,
            log,
            capacity: None,
        };
        t.poke(FREE, HEAP_SIZE as u32);
        t.poke(MIN, HEAP_SIZE as u32);
        t.regs[cortex_m::SP] = STACK;
        t.regs[usize::from(cortex_m::GDB_XPSR)] = 0x0100_0000;
        t
    }

    fn poke(&mut self, addr: u64, v: u32) {
        let o = (addr - RAM) as usize;
        self.ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn slot(reg: Register) -> Result<usize> {
        cortex_m::gdb_number(reg)
            .map(usize::from)
            .filter(|n| *n < 26)
            .ok_or(TargetError::Unsupported("this register"))
    }
}

impl Drop for FakeTarget {
    fn drop(&mut self) {
        self.log.borrow_mut().ram = std::mem::take(&mut self.ram);
    }
}

impl Memory for FakeTarget {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let unmapped = TargetError::Unmapped {
            addr,
            len: buf.len(),
        };
        let o = addr.checked_sub(RAM).ok_or(unmapped)? as usize;
        let src = self
            .ram
            .get(o..o + buf.len())
            .ok_or(TargetError::Unmapped {
                addr,
                len: buf.len(),
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl MemoryWrite for FakeTarget {
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        let o = (addr - RAM) as usize;
        self.ram[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
}

impl Registers for FakeTarget {
    fn read_register(&mut self, reg: Register) -> Result<u64> {
        Ok(self.regs[Self::slot(reg)?])
    }
    fn write_register(&mut self, reg: Register, value: u64) -> Result<()> {
        self.regs[Self::slot(reg)?] = value;
        Ok(())
    }
    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        Ok(Vec::new())
    }
}

impl Control for FakeTarget {
    fn halt(&mut self) -> Result<StopReason> {
        Ok(StopReason::Halted)
    }
    fn resume(&mut self) -> Result<()> {
        while let Some(step) = self.script.pop_front() {
            for (addr, v) in &step.pokes {
                self.poke(*addr, *v);
            }
            for (addr, v) in &step.lowers {
                let mut now = [0u8; 4];
                self.read(*addr, &mut now)?;
                self.poke(*addr, u32::from_le_bytes(now).min(*v));
            }
            if let Some(status) = step.exit {
                self.exited = Some(status);
                self.pending = Some(StopReason::Exited(status));
                return Ok(());
            }
            self.regs[cortex_m::PC] = step.pc;
            self.regs[cortex_m::SP] = step.sp;
            self.regs[cortex_m::LR] = step.lr;
            self.regs[..4].copy_from_slice(&step.args);
            if self.inserted.contains(&step.pc) {
                self.log.borrow_mut().stops.push(step.pc);
                self.pending = Some(StopReason::Breakpoint(step.pc));
                return Ok(());
            }
        }
        Ok(())
    }
    fn step(&mut self) -> Result<StopReason> {
        Ok(StopReason::Step)
    }
    fn wait_for_stop(&mut self, _: Duration) -> Result<Option<StopReason>> {
        Ok(self.pending.take())
    }
    fn reset(&mut self, _: bool) -> Result<()> {
        match self.exited {
            Some(status) => Err(TargetError::Exited(status)),
            None => Ok(()),
        }
    }
    /// Like a board's debug unit with few comparators, it catches faults by vector catch.
    fn catch_faults(&mut self, _: bool) -> Result<bool> {
        Ok(self.capacity.is_some())
    }
    fn is_halted(&self) -> bool {
        true
    }
}

impl Breakpoints for FakeTarget {
    fn add_breakpoint(&mut self, addr: u64, _: BreakpointKind) -> Result<()> {
        if self
            .capacity
            .is_some_and(|c| !self.inserted.contains(&addr) && self.inserted.len() >= c)
        {
            return Err(TargetError::Exhausted {
                what: "hardware breakpoints",
                count: self.capacity.unwrap_or(0) as u32,
            });
        }
        self.inserted.insert(addr);
        Ok(())
    }
    fn remove_breakpoint(&mut self, addr: u64, _: BreakpointKind) -> Result<()> {
        self.inserted.remove(&addr);
        Ok(())
    }
    fn inserted(&self) -> Vec<(u64, BreakpointKind)> {
        self.inserted
            .iter()
            .map(|a| (*a, BreakpointKind::Software))
            .collect()
    }
    fn capacity(&self) -> Option<usize> {
        self.capacity
    }
}

impl Target for FakeTarget {
    fn describe(&self) -> String {
        "fake".into()
    }
    fn control(&mut self) -> Option<&mut dyn Control> {
        Some(self)
    }
    fn breakpoints(&mut self) -> Option<&mut dyn Breakpoints> {
        Some(self)
    }
    fn memory_write(&mut self) -> Option<&mut dyn MemoryWrite> {
        Some(self)
    }
    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}

/// The fake allocator: bytes in use in a counter, a block's size in the word before its user
/// pointer, the block 8 bytes before it.
#[derive(Debug)]
pub struct FakeWalker {
    pub entries: &'static [EntryPoint],
}

/// pvPortMalloc and vPortFree, traced at pvPortMalloc's return instruction.
pub const FREERTOS_LIKE: &[EntryPoint] = &[
    EntryPoint::malloc("pvPortMalloc", 0),
    EntryPoint::free("vPortFree", 0),
];

/// An allocator whose malloc has no return instruction to break on (`mem_free` is a tail call
/// in this firmware): its block is caught at the caller's return address instead.
pub const NO_EXITS: &[EntryPoint] = &[
    EntryPoint::malloc("mem_free", 0),
    EntryPoint::free("vPortFree", 0),
];

impl HeapWalker for FakeWalker {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::Heap4
    }

    fn name(&self) -> &'static str {
        "fake"
    }

    fn walk(
        &self,
        mem: &mut dyn Memory,
        ctx: WalkContext,
    ) -> std::result::Result<HeapState, HeapError> {
        let used = u64::from(mem.read_u32(USED)?);
        let min = u64::from(mem.read_u32(MIN)?);
        Ok(HeapState {
            allocator: "fake",
            status: if ctx.inside_allocator.is_some() {
                HeapStatus::Busy
            } else {
                HeapStatus::Ok
            },
            heap_start: BLOCKS,
            heap_size: HEAP_SIZE,
            total_free: HEAP_SIZE - used,
            used,
            largest_free: HEAP_SIZE - used,
            free_blocks: 1,
            used_blocks: 0,
            min_ever_free: Some(min),
            ..HeapState::empty("fake")
        })
    }

    fn entry_points(&self) -> &'static [EntryPoint] {
        self.entries
    }

    fn header_range(&self, ptr: u64) -> Option<memlife_heap::HeaderRange> {
        Some(memlife_heap::HeaderRange {
            addr: ptr.checked_sub(8)?,
            len: 8,
        })
    }

    fn block_of(
        &self,
        mem: &mut dyn Memory,
        ptr: u64,
    ) -> std::result::Result<Option<BlockRef>, HeapError> {
        let size = u64::from(mem.read_u32(ptr - 4)?);
        Ok((size > 0).then_some(BlockRef {
            addr: ptr - 8,
            size,
        }))
    }

    fn low_water_mark(&self) -> LowWaterMark {
        LowWaterMark::Counters {
            free: FREE,
            minimum: MIN,
        }
    }

    fn resolved(&self) -> Vec<ResolvedSymbol> {
        Vec::new()
    }
}

/// The firmware the scripts run on.
pub fn symbols() -> Rc<Symbols> {
    let elf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../heap/testdata/heap4-fragmentation.elf");
    Rc::new(Symbols::load(&elf).unwrap())
}

/// A script of firmware steps that keeps the fake heap consistent.
pub struct Firmware {
    pub symbols: Rc<Symbols>,
    pub steps: Vec<Step>,
    used: u32,
}

impl Firmware {
    pub fn new(symbols: &Rc<Symbols>) -> Self {
        Firmware {
            symbols: Rc::clone(symbols),
            steps: Vec::new(),
            used: 0,
        }
    }

    /// The entry address of a function.
    pub fn addr(&self, function: &str) -> u64 {
        self.symbols.function(function).unwrap().entry & !1
    }

    /// A call of `function` with the stack pointer at `sp`, returning to `ret`.
    pub fn call(&mut self, function: &str, sp: u64, ret: u64, args: [u64; 4]) {
        let pc = self.addr(function);
        self.steps.push(Step {
            pc,
            sp,
            lr: ret | 1,
            args,
            ..Step::default()
        });
    }

    /// A return to `ret` with the stack pointer back at `sp`, `r0` the return value.
    pub fn ret(&mut self, ret: u64, sp: u64, r0: u64) {
        self.steps.push(Step {
            pc: ret,
            sp,
            lr: 0,
            args: [r0, 0, 0, 0],
            ..Step::default()
        });
    }

    /// pvPortMalloc(size) called from `caller_ret` returns `ptr` (a block of `size` bytes):
    /// the entry, then its return instruction with r0 = ptr.
    pub fn malloc(&mut self, sp: u64, caller_ret: u64, ptr: u64, size: u32) {
        self.malloc_asking(sp, caller_ret, ptr, size, size);
    }

    /// pvPortMalloc(`request`) returning a block of `size` bytes (the allocator rounds up).
    pub fn malloc_asking(&mut self, sp: u64, caller_ret: u64, ptr: u64, request: u32, size: u32) {
        self.call(
            "pvPortMalloc",
            sp,
            caller_ret,
            [u64::from(request), 0, 0, 0],
        );
        self.used += size;
        let malloc = self.symbols.function("pvPortMalloc").unwrap();
        let (addr, len) = (malloc.entry, malloc.size);
        let code = self.symbols.code(addr, len as usize).unwrap();
        let exit = cortex_m::thumb::return_instructions(code, addr)[0];
        self.steps.push(Step {
            pc: exit,
            sp: sp - 32,
            lr: caller_ret | 1,
            args: [ptr, 0, 0, 0],
            pokes: self.heap_pokes(Some((ptr - 4, size))),
            lowers: self.lower_min(),
            exit: None,
        });
        // Back in the caller, r0 still the block.
        self.steps.push(Step {
            pc: caller_ret,
            sp,
            args: [ptr, 0, 0, 0],
            ..Step::default()
        });
    }

    /// The allocator entry of [`NO_EXITS`] (a tail call) with its block caught at `caller_ret`.
    pub fn malloc_without_exits(&mut self, sp: u64, caller_ret: u64, ptr: u64, size: u32) {
        self.call("mem_free", sp, caller_ret, [u64::from(size), 0, 0, 0]);
        self.used += size;
        let pokes = self.heap_pokes(Some((ptr - 4, size)));
        self.steps.push(Step {
            pc: caller_ret,
            sp,
            args: [ptr, 0, 0, 0],
            pokes,
            lowers: self.lower_min(),
            ..Step::default()
        });
    }

    /// vPortFree(ptr) of a block of `size` bytes called from `caller_ret`.
    pub fn free(&mut self, sp: u64, caller_ret: u64, ptr: u64, size: u32) {
        self.used -= size;
        let pokes = self.heap_pokes(None);
        self.call("vPortFree", sp, caller_ret, [ptr, 0, 0, 0]);
        // The counters change inside vPortFree; the walk at its entry still sees them before.
        self.steps.push(Step {
            pc: caller_ret,
            sp,
            pokes,
            ..Step::default()
        });
    }

    /// The program exits with `status`.
    pub fn exit(&mut self, status: i32) {
        self.steps.push(Step {
            exit: Some(status),
            ..Step::default()
        });
    }

    /// Lowers the allocator's minimum-ever counter to `bytes` below the free bytes now, as a
    /// transient peak the trace does not see would (a step that never stops: nothing is set at
    /// the reset vector).
    pub fn dip(&mut self, bytes: u32) {
        self.steps.push(Step {
            pc: 0x0800_0000,
            sp: STACK,
            lowers: vec![(MIN, HEAP_SIZE as u32 - self.used - bytes)],
            ..Step::default()
        });
    }

    fn heap_pokes(&self, header: Option<(u64, u32)>) -> Vec<(u64, u32)> {
        let mut pokes = vec![(USED, self.used), (FREE, HEAP_SIZE as u32 - self.used)];
        pokes.extend(header);
        pokes
    }

    fn lower_min(&self) -> Vec<(u64, u32)> {
        vec![(MIN, HEAP_SIZE as u32 - self.used)]
    }
}

/// A debugger over `fw`'s script with the fake allocator.
pub fn debugger(
    fw: Firmware,
    entries: &'static [EntryPoint],
    method: PeakMethod,
) -> (Debugger, Rc<RefCell<Log>>) {
    debugger_with(fw, entries, method, None)
}

/// [`debugger`] over a target with `capacity` hardware breakpoints.
pub fn debugger_with(
    fw: Firmware,
    entries: &'static [EntryPoint],
    method: PeakMethod,
    capacity: Option<usize>,
) -> (Debugger, Rc<RefCell<Log>>) {
    let symbols = Rc::clone(&fw.symbols);
    let (target, log) = target(fw, capacity);
    let settings = EngineSettings {
        config: lifecycle_config(),
        method,
        timeout: Duration::from_millis(50),
        keep_cycles: Some(crate::history::DEFAULT_KEEP_CYCLES),
        link: LinkState::default(),
        tuning: EngineTuning::default(),
    };
    let dbg = Debugger::new(target, symbols, walker(entries), settings)
        .map_err(|r| r.error)
        .unwrap();
    (dbg, log)
}

/// The fake target replaying `fw`'s steps, with `capacity` hardware breakpoints.
pub fn target(fw: Firmware, capacity: Option<usize>) -> (Box<dyn Target>, Rc<RefCell<Log>>) {
    let log = Rc::new(RefCell::new(Log::default()));
    let mut target = FakeTarget::new(fw.steps, Rc::clone(&log));
    target.capacity = capacity;
    (Box::new(target), log)
}

/// The fake allocator with these traced entries.
pub fn walker(entries: &'static [EntryPoint]) -> Box<dyn HeapWalker> {
    Box::new(FakeWalker { entries })
}

/// The lifecycle of the test firmware (the bundled C engine's, whose ELF the symbols are):
/// its phases by their function names, its spans, its tensor table and its operator names.
pub fn lifecycle_config() -> AuditConfig {
    let pairs = |list: &[(&str, &str)]| {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let op_names = SpanLabels {
        arg: 1,
        string: false,
        names: Some("g_ops".into()),
        field: Some("name".into()),
    };
    AuditConfig {
        phases: pairs(&[
            ("load", "model_load"),
            ("build", "graph_build"),
            ("run", "inference_run"),
            ("release", "model_release"),
            ("switch", "model_switch"),
        ]),
        spans: pairs(&[("graph_build", "op_init"), ("inference_run", "op_invoke")]),
        tensors: Some(TensorTable {
            table: "g_tensors".into(),
            count: Some("g_tensor_count".into()),
            name: Some("name".into()),
            addr: "addr".into(),
            size: "size".into(),
            first: "producer".into(),
            last: "last_consumer".into(),
            bundled: true,
        }),
        labels: [
            ("op_init".to_string(), op_names.clone()),
            ("op_invoke".to_string(), op_names),
        ]
        .into_iter()
        .collect(),
        ..AuditConfig::default()
    }
}
