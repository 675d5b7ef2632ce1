//! One interpreter's build as the observer accumulates it: every move of its arena's tail as
//! a step (asked at a stop, or inferred from a move between stops), running totals by category
//! and operator, the plan's temporary peak, the demand replayed for the smallest arena, and
//! how it ended. Current TFLM adds the head as it moves (the scratch requests' buffer during
//! Prepare, the committed plan) and the temporaries above it (`temp_`), each a step of the
//! demand in the order seen.

use std::collections::BTreeMap;

use memlife_report::model::arena::{MAX_FIGURES, MAX_STEPS};
use memlife_report::model::{
    ArenaBuild, ArenaFigures, ArenaStep, BuildStatus, CategoryTotal, OperatorTotal, TempPeak,
};
use memlife_tflm::{ArenaDemand, Cursors, DemandStep, ModelSummary, PlannerFigures, TailRequest};

use super::category::{self, Stage};

/// An allocation from the tail, as asked at an `AllocateFromTail` stop (or inferred).
#[derive(Debug, Clone)]
pub struct Asked {
    /// The tail before it.
    pub tail_before: u64,
    /// Bytes and alignment asked.
    pub request: TailRequest,
    /// The node (-1 outside the operators).
    pub node: i64,
    /// That node's operator.
    pub operator: Option<String>,
    /// When in the build.
    pub stage: Stage,
    /// What it holds.
    pub category: &'static str,
    /// The asking function.
    pub site: Option<String>,
}

/// One build (see the module doc).
#[derive(Debug, Clone)]
pub struct Build {
    /// What the report shows (the totals and the smallest arena are filled in by
    /// [`Build::record`]).
    pub record: ArenaBuild,
    /// The model's name and shape, when its flatbuffer could be read.
    pub summary: Option<ModelSummary>,
    /// Inside the constructor.
    pub constructing: bool,
    /// `AllocateTensors` is running.
    pub allocating: bool,
    /// The plan was made: later tail allocations are the finish stage.
    pub planned: bool,
    /// Current TFLM: the head and temporaries are followed, the plan's peak counts from the
    /// arena's start.
    pub current: bool,
    /// Current TFLM: an operator loop (Init or Prepare) runs.
    pub ops_pass: bool,
    /// Current TFLM: the head's bytes as last put in the demand.
    head_now: u64,
    /// The tail as last seen; `None` before the arena was first read.
    tail_seen: Option<u64>,
    /// What was asked of the arena, in order.
    demand: ArenaDemand,
    /// Something was inferred rather than asked: the demand is not exact.
    guessed: bool,
    /// A persistent allocation was refused: what would have come after it is unknown.
    refused: bool,
    /// Temporary allocations from the tail while the plan is made.
    plan_tail: Vec<TailRequest>,
    /// Their bytes, padding included.
    plan_below: u64,
    /// The planner's figures, read at its entry.
    planner: Option<PlannerFigures>,
    /// Node -> operator name.
    operators: BTreeMap<i64, String>,
    categories: BTreeMap<String, CategoryTotal>,
    by_node: BTreeMap<i64, OperatorTotal>,
}

impl Build {
    /// A build of the interpreter at `interpreter`, over the arena handed over at `arena`.
    pub fn new(index: u64, interpreter: u64, arena: Option<u64>) -> Self {
        Build {
            record: ArenaBuild {
                index,
                interpreter,
                arena,
                ..ArenaBuild::default()
            },
            summary: None,
            constructing: false,
            allocating: false,
            planned: false,
            current: false,
            ops_pass: false,
            head_now: 0,
            tail_seen: None,
            demand: ArenaDemand::default(),
            guessed: arena.is_none(),
            refused: false,
            plan_tail: Vec::new(),
            plan_below: 0,
            planner: None,
            operators: BTreeMap::new(),
            categories: BTreeMap::new(),
            by_node: BTreeMap::new(),
        }
    }

    /// Whether the arena's allocator is known.
    pub fn has_arena(&self) -> bool {
        self.record.allocator != 0
    }

    /// The build is still running (constructed, `AllocateTensors` not returned).
    pub fn live(&self) -> bool {
        !self.record.released
    }

    /// The arena allocator at `allocator`, with these cursors, is this build's: its bounds are
    /// taken, and a tail move since it was last seen becomes a step: the allocator object's own
    /// placement (`object`: its size and alignment) when it is the first, else unattributed.
    pub fn observe(&mut self, allocator: u64, cursors: &Cursors, object: TailRequest) {
        if !self.has_arena() {
            self.record.allocator = allocator;
            self.record.buffer_head = cursors.buffer_head;
            self.record.buffer_tail = cursors.buffer_tail;
            let start = self.record.arena.unwrap_or(cursors.buffer_head);
            self.record.arena_bytes = cursors.buffer_tail.saturating_sub(start);
        }
        let expected = self.tail_seen.unwrap_or(self.record.buffer_tail);
        if cursors.tail > expected {
            tracing::debug!(
                "arena at {allocator:#x}: tail {:#x} above the {expected:#x} last seen",
                cursors.tail
            );
            self.tail_seen = Some(cursors.tail);
            self.guessed = true;
            return;
        }
        let moved = expected - cursors.tail;
        if moved > 0 {
            let first = self.tail_seen.is_none() && self.record.steps.is_empty();
            let is_object = first
                && allocator >= cursors.tail
                && allocator.saturating_add(object.bytes) <= self.record.buffer_tail;
            let (category, request) = if is_object {
                (category::ARENA_ALLOCATOR, object)
            } else {
                self.guessed = true;
                let inferred = TailRequest {
                    bytes: moved,
                    alignment: 1,
                };
                (category::UNATTRIBUTED, inferred)
            };
            let stage = if self.constructing {
                Stage::Construct
            } else if self.planned {
                Stage::Finish
            } else {
                Stage::Setup
            };
            let asked = Asked {
                tail_before: expected,
                request,
                node: -1,
                operator: None,
                stage,
                category,
                site: None,
            };
            self.add_step(asked, cursors.tail, false);
        }
        self.tail_seen = Some(cursors.tail);
    }

    /// Current TFLM: the head as the cursors show it joins the demand when it moved (a
    /// persistent allocation after it is refused below the head, so the order matters).
    pub fn sync_head(&mut self, cursors: &Cursors) {
        if !self.current {
            return;
        }
        let bytes = cursors.head_bytes();
        if bytes != self.head_now {
            self.demand.steps.push(DemandStep::Head { bytes });
            self.head_now = bytes;
        }
    }

    /// Current TFLM: a temporary above the head returned, the arena at `cursors`: the
    /// temporaries' bytes are a temporary peak of `kind` (`prepare`, `invoke`) at `node`; the
    /// highest of each kind is kept.
    pub fn temporary(&mut self, kind: &str, node: Option<i64>, cursors: &Cursors) {
        self.sync_head(cursors);
        let above = cursors.temp_bytes();
        if above == 0 {
            return;
        }
        self.demand.steps.push(DemandStep::Temporary {
            tail: Vec::new(),
            head: above,
        });
        let peak = TempPeak {
            kind: kind.to_string(),
            node,
            below_tail: 0,
            above_head: above,
            bytes: above,
            persistent_bytes: cursors.persistent_bytes(),
            buffers: None,
            head_needed: None,
        };
        match self.record.peaks.iter_mut().find(|p| p.kind == kind) {
            Some(p) if p.bytes < above => *p = peak,
            Some(_) => {}
            None => self.record.peaks.push(peak),
        }
    }

    /// Remembers an operator's name.
    pub fn name_operator(&mut self, node: i64, name: String) {
        self.operators.insert(node, name);
    }

    /// An operator's name, when known.
    pub fn operator(&self, node: i64) -> Option<&String> {
        self.operators.get(&node)
    }

    /// A persistent allocation returned `placed` (0: refused).
    pub fn persistent(&mut self, asked: Asked, placed: u64) {
        let failed = placed == 0;
        if failed {
            self.refused = true;
            let what = match (&asked.operator, asked.node) {
                (Some(op), n) => format!(" by node {n} ({op})"),
                (None, n) if n >= 0 => format!(" by node {n}"),
                _ => String::new(),
            };
            self.record.failure.get_or_insert_with(|| {
                format!(
                    "a persistent allocation of {} B ({}){what} did not fit: {} B free",
                    asked.request.bytes,
                    asked.category,
                    asked.tail_before.saturating_sub(self.record.buffer_head)
                )
            });
        }
        self.add_step(asked, placed, failed);
        if !failed {
            self.tail_seen = Some(placed);
        }
    }

    /// Records a step and adds it to the totals and the demand.
    fn add_step(&mut self, asked: Asked, placed: u64, failed: bool) {
        let moved = if failed {
            0
        } else {
            asked.tail_before.saturating_sub(placed)
        };
        if !failed {
            self.demand.steps.push(DemandStep::Tail(asked.request));
        }
        let c = self
            .categories
            .entry(asked.category.to_string())
            .or_insert_with(|| CategoryTotal {
                category: asked.category.to_string(),
                ..CategoryTotal::default()
            });
        c.requested_bytes = c.requested_bytes.saturating_add(asked.request.bytes);
        c.used_bytes = c.used_bytes.saturating_add(moved);
        c.count += 1;
        let o = self
            .by_node
            .entry(asked.node)
            .or_insert_with(|| OperatorTotal {
                node: asked.node,
                operator: match (&asked.operator, asked.node) {
                    (Some(op), _) => op.clone(),
                    (None, n) if n < 0 => "setup".into(),
                    (None, _) => String::new(),
                },
                ..OperatorTotal::default()
            });
        match asked.stage {
            Stage::Init => o.init_bytes = o.init_bytes.saturating_add(moved),
            Stage::Prepare => o.prepare_bytes = o.prepare_bytes.saturating_add(moved),
            _ => {}
        }
        o.bytes = o.bytes.saturating_add(moved);
        o.count += 1;
        if self.record.steps.len() >= MAX_STEPS {
            self.record.steps_unlisted += 1;
            return;
        }
        self.record.steps.push(ArenaStep {
            node: asked.node,
            operator: asked.operator,
            stage: asked.stage.name().to_string(),
            category: asked.category.to_string(),
            requested: Some(asked.request.bytes),
            alignment: Some(asked.request.alignment),
            bytes: moved,
            address: placed,
            site: asked.site,
            failed,
        });
    }

    /// A temporary allocation from the tail while the plan is made (the `AllocationInfo`
    /// array) returned `placed`.
    pub fn plan_tail(&mut self, request: TailRequest, tail_before: u64, placed: u64) {
        self.plan_tail.push(request);
        if placed != 0 {
            self.plan_below = self
                .plan_below
                .saturating_add(tail_before.saturating_sub(placed));
        }
    }

    /// The planner, at its first size query.
    pub fn planner_seen(&mut self, figures: PlannerFigures) {
        self.planner = Some(figures);
    }

    /// The plan's size query returned: the head the plan needs. The plan's temporary peak
    /// (the tail's temporaries and the planner's arrays, at once) and the head join the demand.
    ///
    /// Current TFLM gives the planner the whole free gap above the head and the plan's
    /// `AllocationInfo` temporaries; what it needs is its arrays for the buffers it has, from
    /// where its scratch area starts.
    pub fn plan_made(&mut self, head_needed: u64) {
        self.planned = true;
        let arrays = self
            .planner
            .map_or(0, |p| p.bytes_per_buffer.saturating_mul(p.buffers));
        let above = match (self.current, self.planner) {
            (true, Some(p)) => p
                .scratch_start
                .saturating_sub(self.record.buffer_head)
                .saturating_add(arrays)
                .saturating_sub(self.head_now),
            _ => arrays,
        };
        self.demand.steps.push(DemandStep::Temporary {
            tail: std::mem::take(&mut self.plan_tail),
            head: above,
        });
        self.demand
            .steps
            .push(DemandStep::Head { bytes: head_needed });
        self.head_now = head_needed;
        self.record.peaks.push(TempPeak {
            kind: "plan".into(),
            node: None,
            below_tail: self.plan_below,
            above_head: above,
            bytes: self.plan_below.saturating_add(above),
            persistent_bytes: self
                .record
                .buffer_tail
                .saturating_sub(self.tail_seen.unwrap_or(self.record.buffer_tail)),
            buffers: self.planner.map(|p| p.buffers),
            head_needed: Some(head_needed),
        });
        self.record.head_bytes = head_needed;
    }

    /// `AllocateTensors` returned `status` with the arena at `cursors`.
    pub fn allocated(&mut self, status: u64, cursors: Option<&Cursors>, used: Option<u64>) {
        self.allocating = false;
        self.record.status = if status == 0 {
            BuildStatus::Ok
        } else {
            BuildStatus::Failed
        };
        if let Some(c) = cursors {
            self.record.persistent_bytes = c.persistent_bytes();
            if status == 0 || self.record.head_bytes == 0 {
                self.record.head_bytes = c.head_bytes();
            }
        }
        self.record.arena_used_bytes = used;
        if status != 0 && self.record.failure.is_none() {
            self.record.failure = Some(self.failure_without_refusal(cursors, status));
        }
    }

    /// Why `AllocateTensors` failed when no tail allocation was refused.
    fn failure_without_refusal(&self, cursors: Option<&Cursors>, status: u64) -> String {
        let gap = cursors.map(Cursors::free_bytes);
        match (self.record.peaks.last(), gap) {
            (Some(p), Some(gap)) if p.head_needed.is_some_and(|h| h > gap) => format!(
                "the plan's head needs {} B where the free gap has {gap} B",
                p.head_needed.unwrap_or(0)
            ),
            (Some(p), Some(gap)) if p.bytes > gap => format!(
                "planning needs {} B at once ({} B below the tail, {} B for the planner) where the free gap has {gap} B",
                p.bytes, p.below_tail, p.above_head
            ),
            _ => format!("AllocateTensors returned {status}"),
        }
    }

    /// Adds the arena's figures at one moment (the first [`MAX_FIGURES`]).
    pub fn figures(&mut self, f: ArenaFigures) {
        if self.record.figures.len() < MAX_FIGURES {
            self.record.figures.push(f);
        }
    }

    /// Whether the demand holds everything the build asked: nothing inferred, no refusal, and
    /// the build ended (or failed where nothing was left to ask but variables it has none of).
    pub fn exact(&self) -> bool {
        let ended = match self.record.status {
            BuildStatus::Ok => true,
            BuildStatus::Failed => {
                self.planned && self.summary.as_ref().is_some_and(|s| s.variables == 0)
            }
            BuildStatus::Building => false,
        };
        ended && !self.guessed && !self.refused
    }

    /// The smallest arena that holds what this build asked, handed over where this one was.
    pub fn needs(&self) -> Option<u64> {
        if !self.has_arena() {
            return None;
        }
        let start = self.record.arena.unwrap_or(self.record.buffer_head);
        let mut demand = self.demand.clone();
        if self.refused
            && let Some(s) = self.record.steps.iter().rev().find(|s| s.failed)
        {
            // What was refused is part of what the build needs.
            demand.steps.push(DemandStep::Tail(TailRequest {
                bytes: s.requested.unwrap_or(0),
                alignment: s.alignment.unwrap_or(1),
            }));
        }
        demand.smallest(start)
    }

    /// Drops the steps, figures and plan (a build past those the report lists); its totals and
    /// demand stay.
    pub fn forget_details(&mut self) {
        self.record.steps = Vec::new();
        self.record.figures = Vec::new();
        self.record.plan = None;
    }

    /// The record for the report, with its totals and the smallest arena.
    pub fn record(&self) -> ArenaBuild {
        let mut r = self.record.clone();
        r.categories = self.categories.values().cloned().collect();
        r.categories.sort_by(|a, b| {
            b.used_bytes
                .cmp(&a.used_bytes)
                .then(a.category.cmp(&b.category))
        });
        r.operators = self
            .by_node
            .values()
            .map(|o| {
                let mut o = o.clone();
                if let Some(name) = self.operators.get(&o.node) {
                    o.operator = name.clone();
                }
                o
            })
            .collect();
        r.needs = self.needs();
        r.exact = self.exact();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursors(tail: u64) -> Cursors {
        Cursors {
            buffer_head: 0x1000,
            buffer_tail: 0x1800,
            head: 0x1000,
            tail,
            temp: 0x1000,
        }
    }

    const OBJECT: TailRequest = TailRequest {
        bytes: 20,
        alignment: 4,
    };

    fn asked(tail_before: u64, bytes: u64, node: i64, stage: Stage) -> Asked {
        Asked {
            tail_before,
            request: TailRequest {
                bytes,
                alignment: 16,
            },
            node,
            operator: (node >= 0).then(|| "FULLY_CONNECTED".to_string()),
            stage,
            category: "kPersistentBufferData",
            site: None,
        }
    }

    #[test]
    fn the_first_move_is_the_allocator_object_and_steps_sum_to_the_tail() {
        let mut b = Build::new(1, 0x3000, Some(0x1000));
        b.constructing = true;
        // The object sits at the top: 0x1800 - 20 = 0x17ec.
        b.observe(0x17ec, &cursors(0x17ec), OBJECT);
        b.constructing = false;
        b.persistent(asked(0x17ec, 40, 0, Stage::Init), 0x17c0);
        b.persistent(asked(0x17c0, 32, 0, Stage::Prepare), 0x17a0);
        b.observe(0x17ec, &cursors(0x17a0), OBJECT);
        let r = b.record();
        assert_eq!(r.steps[0].category, "arena-allocator");
        assert_eq!(r.steps[0].bytes, 20);
        assert_eq!(r.steps[1].bytes, 44, "40 asked, 4 of padding");
        let sum: u64 = r.steps.iter().map(|s| s.bytes).sum();
        assert_eq!(sum, 0x1800 - 0x17a0);
        let node0 = r.operators.iter().find(|o| o.node == 0).unwrap();
        assert_eq!(
            (node0.init_bytes, node0.prepare_bytes, node0.count),
            (44, 32, 2)
        );
        assert_eq!(r.arena_bytes, 0x800);
    }

    #[test]
    fn a_move_no_stop_explains_is_unattributed_and_the_demand_inexact() {
        let mut b = Build::new(1, 0x3000, Some(0x1000));
        b.observe(0x17ec, &cursors(0x17ec), OBJECT);
        b.observe(0x17ec, &cursors(0x1700), OBJECT);
        b.plan_made(64);
        b.allocated(0, Some(&cursors(0x1700)), Some(0x100));
        let r = b.record();
        assert_eq!(r.steps[1].category, "unattributed");
        assert!(!r.exact);
        assert!(r.needs.is_some());
    }

    #[test]
    fn a_head_that_does_not_fit_fails_the_build_with_the_bytes_it_needed() {
        let mut b = Build::new(1, 0x3000, Some(0x1000));
        b.observe(0x17ec, &cursors(0x17ec), OBJECT);
        b.allocating = true;
        b.plan_tail(
            TailRequest {
                bytes: 40,
                alignment: 4,
            },
            0x17ec,
            0x17c4,
        );
        b.planner_seen(PlannerFigures {
            buffers: 2,
            max_buffers: 10,
            bytes_per_buffer: 36,
            scratch_start: 0x1000,
        });
        b.plan_made(0x7f0);
        b.allocated(1, Some(&cursors(0x17ec)), Some(20));
        assert!(!b.exact(), "variables unknown: the model was not read");
        b.summary = Some(ModelSummary {
            name: "m".into(),
            operators: vec![],
            tensors: 3,
            variables: 0,
        });
        let r = b.record();
        assert_eq!(r.status, BuildStatus::Failed);
        assert_eq!(
            r.failure.as_deref(),
            Some("the plan's head needs 2032 B where the free gap has 2028 B")
        );
        assert_eq!(r.peaks[0].bytes, 40 + 72);
        assert!(r.exact);
        // 20 + 2032 = 2052 and the object's 4-alignment: the next size that holds both.
        assert_eq!(r.needs, Some(2052));
    }

    #[test]
    fn a_refused_allocation_makes_the_needs_a_lower_bound() {
        let mut b = Build::new(1, 0x3000, Some(0x1000));
        b.observe(0x17ec, &cursors(0x17ec), OBJECT);
        b.persistent(asked(0x17ec, 4096, 1, Stage::Init), 0);
        b.allocated(1, Some(&cursors(0x17ec)), None);
        let r = b.record();
        assert!(r.steps[1].failed);
        assert!(!r.exact);
        assert!(
            r.failure
                .as_deref()
                .unwrap()
                .starts_with("a persistent allocation of 4096 B (kPersistentBufferData) by node 1 (FULLY_CONNECTED) did not fit"),
            "{:?}",
            r.failure
        );
        assert!(r.needs.unwrap() >= 4096 + 20);
    }

    #[test]
    fn current_tflms_head_temporaries_and_plan_are_replayed_from_the_arenas_start() {
        let at = |head: u64, temp: u64, tail: u64| Cursors {
            buffer_head: 0x1000,
            buffer_tail: 0x1800,
            head,
            temp,
            tail,
        };
        let object = TailRequest {
            bytes: 36,
            alignment: 4,
        };
        let mut b = Build::new(1, 0x3000, Some(0x1000));
        b.current = true;
        b.constructing = true;
        // SingleArenaBufferAllocator::Create placed the object at the top: 0x1800 - 36.
        b.observe(0x17dc, &at(0x1000, 0x1000, 0x17dc), object);
        b.constructing = false;
        // The scratch requests' buffer at the head (96 B), then a 40 B Init buffer below it.
        b.sync_head(&at(0x1060, 0x1060, 0x17dc));
        b.persistent(asked(0x17dc, 40, 0, Stage::Init), 0x17b0);
        // CONV_2D's Prepare: 304 B of temporaries above the head.
        b.temporary("prepare", Some(1), &at(0x1060, 0x1060 + 304, 0x17b0));
        // Given back before the plan; the planner's area starts 64 B into the arena.
        b.sync_head(&at(0x1000, 0x1000, 0x17b0));
        b.planner_seen(PlannerFigures {
            buffers: 6,
            max_buffers: 40,
            bytes_per_buffer: 40,
            scratch_start: 0x1040,
        });
        b.plan_made(240);
        b.allocated(0, Some(&at(0x10f0, 0x10f0, 0x17b0)), Some(320));
        let r = b.record();
        assert_eq!(r.persistent_bytes, 0x50);
        let prepare = r.peaks.iter().find(|p| p.kind == "prepare").unwrap();
        assert_eq!((prepare.node, prepare.above_head), (Some(1), 304));
        // The plan: its arrays for 6 buffers (240 B) from 64 B into the arena.
        let plan = r.peaks.iter().find(|p| p.kind == "plan").unwrap();
        assert_eq!((plan.above_head, plan.head_needed), (64 + 240, Some(240)));
        // The largest moment: head 96 + temporaries 304 = 400 B above the arena's start, the
        // tail 80 B: the 40 B buffer lands on 400 in an arena of 476 B (its 16-alignment).
        assert_eq!(r.needs, Some(476));
        assert!(r.exact);
    }
}
