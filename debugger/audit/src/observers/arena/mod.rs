//! The arena observer: TensorFlow Lite Micro's arena watched while each interpreter is built,
//! added to the engine when the ELF has TFLM of 2020 or current TFLM with one arena
//! ([`ArenaObserver::for_elf`]). No instrumentation and no rebuild: breakpoints on TFLM's own
//! functions, and reads of its objects by the names DWARF gives their members
//! (`memlife_tflm::LiveLayout`).
//!
//! Where it breaks ([`hooks::Hooks`]) and what it reads there (2020's names; current TFLM's
//! stand in where the hooks say):
//! - the `MicroInterpreter` constructor's entry (the arena as handed over, the model) and
//!   return (the arena allocator, its cursors): a build begins;
//! - `SimpleMemoryAllocator::AllocateFromTail`'s entry (the bytes and alignment asked, the
//!   allocator, the node whose Init or Prepare runs from `ContextHelper::current_node_idx_`,
//!   Init or Prepare from the context's `RequestScratchBufferInArena`, the asking function) and
//!   return (where it was placed): a step of the persistent tail, or, from a temporary
//!   allocator over the free gap, the plan's temporary `AllocationInfo` array;
//! - `GreedyMemoryPlanner::GetMaximumMemorySize`'s first call in a build (entry: the planner's
//!   buffers and the bytes its arrays take per buffer; return: the head the plan needs): the
//!   plan's temporary peak;
//! - `AllocateTensors`' entry and return (its status; when ok, the tensor plan), `Invoke`'s
//!   entry (the first: the plan again, as the inference uses it) and return (inferences), the
//!   destructor (the arena is gone);
//! - at every phase boundary, the cursors of every live arena.
//!
//! Current TFLM adds: `MicroInterpreterGraph::InitSubgraphs` and `PrepareSubgraphs` (entry and
//! return: the operator loops, inside which `graph_.current_operator_index_` is the node and
//! `micro_context_.state_` tells Init from Prepare); `AllocateTemp`'s return (`temp_`'s high
//! water: a temporary peak of Prepare or of an inference; the plan's own temporaries are
//! counted from the planner instead, which is handed the whole free gap); the head's functions'
//! returns (`head_` as it moves). Its split persistent/non-persistent pair is not followed.
//!
//! A function TFLM inlines cannot be broken on (the arena allocator placing itself at the
//! arena's top): the tail is read at every stop, and a move no stop explains becomes a step of
//! its own (`build`). From the steps, in order, with the plan's temporaries and head, the
//! smallest arena that works is replayed for each candidate size (`memlife_tflm::ArenaDemand`).
//!
//! Its records go to the report through [`crate::events::Observer::report`] (the report
//! model's `ArenaRecord`); [`Debugger::arena_record`](crate::Debugger::arena_record) reads them
//! back from a debugger.
//!
//! # Layout
//! - `hooks`: the functions broken on; `category`: what an allocation holds and its stage;
//! - `build`: one build as it accumulates; `record`: the builds and models for the report;
//! - `plan`: a build's tensor plan, read when its `AllocateTensors` returned ok.

mod build;
mod category;
pub(crate) mod hooks;
mod plan;
mod record;

use std::rc::Rc;

use memlife_dwarf::Symbols;
use memlife_report::model::{ArenaFigures, ArenaRecord, BuildStatus};
use memlife_tflm::{Cursors, LiveLayout, TailRequest, Tflm};

use crate::error::AuditError;
use crate::events::{Boundary, Ctx, Observer};
use crate::session::Arm;
use build::{Asked, Build};
use category::Stage;
pub use hooks::{CurrentHooks, Hooks};

/// The observer's name: its key among the observers' reports.
pub const NAME: &str = "tflm-arena";

// What each of its breakpoints is for.
const CONSTRUCT: u32 = 1;
const CONSTRUCTED: u32 = 2;
const DESTROY: u32 = 3;
const ALLOCATE: u32 = 4;
const ALLOCATED: u32 = 5;
const INVOKE: u32 = 6;
const INVOKED: u32 = 7;
const TAIL: u32 = 8;
const TAIL_PLACED: u32 = 9;
const PLAN: u32 = 10;
const PLANNED: u32 = 11;
const TEMP: u32 = 12;
const TEMP_PLACED: u32 = 13;
const HEAD: u32 = 14;
const HEAD_MOVED: u32 = 15;
const INIT_OPS: u32 = 16;
const PREPARE_OPS: u32 = 17;
const OPS_DONE: u32 = 18;
const TAIL_THUNK: u32 = 19;

/// A tail allocation whose return is awaited.
#[derive(Debug, Clone)]
struct PendingTail {
    build: usize,
    /// From the arena's own allocator (else a temporary one over its free gap).
    persistent: bool,
    asked: Asked,
    /// The call's stack pointer and return address.
    call: (u64, u64),
    /// Entered through the non-virtual thunk.
    via_thunk: bool,
}

/// The arena observer (see the module doc).
pub struct ArenaObserver {
    symbols: Rc<Symbols>,
    layout: LiveLayout,
    hooks: Hooks,
    builds: Vec<Build>,
    /// Open constructor calls, `AllocateTensors` calls and `Invoke` calls (indices in
    /// `builds`), innermost last.
    constructing: Vec<usize>,
    allocating: Vec<usize>,
    invoking: Vec<usize>,
    /// Tail allocations awaited.
    tails: Vec<PendingTail>,
    /// The build whose plan's size query is awaited.
    planning: Option<usize>,
    /// Current TFLM: the builds whose temporary allocation, head move or operator loop
    /// returns are awaited, innermost last.
    temps: Vec<usize>,
    heads: Vec<usize>,
    ops: Vec<usize>,
    /// The cycle of the last phase entered.
    cycle: Option<u64>,
}

impl std::fmt::Debug for ArenaObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArenaObserver")
            .field("builds", &self.builds.len())
            .finish()
    }
}

impl ArenaObserver {
    /// The observer for this ELF: `None` when it has no TFLM, or a TFLM the observer cannot
    /// follow (a member or function it needs is missing, as with current TFLM's split arena
    /// pair; said once in the log).
    pub fn for_elf(symbols: Rc<Symbols>) -> Option<ArenaObserver> {
        let tflm = Tflm::detect(&symbols)?;
        let layout = LiveLayout::of(&tflm, &symbols);
        let hooks = Hooks::of(&symbols, tflm.generation());
        match (layout, hooks) {
            (Some(layout), Some(hooks)) => Some(ArenaObserver::new(symbols, layout, hooks)),
            (layout, hooks) => {
                let missing = match (layout, hooks) {
                    (None, _) => "a member of its arena allocator or interpreter",
                    _ => "one of its functions",
                };
                tracing::info!(
                    "TFLM {} found: its arenas are read at stops (memlife heap), but builds are not observed ({missing} was not found)",
                    tflm.generation().name()
                );
                None
            }
        }
    }

    /// The observer over this layout and these functions.
    pub fn new(symbols: Rc<Symbols>, layout: LiveLayout, hooks: Hooks) -> Self {
        ArenaObserver {
            symbols,
            layout,
            hooks,
            builds: Vec::new(),
            constructing: Vec::new(),
            allocating: Vec::new(),
            invoking: Vec::new(),
            tails: Vec::new(),
            planning: None,
            temps: Vec::new(),
            heads: Vec::new(),
            ops: Vec::new(),
            cycle: None,
        }
    }

    /// Whether this is current TFLM (its head and temporaries are followed).
    fn current(&self) -> bool {
        self.layout.generation == memlife_tflm::Generation::Current
    }

    /// The newest live build whose arena allocator is at `allocator`.
    fn build_of_allocator(&self, allocator: u64) -> Option<usize> {
        self.builds
            .iter()
            .rposition(|b| b.live() && b.record.allocator == allocator)
    }

    /// The newest live build of the interpreter at `interpreter`.
    fn build_of(&self, interpreter: u64) -> Option<usize> {
        self.builds
            .iter()
            .rposition(|b| b.live() && b.record.interpreter == interpreter)
    }

    /// The allocator object's size and alignment (what it takes from the tail).
    fn object(&self) -> TailRequest {
        TailRequest {
            bytes: self.layout.allocator.size,
            alignment: self.layout.ptr_size,
        }
    }

    /// Reads the arena of build `i` (its interpreter's allocator) and takes any tail move.
    fn observe(&mut self, ctx: &mut Ctx<'_>, i: usize) -> Option<Cursors> {
        let object = self.object();
        let b = self.builds.get_mut(i)?;
        let interpreter = b.record.interpreter;
        let allocator = match b.has_arena() {
            true => b.record.allocator,
            false => self.layout.arena_allocator(ctx.memory(), interpreter)?,
        };
        let cursors = self.layout.cursors(ctx.memory(), allocator)?;
        if !cursors.holds_itself(allocator, object.bytes) {
            return None;
        }
        b.observe(allocator, &cursors, object);
        b.sync_head(&cursors);
        Some(cursors)
    }

    /// The arena's figures of build `i` now, at `at`.
    fn figures(&mut self, ctx: &mut Ctx<'_>, i: usize, at: &str, when: &str, call: Option<u64>) {
        let Some(cursors) = self.observe(ctx, i) else {
            return;
        };
        let Some(b) = self.builds.get(i) else { return };
        let used = self
            .layout
            .used_bytes(ctx.memory(), b.record.interpreter, &cursors);
        let f = ArenaFigures {
            at: at.to_string(),
            when: when.to_string(),
            call,
            cycle: self.cycle,
            persistent_bytes: cursors.persistent_bytes(),
            head_bytes: cursors.head_bytes(),
            temp_bytes: cursors.temp_bytes(),
            free_bytes: cursors.free_bytes(),
            arena_used_bytes: used,
        };
        if let Some(b) = self.builds.get_mut(i) {
            b.figures(f);
        }
    }

    fn constructing(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        let (interpreter, model, arena) = (regs.arg(0), regs.arg(1), regs.arg(3));
        let mut b = Build::new(self.builds.len() as u64 + 1, interpreter, Some(arena));
        b.constructing = true;
        b.current = self.current();
        let summary = self
            .layout
            .model_summary(ctx.memory(), &self.symbols, model);
        b.record.model = summary
            .as_ref()
            .map_or_else(|| format!("model at {model:#010x}"), |s| s.name.clone());
        b.summary = summary;
        record::forget_old_details(&mut self.builds, &b.record.model);
        self.builds.push(b);
        self.constructing.push(self.builds.len() - 1);
        ctx.await_return(regs.return_address(), regs.sp, CONSTRUCTED);
    }

    fn constructed(&mut self, ctx: &mut Ctx<'_>) {
        let Some(i) = self.constructing.pop() else {
            return;
        };
        if let Some(b) = self.builds.get_mut(i) {
            b.constructing = false;
        }
        self.figures(ctx, i, "constructed", "", None);
    }

    fn allocating(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        let interpreter = regs.arg(0);
        let i = match self.build_of(interpreter) {
            Some(i) => i,
            None => {
                // Constructed before the observer was added: its arena as it is now.
                let mut b = Build::new(self.builds.len() as u64 + 1, interpreter, None);
                b.current = self.current();
                if let Some(model) = self.layout.model(ctx.memory(), interpreter) {
                    let summary = self
                        .layout
                        .model_summary(ctx.memory(), &self.symbols, model);
                    b.record.model = summary
                        .as_ref()
                        .map_or_else(|| format!("model at {model:#010x}"), |s| s.name.clone());
                    b.summary = summary;
                }
                self.builds.push(b);
                self.builds.len() - 1
            }
        };
        self.observe(ctx, i);
        let open = ctx.open().clone();
        if let Some(b) = self.builds.get_mut(i) {
            b.allocating = true;
            b.record.phase = open.phase;
            b.record.call = open.call;
            b.record.cycle = self.cycle;
        }
        self.allocating.push(i);
        ctx.await_return(regs.return_address(), regs.sp, ALLOCATED);
    }

    fn allocated(&mut self, ctx: &mut Ctx<'_>) {
        let (Some(i), Some(regs)) = (self.allocating.pop(), ctx.regs()) else {
            return;
        };
        let cursors = self.observe(ctx, i);
        let Some(b) = self.builds.get(i) else { return };
        let used = cursors.as_ref().and_then(|c| {
            self.layout
                .used_bytes(ctx.memory(), b.record.interpreter, c)
        });
        if let Some(b) = self.builds.get_mut(i) {
            // TfLiteStatus: a C enum in r0.
            b.allocated(regs.arg(0) & 0xffff_ffff, cursors.as_ref(), used);
        }
        self.read_plan(ctx, i, cursors.as_ref());
        self.figures(ctx, i, "allocated", "", None);
    }

    /// Build `i`'s tensor plan, when its `AllocateTensors` returned ok: read at that return,
    /// and again at its first `Invoke` (what the application did to its tensors in between,
    /// such as pointing one at another's buffer, is what the inference uses).
    fn read_plan(&mut self, ctx: &mut Ctx<'_>, i: usize, cursors: Option<&Cursors>) {
        let (Some(b), Some(c)) = (self.builds.get_mut(i), cursors) else {
            return;
        };
        if b.record.status != BuildStatus::Ok {
            return;
        }
        let plan = plan::read(
            ctx.memory(),
            &self.symbols,
            &self.layout,
            b.record.interpreter,
            c,
        );
        if plan.is_some() {
            b.record.plan = plan;
        }
    }

    /// At the tail allocation's entry (`AllocateFromTail`, `AllocatePersistentBuffer`, or its
    /// thunk with `this` that far above the object): what is asked, by whom, for which build.
    fn tail_asked(&mut self, ctx: &mut Ctx<'_>, thunk_adjust: Option<u64>) {
        let Some(regs) = ctx.regs() else { return };
        let call = (regs.sp, regs.return_address());
        if thunk_adjust.is_none()
            && self
                .tails
                .last()
                .is_some_and(|t| t.via_thunk && t.call == call)
        {
            // The thunk jumped into the function: the same call, already taken.
            return;
        }
        let Some(allocator) = regs.arg(0).checked_sub(thunk_adjust.unwrap_or(0)) else {
            return;
        };
        let (bytes, alignment) = (regs.arg(1), regs.arg(2));
        let Some(cursors) = self.layout.cursors(ctx.memory(), allocator) else {
            return;
        };
        if !cursors.consistent() {
            return;
        }
        let object = self.object();
        let persistent = cursors.holds_itself(allocator, object.bytes);
        let found = if persistent {
            self.build_of_allocator(allocator).or_else(|| {
                // The constructor's first allocation: its arena is not known yet.
                self.constructing
                    .last()
                    .copied()
                    .filter(|&i| self.builds.get(i).is_some_and(|b| !b.has_arena()))
            })
        } else {
            // A temporary allocator over an arena's free gap (the plan's).
            self.allocating.last().copied().filter(|&i| {
                self.builds.get(i).is_some_and(|b| {
                    b.record.buffer_head <= cursors.buffer_head
                        && cursors.buffer_tail <= b.record.buffer_tail
                })
            })
        };
        let Some(i) = found else {
            tracing::debug!("AllocateFromTail on {allocator:#x}: no build of it is observed");
            return;
        };
        if persistent && let Some(b) = self.builds.get_mut(i) {
            b.observe(allocator, &cursors, object);
            b.sync_head(&cursors);
        }
        let (node, stage) = self.stage(ctx, i);
        let operator = self.operator(ctx, i, node);
        let frames: Vec<String> = self
            .symbols
            .locate(regs.return_address().saturating_sub(1))
            .into_iter()
            .filter_map(|f| f.function)
            .collect();
        let asked = Asked {
            tail_before: cursors.tail,
            request: TailRequest { bytes, alignment },
            node,
            operator,
            stage,
            category: category::of(&frames, stage, self.current()),
            site: frames.first().cloned(),
        };
        self.tails.push(PendingTail {
            build: i,
            persistent,
            asked,
            call,
            via_thunk: thunk_adjust.is_some(),
        });
        ctx.await_return(regs.return_address(), regs.sp, TAIL_PLACED);
    }

    /// The node running in build `i` and the stage of the build.
    fn stage(&self, ctx: &mut Ctx<'_>, i: usize) -> (i64, Stage) {
        let Some(b) = self.builds.get(i) else {
            return (-1, Stage::Setup);
        };
        if b.constructing {
            return (-1, Stage::Construct);
        }
        if b.planned {
            return (-1, Stage::Finish);
        }
        let interpreter = b.record.interpreter;
        if b.current && !b.ops_pass {
            // Current TFLM's operator index keeps its last value outside the loops.
            return (-1, Stage::Setup);
        }
        let node = self
            .layout
            .current_node(ctx.memory(), interpreter)
            .unwrap_or(-1);
        if node < 0 {
            return (-1, Stage::Setup);
        }
        match self.layout.in_prepare(ctx.memory(), interpreter) {
            Some(true) => (node, Stage::Prepare),
            _ => (node, Stage::Init),
        }
    }

    /// Node `node`'s operator in build `i` (read once per build).
    fn operator(&mut self, ctx: &mut Ctx<'_>, i: usize, node: i64) -> Option<String> {
        if node < 0 {
            return None;
        }
        let b = self.builds.get(i)?;
        if let Some(name) = b.operator(node) {
            return Some(name.clone());
        }
        let name = self
            .layout
            .operator_name(ctx.memory(), b.record.interpreter, node)?;
        if let Some(b) = self.builds.get_mut(i) {
            b.name_operator(node, name.clone());
        }
        Some(name)
    }

    fn tail_placed(&mut self, ctx: &mut Ctx<'_>) {
        let (Some(p), Some(regs)) = (self.tails.pop(), ctx.regs()) else {
            return;
        };
        let placed = regs.arg(0);
        let Some(b) = self.builds.get_mut(p.build) else {
            return;
        };
        if p.persistent {
            b.persistent(p.asked, placed);
        } else {
            b.plan_tail(p.asked.request, p.asked.tail_before, placed);
        }
    }

    fn plan(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        // The first size query of a build's plan; later ones (and planners outside a build)
        // are not the plan's peak.
        let Some(&i) = self.allocating.last() else {
            return;
        };
        if self.planning.is_some() || self.builds.get(i).is_none_or(|b| b.planned) {
            return;
        }
        if let Some(f) = self.layout.planner(ctx.memory(), regs.arg(0))
            && let Some(b) = self.builds.get_mut(i)
        {
            b.planner_seen(f);
        }
        self.planning = Some(i);
        ctx.await_return(regs.return_address(), regs.sp, PLANNED);
    }

    fn planned(&mut self, ctx: &mut Ctx<'_>) {
        let (Some(i), Some(regs)) = (self.planning.take(), ctx.regs()) else {
            return;
        };
        if let Some(b) = self.builds.get_mut(i) {
            b.plan_made(regs.arg(0) & 0xffff_ffff);
        }
    }

    /// Current TFLM: `AllocateTemp`'s entry on a followed arena.
    fn temp_asked(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        let Some(i) = self.build_of_allocator(regs.arg(0)) else {
            return;
        };
        self.temps.push(i);
        ctx.await_return(regs.return_address(), regs.sp, TEMP_PLACED);
    }

    /// Current TFLM: `AllocateTemp` returned: `temp_`'s new high water. The plan's own
    /// temporaries (between the Prepare loop and the plan) are the planner's peak instead.
    fn temp_placed(&mut self, ctx: &mut Ctx<'_>) {
        let Some(i) = self.temps.pop() else { return };
        let Some(b) = self.builds.get(i) else { return };
        let kind = if self.invoking.contains(&i) {
            "invoke"
        } else if b.allocating && !b.ops_pass {
            return;
        } else {
            "prepare"
        };
        let in_loop = b.ops_pass || kind == "invoke";
        let (allocator, interpreter) = (b.record.allocator, b.record.interpreter);
        let Some(cursors) = self.layout.cursors(ctx.memory(), allocator) else {
            return;
        };
        let node = match in_loop {
            true => self.layout.current_node(ctx.memory(), interpreter),
            false => None,
        };
        if let Some(b) = self.builds.get_mut(i) {
            b.temporary(kind, node, &cursors);
        }
    }

    /// Current TFLM: a head function's entry on a followed arena.
    fn head_moving(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        let Some(i) = self.build_of_allocator(regs.arg(0)) else {
            return;
        };
        self.heads.push(i);
        ctx.await_return(regs.return_address(), regs.sp, HEAD_MOVED);
    }

    fn head_moved(&mut self, ctx: &mut Ctx<'_>) {
        let Some(i) = self.heads.pop() else { return };
        let Some(allocator) = self.builds.get(i).map(|b| b.record.allocator) else {
            return;
        };
        if let Some(cursors) = self.layout.cursors(ctx.memory(), allocator)
            && let Some(b) = self.builds.get_mut(i)
        {
            b.sync_head(&cursors);
        }
    }

    /// Current TFLM: an operator loop of the `AllocateTensors` running begins.
    fn ops_entered(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        let Some(&i) = self.allocating.last() else {
            tracing::debug!("an operator loop outside AllocateTensors");
            return;
        };
        tracing::debug!("operator loop of build {i}");
        if let Some(b) = self.builds.get_mut(i) {
            b.ops_pass = true;
        }
        self.ops.push(i);
        ctx.await_return(regs.return_address(), regs.sp, OPS_DONE);
    }

    fn ops_done(&mut self) {
        tracing::debug!("operator loop returned");
        if let Some(i) = self.ops.pop()
            && let Some(b) = self.builds.get_mut(i)
        {
            b.ops_pass = false;
        }
    }

    fn invoking(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        if let Some(i) = self.build_of(regs.arg(0)) {
            let allocator = self
                .builds
                .get(i)
                .filter(|b| b.record.inferences == 0)
                .map(|b| b.record.allocator);
            if let Some(allocator) = allocator {
                let cursors = self.layout.cursors(ctx.memory(), allocator);
                self.read_plan(ctx, i, cursors.as_ref());
            }
            self.invoking.push(i);
            ctx.await_return(regs.return_address(), regs.sp, INVOKED);
        }
    }

    fn invoked(&mut self, ctx: &mut Ctx<'_>) {
        let Some(i) = self.invoking.pop() else { return };
        let first = self.builds.get_mut(i).is_some_and(|b| {
            b.record.inferences += 1;
            b.record.inferences == 1
        });
        if first {
            self.figures(ctx, i, "invoked", "", None);
        }
    }

    fn destroyed(&mut self, ctx: &mut Ctx<'_>) {
        let Some(regs) = ctx.regs() else { return };
        if let Some(i) = self.build_of(regs.arg(0))
            && let Some(b) = self.builds.get_mut(i)
        {
            b.record.released = true;
        }
    }

    /// Every live arena's figures at a phase boundary.
    fn at_boundary(&mut self, ctx: &mut Ctx<'_>, function: &str, when: &str, call: u64) {
        for i in 0..self.builds.len() {
            let live = self
                .builds
                .get(i)
                .is_some_and(|b| b.live() && b.has_arena() && !b.constructing);
            if live {
                self.figures(ctx, i, function, when, Some(call));
            }
        }
    }

    /// What was observed, as the report keeps it.
    pub fn arena_record(&self) -> ArenaRecord {
        record::of(&self.builds, self.layout.generation)
    }
}

impl Observer for ArenaObserver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>) -> Result<(), AuditError> {
        let h = self.hooks.clone();
        // The build's bounds are always wanted; the stops inside a build only inside phases on
        // a target with few breakpoints.
        ctx.break_at(h.construct, CONSTRUCT, Arm::Always);
        ctx.break_at(h.allocate_tensors, ALLOCATE, Arm::Always);
        ctx.break_at(h.allocate_from_tail, TAIL, Arm::Inside);
        if let Some(a) = h.destroy {
            ctx.break_at(a, DESTROY, Arm::Always);
        }
        if let Some(a) = h.plan_size {
            ctx.break_at(a, PLAN, Arm::Inside);
        }
        if let Some(a) = h.invoke {
            ctx.break_at(a, INVOKE, Arm::Inside);
        }
        if let Some(c) = &h.current {
            if let Some(a) = c.allocate_temp {
                ctx.break_at(a, TEMP, Arm::Inside);
            }
            for &a in &c.head {
                ctx.break_at(a, HEAD, Arm::Inside);
            }
            if let Some(a) = c.init_ops {
                ctx.break_at(a, INIT_OPS, Arm::Inside);
            }
            if let Some(a) = c.prepare_ops {
                ctx.break_at(a, PREPARE_OPS, Arm::Inside);
            }
            if let Some((a, _)) = c.tail_thunk {
                ctx.break_at(a, TAIL_THUNK, Arm::Inside);
            }
        }
        Ok(())
    }

    fn on_break(&mut self, ctx: &mut Ctx<'_>, code: u32) -> Result<(), AuditError> {
        match code {
            CONSTRUCT => self.constructing(ctx),
            CONSTRUCTED => self.constructed(ctx),
            DESTROY => self.destroyed(ctx),
            ALLOCATE => self.allocating(ctx),
            ALLOCATED => self.allocated(ctx),
            INVOKE => self.invoking(ctx),
            INVOKED => self.invoked(ctx),
            TAIL => self.tail_asked(ctx, None),
            TAIL_THUNK => {
                let adjust = self.hooks.current.as_ref().and_then(|c| c.tail_thunk);
                if let Some((_, k)) = adjust {
                    self.tail_asked(ctx, Some(k));
                }
            }
            TAIL_PLACED => self.tail_placed(ctx),
            PLAN => self.plan(ctx),
            PLANNED => self.planned(ctx),
            TEMP => self.temp_asked(ctx),
            TEMP_PLACED => self.temp_placed(ctx),
            HEAD => self.head_moving(ctx),
            HEAD_MOVED => self.head_moved(ctx),
            INIT_OPS | PREPARE_OPS => self.ops_entered(ctx),
            OPS_DONE => self.ops_done(),
            _ => {}
        }
        Ok(())
    }

    fn on_boundary(&mut self, ctx: &mut Ctx<'_>, b: &Boundary<'_>) -> Result<(), AuditError> {
        match b {
            Boundary::PhaseEntered {
                function,
                call,
                cycle,
            } => {
                self.cycle = *cycle;
                self.at_boundary(ctx, function, "entry", *call);
            }
            Boundary::PhaseReturned(r) => self.at_boundary(ctx, &r.function, "return", r.call),
            Boundary::SpanOpened { .. } | Boundary::SpanClosed(_) => {}
        }
        Ok(())
    }

    fn report(&self) -> Option<serde_json::Value> {
        if self.builds.is_empty() {
            return None;
        }
        serde_json::to_value(self.arena_record()).ok()
    }
}

/// The arenas live in a halted target whose heap was walked as `heap`, when the ELF has TFLM
/// (`memlife heap`'s `arenas`, `monitor heap`, a script's `h.arenas`): looked for in the heap's
/// blocks in use and the image's statics, at this stop, without breakpoints.
pub fn in_heap(
    mem: &mut dyn memlife_core::Memory,
    symbols: &Symbols,
    heap: &memlife_heap::HeapState,
) -> Result<Option<Vec<memlife_tflm::Arena>>, memlife_tflm::TflmError> {
    let used: Vec<(u64, u64)> = heap
        .blocks
        .iter()
        .filter(|b| !b.free && !b.unclaimed)
        .map(|b| (b.addr, b.size))
        .collect();
    memlife_tflm::heap_arenas(mem, symbols, &used, Some((heap.heap_start, heap.heap_size)))
}
