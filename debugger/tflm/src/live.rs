//! What a run-time observer reads at its stops while TFLM builds an interpreter: an arena
//! allocator's cursors, the interpreter's arena allocator and model, the node whose Init or
//! Prepare runs and whether it is Prepare, an operator's name, the greedy planner's figures,
//! and a model's name and shape. Offsets come from DWARF by name ([`LiveLayout::of`]), like
//! every reading of this crate; the fields are public so that an observer's tests can lay out
//! objects of their own.
//!
//! Both generations are described ([`LiveLayout::generation`]): TFLM of 2020 (the
//! `SimpleMemoryAllocator` the interpreter's by-value `MicroAllocator` points at, the node in
//! `context_helper_.current_node_idx_`) and current TFLM with one arena (the
//! `SingleArenaBufferAllocator` with its temporaries above the head, `temp_`, reached through the
//! `MicroAllocator` the interpreter refers to; the operator index in
//! `graph_.current_operator_index_`, Init or Prepare in `micro_context_.state_`). The split
//! persistent/non-persistent pair has no live layout: its builds are not observed.
//!
//! Reads are small and exact (a few words per stop, no page cache): what RAM holds is data, an
//! unreadable word is `None`.

use memlife_core::Memory;
use memlife_dwarf::Symbols;
use serde::Serialize;

use crate::flatbuffer::Fb;
use crate::layout::{Generation, Tflm, member_path, tflite_base_offset, tflite_class};
use crate::model;
use crate::ram::Ram;

/// The arena allocator's members (offsets in the object): a `SimpleMemoryAllocator` (2020) or
/// a `SingleArenaBufferAllocator` (current).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatorLayout {
    /// The object's size (`sizeof`), what `Create` takes from the tail for it.
    pub size: u64,
    /// `buffer_head_`.
    pub buffer_head: u64,
    /// `buffer_tail_`.
    pub buffer_tail: u64,
    /// `head_`.
    pub head: u64,
    /// `tail_`.
    pub tail: u64,
    /// `temp_` (current TFLM: the end of the temporaries above the head).
    pub temp: Option<u64>,
}

/// Current TFLM: from the `MicroAllocator` the interpreter refers to, to its arena allocator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MicroAllocatorHop {
    /// `persistent_buffer_allocator_` in the `MicroAllocator`.
    pub persistent: u64,
    /// Where the `IPersistentBufferAllocator` subobject (what that pointer points at) lies in
    /// the arena allocator.
    pub interface: u64,
}

/// Current TFLM: `micro_context_.state_` and the value of its `kPrepare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateLayout {
    /// The member's offset in the interpreter.
    pub offset: u64,
    /// `InterpreterState::kPrepare`, from DWARF's enumerators.
    pub prepare: i64,
}

/// The `MicroInterpreter`'s members an observer reads (offsets in the object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterpreterLayout {
    /// `model_`.
    pub model: u64,
    /// 2020: the pointer to the arena allocator, `allocator_.memory_allocator_` (the
    /// `MicroAllocator` is held by value). Current: `allocator_`, the reference to the
    /// `MicroAllocator`, from which `micro_allocator` leads on.
    pub arena_allocator: u64,
    /// Current: from the `MicroAllocator` to the arena allocator.
    pub micro_allocator: Option<MicroAllocatorHop>,
    /// 2020: `allocator_.active_`: `used_bytes()` returns 0 while it is set.
    pub active: Option<u64>,
    /// 2020: `context_helper_.current_node_idx_`, the node whose Init or Prepare runs, -1
    /// outside. Current: `graph_.current_operator_index_`, which keeps its last value outside
    /// the operator loops (an observer tells when a loop runs).
    pub node_index: Option<u64>,
    /// 2020: `context_.RequestScratchBufferInArena`, set only while the Prepare pass runs.
    pub scratch_request: Option<u64>,
    /// Current: `micro_context_.state_`, `kPrepare` during the Prepare pass.
    pub state: Option<StateLayout>,
    /// 2020: `node_and_registrations_`. Current: `graph_.subgraph_allocations_`, the first
    /// subgraph's record, whose nodes are at `subgraph_nodes`.
    pub nodes: Option<u64>,
    /// Current: `node_and_registrations` in `SubgraphAllocations`.
    pub subgraph_nodes: Option<u64>,
}

/// `NodeAndRegistration` and the registration it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLayout {
    /// `sizeof(NodeAndRegistration)`.
    pub size: u64,
    /// `registration` in it.
    pub registration: u64,
    /// `builtin_code` in the registration, and its size.
    pub builtin_code: u64,
    /// See `builtin_code`.
    pub builtin_code_size: u64,
    /// `custom_name` in the registration.
    pub custom_name: u64,
}

/// `GreedyMemoryPlanner`'s members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannerLayout {
    /// `buffer_count_`.
    pub buffer_count: u64,
    /// `max_buffer_count_`.
    pub max_buffer_count: u64,
    /// `requirements_`: the first of its arrays, at the start of its scratch area.
    pub requirements: u64,
    /// `buffer_offsets_`: the last of its arrays.
    pub buffer_offsets: u64,
    /// The size of one `buffer_offsets_` element.
    pub offset_size: u64,
}

/// Where an observer reads, for one ELF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveLayout {
    /// Which TFLM: the readings differ where the members do.
    pub generation: Generation,
    /// Pointer size.
    pub ptr_size: u64,
    /// The arena allocator.
    pub allocator: AllocatorLayout,
    /// The interpreter.
    pub interpreter: InterpreterLayout,
    /// Nodes and registrations (operator names).
    pub node: Option<NodeLayout>,
    /// The memory planner (the plan's temporary peak).
    pub planner: Option<PlannerLayout>,
    /// `BuiltinOperator` names by value.
    pub builtin_names: Vec<(i64, String)>,
}

/// An arena allocator's cursors as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cursors {
    /// `buffer_head_`.
    pub buffer_head: u64,
    /// `buffer_tail_`.
    pub buffer_tail: u64,
    /// `head_`.
    pub head: u64,
    /// `tail_`.
    pub tail: u64,
    /// `temp_`: the end of current TFLM's temporaries above the head (`head_` when there are
    /// none, and always in 2020).
    pub temp: u64,
}

impl Cursors {
    /// In order inside a non-empty arena.
    pub fn consistent(&self) -> bool {
        self.buffer_head < self.buffer_tail
            && self.buffer_head <= self.head
            && self.head <= self.temp
            && self.temp <= self.tail
            && self.tail <= self.buffer_tail
    }

    /// `temp_ - head_`: the temporaries' bytes.
    pub fn temp_bytes(&self) -> u64 {
        self.temp.saturating_sub(self.head)
    }

    /// `max(head_, temp_) - buffer_head_`: what current TFLM's `GetNonPersistentUsedBytes`
    /// returns, the head and the temporaries above it.
    pub fn non_persistent_bytes(&self) -> u64 {
        self.head.max(self.temp).saturating_sub(self.buffer_head)
    }

    /// `buffer_tail_ - tail_`.
    pub fn persistent_bytes(&self) -> u64 {
        self.buffer_tail.saturating_sub(self.tail)
    }

    /// `head_ - buffer_head_`.
    pub fn head_bytes(&self) -> u64 {
        self.head.saturating_sub(self.buffer_head)
    }

    /// `tail_ - temp_` (`tail_ - head_` in 2020).
    pub fn free_bytes(&self) -> u64 {
        self.tail.saturating_sub(self.temp.max(self.head))
    }

    /// Whether the allocator object at `address` (of `size` bytes) is its own arena's first
    /// persistent allocation, where TFLM places it: inside the tail, less than 16 bytes below
    /// the end. A temporary allocator (on the stack, over part of an arena) is not.
    pub fn holds_itself(&self, address: u64, size: u64) -> bool {
        let Some(end) = address.checked_add(size) else {
            return false;
        };
        self.consistent()
            && address >= self.tail
            && end <= self.buffer_tail
            && self.buffer_tail - end < crate::ARENA_ALIGNMENT
    }
}

/// The greedy planner's figures while it plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlannerFigures {
    /// Buffers added.
    pub buffers: u64,
    /// Buffers its scratch area has room for.
    pub max_buffers: u64,
    /// Bytes of its arrays per buffer (its scratch area holds `max_buffers` of each array).
    pub bytes_per_buffer: u64,
    /// Where its scratch area starts (`requirements_`, the first array).
    pub scratch_start: u64,
}

/// A model as an observer names and counts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelSummary {
    /// The ELF symbol of its flatbuffer (where it lies in flash, or the one whose bytes a RAM
    /// copy starts with), else its operators and tensor count (`model (QUANTIZE
    /// FULLY_CONNECTED; 12 tensors)`).
    pub name: String,
    /// Operators in execution order (builtin names, or the custom code).
    pub operators: Vec<String>,
    /// Tensors of the first subgraph.
    pub tensors: u64,
    /// Variable tensors (allocated from the tail after the plan).
    pub variables: u64,
}

/// An unsigned little-endian word of `size` bytes at `addr`, `None` when unreadable.
fn word(mem: &mut dyn Memory, addr: u64, size: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    let n = usize::try_from(size)
        .ok()
        .filter(|n| matches!(n, 1 | 2 | 4 | 8))?;
    mem.read(addr, b.get_mut(..n)?).ok()?;
    Some(u64::from_le_bytes(b))
}

fn offset(
    types: &memlife_dwarf::TypeTable,
    class: memlife_dwarf::TypeId,
    path: &str,
) -> Option<u64> {
    member_path(types, class, path).map(|(o, _)| o)
}

impl LiveLayout {
    /// The layout of this ELF's TFLM: of 2020, or current TFLM with one arena
    /// (`SingleArenaBufferAllocator`). `None` when DWARF lacks a member every reading needs
    /// (the allocator's cursors, the interpreter's model and allocator; current: the
    /// `MicroAllocator`'s persistent allocator pointer).
    pub fn of(tflm: &Tflm, symbols: &Symbols) -> Option<LiveLayout> {
        let types = symbols.types();
        let (allocator_class, interpreter) = match tflm.generation {
            Generation::Tflm2020 => (
                tflite_class(types, "SimpleMemoryAllocator")?,
                interpreter_2020(types)?,
            ),
            Generation::Current => {
                let class = tflite_class(types, "SingleArenaBufferAllocator")?;
                (class, interpreter_current(types, class)?)
            }
        };
        let a = |p: &str| offset(types, allocator_class, p);
        let allocator = AllocatorLayout {
            size: types.size_of(allocator_class)?,
            buffer_head: a("buffer_head_")?,
            buffer_tail: a("buffer_tail_")?,
            head: a("head_")?,
            tail: a("tail_")?,
            temp: a("temp_"),
        };
        if tflm.generation == Generation::Current && allocator.temp.is_none() {
            return None;
        }
        let node = tflm.node.as_ref().map(|n| NodeLayout {
            size: n.size,
            registration: n.registration,
            builtin_code: n.builtin_code,
            builtin_code_size: n.builtin_code_size,
            custom_name: n.custom_name,
        });
        Some(LiveLayout {
            generation: tflm.generation,
            ptr_size: tflm.ptr_size,
            allocator,
            interpreter,
            node,
            planner: planner_layout(symbols),
            builtin_names: tflm.builtin_names.clone(),
        })
    }

    fn ptr(&self, mem: &mut dyn Memory, addr: u64) -> Option<u64> {
        word(mem, addr, self.ptr_size)
    }

    /// The cursors of the arena allocator at `allocator`.
    pub fn cursors(&self, mem: &mut dyn Memory, allocator: u64) -> Option<Cursors> {
        let l = &self.allocator;
        let mut at = |off: u64| self.ptr(mem, allocator.checked_add(off)?);
        let head = at(l.head)?;
        let temp = match l.temp {
            Some(off) => at(off)?,
            None => head,
        };
        Some(Cursors {
            buffer_head: at(l.buffer_head)?,
            buffer_tail: at(l.buffer_tail)?,
            head,
            tail: at(l.tail)?,
            temp,
        })
    }

    /// The arena allocator the interpreter at `interpreter` uses (current: through its
    /// `MicroAllocator`, from the interface subobject back to the object).
    pub fn arena_allocator(&self, mem: &mut dyn Memory, interpreter: u64) -> Option<u64> {
        let word = self
            .ptr(
                mem,
                interpreter.checked_add(self.interpreter.arena_allocator)?,
            )
            .filter(|&a| a != 0)?;
        let Some(hop) = &self.interpreter.micro_allocator else {
            return Some(word);
        };
        let iface = self
            .ptr(mem, word.checked_add(hop.persistent)?)
            .filter(|&a| a != 0)?;
        iface.checked_sub(hop.interface)
    }

    /// The interpreter's `model_`.
    pub fn model(&self, mem: &mut dyn Memory, interpreter: u64) -> Option<u64> {
        self.ptr(mem, interpreter.checked_add(self.interpreter.model)?)
            .filter(|&m| m != 0)
    }

    /// The node whose Init or Prepare runs: 2020's index is -1 outside them; current TFLM's
    /// keeps its last value, so the caller reads it only inside an operator loop.
    pub fn current_node(&self, mem: &mut dyn Memory, interpreter: u64) -> Option<i64> {
        let off = self.interpreter.node_index?;
        let v = word(mem, interpreter.checked_add(off)?, 4)?;
        Some(i64::from(v as u32 as i32))
    }

    /// Whether the Prepare pass runs: 2020's context offers scratch requests only then;
    /// current TFLM's context is in its `kPrepare` state.
    pub fn in_prepare(&self, mem: &mut dyn Memory, interpreter: u64) -> Option<bool> {
        if let Some(state) = &self.interpreter.state {
            let v = word(mem, interpreter.checked_add(state.offset)?, 4)?;
            return Some(i64::from(v as u32 as i32) == state.prepare);
        }
        let off = self.interpreter.scratch_request?;
        Some(self.ptr(mem, interpreter.checked_add(off)?)? != 0)
    }

    /// What `arena_used_bytes()` returns now for the interpreter: 2020, 0 while its allocator
    /// is active, else head and tail bytes; current, the non-persistent bytes (head and
    /// temporaries) and the tail bytes.
    pub fn used_bytes(
        &self,
        mem: &mut dyn Memory,
        interpreter: u64,
        cursors: &Cursors,
    ) -> Option<u64> {
        if self.generation == Generation::Current {
            return Some(
                cursors
                    .non_persistent_bytes()
                    .saturating_add(cursors.persistent_bytes()),
            );
        }
        let off = self.interpreter.active?;
        let active = word(mem, interpreter.checked_add(off)?, 1)?;
        Some(if active != 0 {
            0
        } else {
            cursors
                .head_bytes()
                .saturating_add(cursors.persistent_bytes())
        })
    }

    /// The name of node `node`'s operator: the registration's custom name, else its builtin
    /// code's name; `None` before the nodes are resolved.
    pub fn operator_name(
        &self,
        mem: &mut dyn Memory,
        interpreter: u64,
        node: i64,
    ) -> Option<String> {
        let nl = self.node.as_ref()?;
        let index = u64::try_from(node).ok()?;
        let mut nodes = self.ptr(mem, interpreter.checked_add(self.interpreter.nodes?)?)?;
        if let Some(off) = self.interpreter.subgraph_nodes
            && nodes != 0
        {
            // The first subgraph's record, then its nodes.
            nodes = self.ptr(mem, nodes.checked_add(off)?)?;
        }
        if nodes == 0 {
            return None;
        }
        let rec = nodes.checked_add(index.checked_mul(nl.size)?)?;
        let reg = self.ptr(mem, rec.checked_add(nl.registration)?)?;
        if reg == 0 {
            return None;
        }
        let custom = self.ptr(mem, reg.checked_add(nl.custom_name)?).unwrap_or(0);
        if custom != 0
            && let Some(name) = memlife_dwarf::value::read_c_string(mem, custom, 64)
        {
            return Some(memlife_core::text::printable(&name).into_owned());
        }
        let code = word(mem, reg.checked_add(nl.builtin_code)?, nl.builtin_code_size)?;
        Some(self.builtin_name(i64::from(code as u32 as i32)))
    }

    fn builtin_name(&self, code: i64) -> String {
        self.builtin_names
            .iter()
            .find(|(v, _)| *v == code)
            .map_or_else(|| format!("BUILTIN_{code}"), |(_, n)| n.clone())
    }

    /// The planner at `planner` while it plans: buffers added, room, bytes per buffer (its
    /// arrays are laid out one after another, `max_buffers` elements each, from
    /// `requirements_` to `buffer_offsets_`).
    pub fn planner(&self, mem: &mut dyn Memory, planner: u64) -> Option<PlannerFigures> {
        let p = self.planner.as_ref()?;
        let mut int = |off: u64| word(mem, planner.checked_add(off)?, 4);
        let buffers = int(p.buffer_count)?;
        let max_buffers = int(p.max_buffer_count)?;
        let first = self.ptr(mem, planner.checked_add(p.requirements)?)?;
        let last = self.ptr(mem, planner.checked_add(p.buffer_offsets)?)?;
        let bytes_per_buffer = match max_buffers {
            0 => 0,
            n => (last.checked_sub(first)? / n).checked_add(p.offset_size)?,
        };
        Some(PlannerFigures {
            buffers,
            max_buffers,
            bytes_per_buffer,
            scratch_start: first,
        })
    }

    /// The model whose root table is at `model`: its name and shape (see [`ModelSummary`]).
    pub fn model_summary(
        &self,
        mem: &mut dyn Memory,
        symbols: &Symbols,
        model: u64,
    ) -> Option<ModelSummary> {
        let mut ram = Ram::new(mem, symbols);
        let m = {
            let mut fb = Fb::new(&mut ram, 0, u64::MAX);
            model::read(&mut fb, model)?
        };
        let operators: Vec<String> = m
            .operators
            .iter()
            .map(|o| match m.codes.get(o.opcode_index as usize) {
                Some(c) => c
                    .custom
                    .clone()
                    .unwrap_or_else(|| self.builtin_name(c.builtin)),
                None => format!("opcode {}", o.opcode_index),
            })
            .collect();
        let name = model_symbol(&mut ram, symbols, model).unwrap_or_else(|| {
            // No symbol: named by its shape, so that two models copied to one address are told
            // apart.
            let ops: Vec<&str> = operators.iter().map(String::as_str).collect();
            format!("model ({}; {} tensors)", ops.join(" "), m.tensors.len())
        });
        Some(ModelSummary {
            name,
            operators,
            tensors: m.tensors.len() as u64,
            variables: m.tensors.iter().filter(|t| t.is_variable).count() as u64,
        })
    }
}

/// 2020's interpreter: the `MicroAllocator` by value, the node index in its context helper.
fn interpreter_2020(types: &memlife_dwarf::TypeTable) -> Option<InterpreterLayout> {
    let interp = tflite_class(types, "MicroInterpreter")?;
    let i = |p: &str| offset(types, interp, p);
    Some(InterpreterLayout {
        model: i("model_")?,
        arena_allocator: i("allocator_.memory_allocator_")?,
        micro_allocator: None,
        active: i("allocator_.active_"),
        node_index: i("context_helper_.current_node_idx_"),
        scratch_request: i("context_.RequestScratchBufferInArena"),
        state: None,
        nodes: i("node_and_registrations_"),
        subgraph_nodes: None,
    })
}

/// Current TFLM's interpreter: `allocator_` refers to the `MicroAllocator` in the arena, whose
/// `persistent_buffer_allocator_` points at the arena allocator's `IPersistentBufferAllocator`
/// subobject; the graph holds the operator index and the nodes, the context its state.
fn interpreter_current(
    types: &memlife_dwarf::TypeTable,
    allocator_class: memlife_dwarf::TypeId,
) -> Option<InterpreterLayout> {
    let interp = tflite_class(types, "MicroInterpreter")?;
    let micro = tflite_class(types, "MicroAllocator")?;
    let i = |p: &str| offset(types, interp, p);
    let state = i("micro_context_.state_").and_then(|offset| {
        let prepare = enumerator(types, "InterpreterState", "kPrepare")?;
        Some(StateLayout { offset, prepare })
    });
    let subgraph_nodes = tflite_class(types, "SubgraphAllocations")
        .and_then(|s| offset(types, s, "node_and_registrations"));
    Some(InterpreterLayout {
        model: i("model_")?,
        arena_allocator: i("allocator_")?,
        micro_allocator: Some(MicroAllocatorHop {
            persistent: offset(types, micro, "persistent_buffer_allocator_")?,
            interface: tflite_base_offset(types, allocator_class, "IPersistentBufferAllocator")
                .unwrap_or(0),
        }),
        active: None,
        node_index: i("graph_.current_operator_index_"),
        scratch_request: None,
        state,
        nodes: i("graph_.subgraph_allocations_"),
        subgraph_nodes,
    })
}

/// The value of enumerator `name` (with or without the enumeration's prefix) of the
/// enumeration `enumeration`.
fn enumerator(types: &memlife_dwarf::TypeTable, enumeration: &str, name: &str) -> Option<i64> {
    let memlife_dwarf::Type::Enum { variants, .. } = types.get(types.find_enum(enumeration)?)?
    else {
        return None;
    };
    variants
        .iter()
        .find(|(n, _)| n == name || n.rsplit("::").next() == Some(name))
        .map(|(_, v)| *v)
}

fn planner_layout(symbols: &Symbols) -> Option<PlannerLayout> {
    let types = symbols.types();
    let class = tflite_class(types, "GreedyMemoryPlanner")?;
    let (buffer_offsets, ty) = member_path(types, class, "buffer_offsets_")?;
    let offset_size = match types.resolve(ty)?.1 {
        memlife_dwarf::Type::Pointer {
            target: Some(t), ..
        } => types.size_of(*t)?,
        _ => return None,
    };
    Some(PlannerLayout {
        buffer_count: offset(types, class, "buffer_count_")?,
        max_buffer_count: offset(types, class, "max_buffer_count_")?,
        requirements: offset(types, class, "requirements_")?,
        buffer_offsets,
        offset_size,
    })
}

/// How far before its root table a flatbuffer's start is looked for.
const ROOT_SEARCH: u64 = 256;
/// Bytes compared between a model in RAM and a symbol's data in the ELF.
const COMPARED: usize = 64;

/// The ELF symbol of the model whose root table is at `root`: the flatbuffer's start is the
/// word before the root whose value is the distance to it, followed by the file identifier
/// (`TFL3`); the symbol is one whose read-only data starts with the same bytes (the model in
/// flash, or what a RAM copy was copied from).
fn model_symbol(ram: &mut Ram<'_>, symbols: &Symbols, root: u64) -> Option<String> {
    let start = (1..=ROOT_SEARCH / 4)
        .filter_map(|k| root.checked_sub(4 * k))
        .find(|&at| {
            let mut id = [0u8; 4];
            ram.u32(at).map(u64::from) == Some(root - at)
                && ram.read(at + 4, &mut id).is_some()
                && &id == b"TFL3"
        })?;
    let mut head = [0u8; COMPARED];
    ram.read(start, &mut head)?;
    // Mapping symbols (`$d`) mark the same bytes; an end marker (`NAME_end` where `NAME` is a
    // symbol too) of the object before may sit at the same address. A sized symbol is
    // preferred, then a global one.
    let end_marker = |name: &str| {
        ["_end", "_end__", "_END"].iter().any(|suffix| {
            name.strip_suffix(suffix)
                .is_some_and(|base| symbols.elf_symbol(base).is_some())
        })
    };
    symbols
        .elf_symbols()
        .iter()
        .filter(|s| s.kind != memlife_dwarf::SymbolKind::Function)
        .filter(|s| !s.name.is_empty() && !s.name.starts_with('$'))
        .filter(|s| {
            // Linker scripts often put read-only data in `.text`.
            let bytes = symbols
                .rodata(s.address, COMPARED)
                .or_else(|| symbols.code(s.address, COMPARED));
            bytes == Some(&head[..])
        })
        .min_by_key(|s| (end_marker(&s.name), s.size == 0, s.local))
        .map(|s| s.name.clone())
}
