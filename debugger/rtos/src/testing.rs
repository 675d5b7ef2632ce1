//! Test support (this crate's tests, and others' with the feature `testing`): a synthetic
//! single-core kernel in fake RAM, laid out as FreeRTOS V11 lays out a 32-bit build with the
//! trace facility, `pxEndOfStack`, mutexes, static allocation and one notification slot. Tests
//! add tasks to lists, then damage what they want. Its functions panic on misuse (they are for
//! tests only).
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeMap;

use memlife_core::Snapshot;

use crate::frame::{ContextLayout, FrameKind};
use crate::layout::{Field, Global, ItemLayout, KernelLayout, ListLayout, TcbLayout};
use crate::{FreeRtos, Port, StackFill};

/// Where the fake RAM starts.
pub const BASE: u64 = 0x2000_0000;
const RAM: usize = 0x10000;
/// Where the TCBs and the stacks go.
const TCBS: u64 = BASE + 0x1000;
const STACKS: u64 = BASE + 0x4000;
/// Each task's stack.
pub const STACK_BYTES: u64 = 0x200;
/// Bytes of each stack the task has used (above its saved context).
pub const USED: u64 = 0x40;

const fn f(offset: u64, size: u64) -> Field {
    Field { offset, size }
}
const fn g(offset: u64, size: u64) -> Global {
    Global {
        addr: BASE + offset,
        size,
    }
}

/// The kernel's layout: `ListItem_t` 20 bytes, `List_t` 20, `TCB_t` 84, four priorities.
pub fn layout() -> KernelLayout {
    let item = ItemLayout {
        value: f(0, 4),
        next: f(4, 4),
        previous: f(8, 4),
        owner: Some(f(12, 4)),
        container: Some(f(16, 4)),
        size: 20,
    };
    KernelLayout {
        current_tcb: g(0x000, 4),
        ready_lists: g(0x010, 80),
        priorities: 4,
        delayed: [g(0x060, 20), g(0x074, 20)],
        pending_ready: g(0x088, 20),
        termination: Some(g(0x09c, 20)),
        suspended: Some(g(0x0b0, 20)),
        task_count: Some(g(0x0c4, 4)),
        scheduler_running: Some(g(0x0c8, 4)),
        scheduler_suspended: Some(g(0x0cc, 4)),
        tick_count: Some(g(0x0d0, 4)),
        list: ListLayout {
            size: 20,
            count: f(0, 4),
            end: 8,
            first: f(12, 4),
            item,
        },
        tcb: TcbLayout {
            size: 84,
            top_of_stack: f(0, 4),
            state_item: 4,
            event_item: 24,
            priority: f(44, 4),
            stack: f(48, 4),
            name: f(52, 16),
            end_of_stack: Some(f(68, 4)),
            number: Some(f(72, 4)),
            base_priority: Some(f(76, 4)),
            allocation: Some(f(80, 1)),
            notify_state: Some(f(81, 1)),
            mpu_settings: false,
            stack_word: 4,
        },
    }
}

/// The kernel over [`layout`] with a port of this context layout.
pub fn kernel(context: ContextLayout) -> FreeRtos {
    FreeRtos::from_parts(
        layout(),
        Port {
            layout: Some(context),
            name: None,
            evidence: "test".into(),
        },
        StackFill::Configured("test"),
    )
}

/// The saved context a port leaves: r4..r11 = 0x40+n, r0..r3 = 0xA0+n, r12 = 0xAC, lr, pc,
/// xPSR with the Thumb bit; s<n> = 0x5000+n and FPSCR 0xF0 in an extended frame.
pub fn frame_words(kind: FrameKind, pc: u32) -> Vec<u32> {
    let mut w: Vec<u32> = (4..12).map(|n| 0x40 + n).collect();
    let hw = [0xA0, 0xA1, 0xA2, 0xA3, 0xAC, 0x0800_0101, pc, 0x0100_0000];
    match kind {
        FrameKind::Basic => w.extend(hw),
        FrameKind::BasicWithExcReturn => {
            w.push(0xFFFF_FFFD);
            w.extend(hw);
        }
        FrameKind::Extended => {
            w.push(0xFFFF_FFED);
            w.extend((16..32).map(|n| 0x5000 + n));
            w.extend(hw);
            w.extend((0..16).map(|n| 0x5000 + n));
            w.extend([0xF0, 0]);
        }
    }
    w
}

/// A fake RAM image of the kernel being built.
#[derive(Debug)]
pub struct Builder {
    pub layout: KernelLayout,
    pub ram: Vec<u8>,
    /// List address -> the items on it, in order.
    lists: BTreeMap<u64, Vec<u64>>,
    tasks: u64,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// An empty, initialised kernel: every list empty (its end marker points to itself), the
    /// scheduler running.
    pub fn new() -> Builder {
        let layout = layout();
        let mut b = Builder {
            layout: layout.clone(),
            ram: vec![0; RAM],
            lists: BTreeMap::new(),
            tasks: 0,
        };
        for p in 0..layout.priorities {
            b.lists.insert(layout.ready_list(p), Vec::new());
        }
        for gl in [layout.delayed[0], layout.delayed[1], layout.pending_ready]
            .into_iter()
            .chain(layout.termination)
            .chain(layout.suspended)
        {
            b.lists.insert(gl.addr, Vec::new());
        }
        b.put(layout.scheduler_running.unwrap().addr, 1);
        b.put(layout.tick_count.unwrap().addr, 1234);
        b
    }

    /// Writes a word.
    pub fn put(&mut self, addr: u64, value: u32) {
        let off = (addr - BASE) as usize;
        self.ram[off..off + 4].copy_from_slice(&value.to_le_bytes());
    }

    /// Reads a word.
    pub fn get(&self, addr: u64) -> u32 {
        let off = (addr - BASE) as usize;
        u32::from_le_bytes(self.ram[off..off + 4].try_into().unwrap())
    }

    /// A task on `list` (its state item), with a saved context of `kind` resuming at `pc`.
    /// Returns its TCB.
    pub fn task(&mut self, name: &str, priority: u32, list: u64, kind: FrameKind, pc: u32) -> u64 {
        let n = self.tasks;
        self.tasks += 1;
        let tcb = TCBS + n * 0x100;
        let low = STACKS + n * STACK_BYTES;
        let high = low + STACK_BYTES;
        let words = frame_words(kind, pc);
        let top = high - USED - 4 * words.len() as u64;
        // The fill, then the used part and the context above it.
        let (lo, hi) = ((low - BASE) as usize, (high - BASE) as usize);
        self.ram[lo..hi].fill(0xa5);
        for a in (top..high).step_by(4) {
            self.put(a, 0x1111_1111);
        }
        for (i, w) in words.iter().enumerate() {
            self.put(top + 4 * i as u64, *w);
        }
        let t = self.layout.tcb;
        self.put(tcb + t.top_of_stack.offset, top as u32);
        self.put(tcb + t.priority.offset, priority);
        self.put(tcb + t.base_priority.unwrap().offset, priority);
        self.put(tcb + t.stack.offset, low as u32);
        self.put(tcb + t.end_of_stack.unwrap().offset, (high - 4) as u32);
        self.put(tcb + t.number.unwrap().offset, n as u32 + 1);
        let name_at = (tcb + t.name.offset - BASE) as usize;
        self.ram[name_at..name_at + name.len()].copy_from_slice(name.as_bytes());
        let (state, event) = (tcb + t.state_item, tcb + t.event_item);
        self.put(state + 12, tcb as u32);
        self.put(event + 12, tcb as u32);
        self.join(list, state);
        tcb
    }

    /// Puts an item on a list (its container set; links are written by [`Builder::finish`]).
    pub fn join(&mut self, list: u64, item: u64) {
        self.put(item + 16, list as u32);
        self.lists.entry(list).or_default().push(item);
    }

    /// The event item of `tcb`.
    pub fn event_item(&self, tcb: u64) -> u64 {
        tcb + self.layout.tcb.event_item
    }

    /// Links every list, sets the counts and `pxCurrentTCB`, and gives the RAM.
    pub fn finish(mut self, current: u64) -> Snapshot {
        let lists = std::mem::take(&mut self.lists);
        for (list, items) in &lists {
            let end = list + self.layout.list.end;
            self.put(*list, items.len() as u32);
            self.put(end, u32::MAX);
            let mut prev = end;
            for item in items {
                self.put(prev + 4, *item as u32);
                self.put(item + 8, prev as u32);
                prev = *item;
            }
            self.put(prev + 4, end as u32);
            self.put(end + 8, prev as u32);
        }
        self.put(self.layout.current_tcb.addr, current as u32);
        self.put(self.layout.task_count.unwrap().addr, self.tasks as u32);
        ram_at(self.ram)
    }

    /// Writes every list's links as [`Builder::finish`] would, and keeps building (for tests
    /// that damage links afterwards).
    pub fn finish_keep(self, current: u64) -> Builder {
        let layout = self.layout.clone();
        let tasks = self.tasks;
        let mut snap = self.finish(current);
        let mut ram = vec![0; RAM];
        memlife_core::Memory::read(&mut snap, BASE, &mut ram).unwrap();
        Builder {
            layout,
            ram,
            lists: BTreeMap::new(),
            tasks,
        }
    }

    /// The RAM as it is.
    pub fn memory(self) -> Snapshot {
        ram_at(self.ram)
    }
}

/// A target whose memory is `ram` at [`BASE`] and nothing else.
fn ram_at(ram: Vec<u8>) -> Snapshot {
    let mut snap = Snapshot::default();
    snap.add_region(BASE, ram).unwrap();
    snap
}
