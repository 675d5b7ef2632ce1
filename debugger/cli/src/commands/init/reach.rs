//! Where the firmware's repeated work is: `main`'s loop, and on an RTOS each task's loop, and
//! which application functions those loops reach. A lifecycle phase runs once per cycle, so it
//! is called, directly or through the application's own functions, from inside such a loop; a
//! function that `main` calls before its loop (or before it starts the scheduler) runs once and
//! is setup, never a phase.
//!
//! The drivers are `main` and the task entry functions. A `main` without a loop that calls one
//! application function and nothing else hands over to it (Rust's `cortex-m-rt` entry calls the
//! user's `main` through a trampoline); that function is the driver then. A task entry is an
//! application function whose address is taken (a literal word) by a function that creates
//! tasks (calls `xTaskCreate`, `xTaskCreateStatic` and their variants, CMSIS-RTOS2's
//! `osThreadNew`) or calls an application wrapper of one, and that nothing calls directly.
//!
//! Per driver: calls inside its loop are the loop's; calls outside it are once (setup). A `main`
//! that starts the scheduler (`vTaskStartScheduler`, `osKernelStart`) only sets up. A driver
//! without a loop (a task that runs once and deletes itself, a `main` that runs one cycle and
//! returns) counts as its own loop.

use std::collections::VecDeque;

use super::callgraph::CallGraph;

/// The functions that create RTOS tasks.
const TASK_CREATORS: &[&str] = &[
    "xTaskCreate",
    "xTaskCreateStatic",
    "xTaskCreateRestricted",
    "xTaskCreateRestrictedStatic",
    "xTaskCreateAffinitySet",
    "xTaskCreateStaticAffinitySet",
    "xTaskCreatePinnedToCore",
    "xTaskCreateStaticPinnedToCore",
    "osThreadNew",
];

/// The functions that start an RTOS scheduler (they do not return).
const SCHEDULER_STARTS: &[&str] = &["vTaskStartScheduler", "osKernelStart"];

/// How far a `main` without a loop is followed into the one function it calls.
const MAX_HANDOVERS: usize = 4;

/// The most functions a "reached from ... through" chain names.
const MAX_CHAIN_SHOWN: usize = 6;

/// How a function is reached from the firmware's loops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// From a driver's loop, through the application's functions.
    Loop {
        /// The driver (an index into [`ReachMap::drivers`]).
        driver: usize,
        /// How many calls from the loop: 1 when the loop calls it itself.
        depth: usize,
        /// The function that calls it on the shortest way from the loop (`None` at depth 1).
        parent: Option<usize>,
    },
    /// Only outside every loop: setup, run once.
    Once {
        /// The driver that calls it (or calls what calls it) outside its loop.
        driver: usize,
    },
    /// From no driver: only through a pointer, from an interrupt, or never.
    Unreached,
    /// Not known: no call graph, or no driver found.
    Unknown,
}

impl Reach {
    /// How many calls from the loop: 1 when the loop calls it itself.
    pub fn depth(&self) -> Option<usize> {
        match self {
            Reach::Loop { depth, .. } => Some(*depth),
            _ => None,
        }
    }
}

/// What runs the firmware's repeated work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverKind {
    /// `main` (or the function it hands over to).
    Main,
    /// An RTOS task's entry function.
    Task,
}

/// One driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Driver {
    /// Its function.
    pub function: usize,
    /// Main or a task.
    pub kind: DriverKind,
    /// Whether it has a loop.
    pub looping: bool,
}

/// Every function's [`Reach`], and the drivers.
#[derive(Debug, Clone)]
pub struct ReachMap {
    reach: Vec<Reach>,
    /// `main` (or what it hands over to) first, then the tasks.
    pub drivers: Vec<Driver>,
    /// `main` starts an RTOS scheduler.
    pub scheduler: bool,
}

impl ReachMap {
    /// No graph: everything [`Reach::Unknown`].
    pub fn unknown() -> ReachMap {
        ReachMap {
            reach: Vec::new(),
            drivers: Vec::new(),
            scheduler: false,
        }
    }

    /// Finds the drivers and walks the application's calls from them; `is_app(i)` tells the
    /// application's functions, the only ones walked through.
    pub fn compute(graph: &CallGraph, is_app: &dyn Fn(usize) -> bool) -> ReachMap {
        let n = graph.functions().len();
        let starts_scheduler = |f: usize| {
            graph.calls(f).iter().any(|c| {
                graph
                    .function(c.callee)
                    .is_some_and(|g| SCHEDULER_STARTS.contains(&g.name.as_str()))
            })
        };
        let mut drivers = Vec::new();
        let mut scheduler = false;
        if let Some(main) = main_driver(graph, is_app, &starts_scheduler) {
            scheduler = starts_scheduler(main);
            drivers.push(Driver {
                function: main,
                kind: DriverKind::Main,
                looping: graph.has_loop(main),
            });
        }
        for t in task_entries(graph, is_app) {
            drivers.push(Driver {
                function: t,
                kind: DriverKind::Task,
                looping: graph.has_loop(t),
            });
        }
        if drivers.is_empty() {
            return ReachMap::unknown();
        }
        let mut reach = vec![Reach::Unreached; n];
        let mut loop_queue = VecDeque::new();
        let mut once_queue = VecDeque::new();
        for (d, driver) in drivers.iter().enumerate() {
            let only_setup = driver.kind == DriverKind::Main && scheduler;
            for call in graph.calls(driver.function) {
                if !is_app(call.callee) || drivers.iter().any(|x| x.function == call.callee) {
                    continue;
                }
                let repeated =
                    !only_setup && (!driver.looping || graph.in_loop(driver.function, call.at));
                if repeated {
                    loop_queue.push_back((call.callee, d, 1, None));
                } else {
                    once_queue.push_back((call.callee, d));
                }
            }
        }
        // Loops first: a function reached both from a loop and from setup is the loop's.
        // Breadth first: each function once, at its shortest depth (each call queued once).
        while let Some((f, driver, depth, parent)) = loop_queue.pop_front() {
            if !matches!(reach.get(f), Some(Reach::Unreached)) {
                continue;
            }
            if let Some(r) = reach.get_mut(f) {
                *r = Reach::Loop {
                    driver,
                    depth,
                    parent,
                };
            }
            for call in graph.calls(f) {
                if is_app(call.callee) {
                    loop_queue.push_back((call.callee, driver, depth + 1, Some(f)));
                }
            }
        }
        while let Some((f, d)) = once_queue.pop_front() {
            if !matches!(reach.get(f), Some(Reach::Unreached)) {
                continue;
            }
            if let Some(r) = reach.get_mut(f) {
                *r = Reach::Once { driver: d };
            }
            for call in graph.calls(f) {
                if is_app(call.callee) {
                    once_queue.push_back((call.callee, d));
                }
            }
        }
        // Drivers are neither phases nor setup: they never return.
        for driver in &drivers {
            if let Some(r) = reach.get_mut(driver.function) {
                *r = Reach::Unreached;
            }
        }
        ReachMap {
            reach,
            drivers,
            scheduler,
        }
    }

    /// How `i` is reached.
    pub fn of(&self, i: usize) -> &Reach {
        self.reach.get(i).unwrap_or(&Reach::Unknown)
    }

    /// Whether `i` is a driver (main or a task entry).
    pub fn is_driver(&self, i: usize) -> bool {
        self.drivers.iter().any(|d| d.function == i)
    }

    /// Whether any driver has a loop (or runs straight through): reach then says something.
    pub fn known(&self) -> bool {
        !self.drivers.is_empty()
    }

    /// The task drivers.
    pub fn tasks(&self) -> impl Iterator<Item = &Driver> {
        self.drivers.iter().filter(|d| d.kind == DriverKind::Task)
    }

    /// How `i` is reached, in words for init's comments (empty when nothing is known).
    pub fn describe(&self, graph: &CallGraph, i: usize) -> String {
        let name = |f: usize| graph.function(f).map_or("?", |f| f.name.as_str());
        match self.of(i) {
            Reach::Loop { driver, .. } => {
                let Some(d) = self.drivers.get(*driver) else {
                    return String::new();
                };
                let from = self.loop_name(graph, d);
                match self.callers_from_loop(i).as_slice() {
                    [] => format!("called in {from}"),
                    [via] => format!("called by `{}`, which {from} calls", name(*via)),
                    vias => {
                        let mut chain: Vec<String> = vias
                            .iter()
                            .take(MAX_CHAIN_SHOWN)
                            .map(|v| format!("`{}`", name(*v)))
                            .collect();
                        if vias.len() > MAX_CHAIN_SHOWN {
                            chain.push("…".into());
                        }
                        format!("reached from {from} through {}", chain.join(" → "))
                    }
                }
            }
            Reach::Once { driver } => match self.drivers.get(*driver) {
                Some(d) if d.kind == DriverKind::Main && self.scheduler => {
                    "called once, before main starts the scheduler".into()
                }
                Some(d) => format!("called once, outside {}", self.loop_name(graph, d)),
                None => String::new(),
            },
            Reach::Unreached => {
                "not called from main's loop or a task's (only through a pointer, or never)".into()
            }
            Reach::Unknown => String::new(),
        }
    }

    /// The functions on the shortest way from the loop to `i`, the loop's own callee first,
    /// `i` excluded.
    fn callers_from_loop(&self, i: usize) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut current = i;
        // Each parent is one call nearer the loop, so the walk ends; the bound is a guard.
        while let Some(Reach::Loop {
            parent: Some(p), ..
        }) = self.reach.get(current)
        {
            if chain.len() >= self.reach.len() {
                break;
            }
            chain.push(*p);
            current = *p;
        }
        chain.reverse();
        chain
    }

    /// "main's loop", "task `infer_task`'s loop", ...
    fn loop_name(&self, graph: &CallGraph, d: &Driver) -> String {
        let name = graph.function(d.function).map_or("?", |f| f.name.as_str());
        match (d.kind, d.looping) {
            (DriverKind::Main, true) if name == "main" => "main's loop".into(),
            (DriverKind::Main, true) => format!("the loop of `{name}` (main's)"),
            (DriverKind::Main, false) => format!("`{name}`"),
            (DriverKind::Task, true) => format!("task `{name}`'s loop"),
            (DriverKind::Task, false) => format!("task `{name}`"),
        }
    }
}

/// `main`, or the function a loop-less `main` hands over to.
fn main_driver(
    graph: &CallGraph,
    is_app: &dyn Fn(usize) -> bool,
    starts_scheduler: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let mut current = *graph.named("main").first()?;
    for _ in 0..MAX_HANDOVERS {
        if graph.has_loop(current) || starts_scheduler(current) {
            break;
        }
        let mut app_callees: Vec<usize> = graph
            .calls(current)
            .iter()
            .map(|c| c.callee)
            .filter(|&c| is_app(c))
            .collect();
        app_callees.dedup();
        match app_callees.as_slice() {
            [only] if *only != current => current = *only,
            _ => break,
        }
    }
    Some(current)
}

/// The application functions passed as the first argument to a task creator or a wrapper of
/// one, that nothing calls directly.
fn task_entries(graph: &CallGraph, is_app: &dyn Fn(usize) -> bool) -> Vec<usize> {
    let creators: Vec<usize> = TASK_CREATORS
        .iter()
        .flat_map(|name| graph.named(name))
        .collect();
    if creators.is_empty() {
        return Vec::new();
    }
    let mut targets = creators.clone();
    for &c in &creators {
        targets.extend(graph.callers(c).iter().copied().filter(|&w| is_app(w)));
    }
    let mut entries: Vec<usize> = targets
        .iter()
        .flat_map(|&t| graph.callers(t).iter().map(move |&site| (site, t)))
        .filter(|&(site, _)| is_app(site))
        .flat_map(|(site, t)| {
            graph
                .calls(site)
                .iter()
                .filter(move |c| c.callee == t)
                .filter_map(|c| c.first_arg)
        })
        .filter(|&p| is_app(p) && graph.callers(p).is_empty())
        .collect();
    entries.sort_unstable();
    entries.dedup();
    entries
}

#[cfg(test)]
mod tests {
    use super::super::callgraph::testing::{Spec, graph};
    use super::*;

    fn spec(
        name: &str,
        calls: Vec<(u64, usize, Option<usize>)>,
        loops: Vec<(u64, u64)>,
    ) -> Spec<'_> {
        Spec { name, calls, loops }
    }

    #[test]
    fn main_s_loop_reaches_the_cycle_and_setup_runs_once() {
        // 0 main: mem_init before its loop, RunCycle inside it.
        let g = graph(vec![
            spec(
                "main",
                vec![(0x1004, 1, None), (0x1020, 2, None)],
                vec![(0x1010, 0x1030)],
            ),
            spec("mem_init", vec![(0x2004, 4, None)], vec![]),
            spec("RunCycle", vec![(0x3004, 3, None)], vec![]),
            spec("LoadModel", vec![(0x4004, 5, None)], vec![]),
            spec("clock_init", vec![], vec![]),
            spec("ReadFile", vec![], vec![]),
            spec("op_callback", vec![], vec![]),
        ]);
        let r = ReachMap::compute(&g, &|_| true);
        assert_eq!(r.drivers.len(), 1);
        assert_eq!(r.of(2).depth(), Some(1));
        assert_eq!(r.of(3).depth(), Some(2));
        assert_eq!(r.of(5).depth(), Some(3));
        assert_eq!(r.of(1), &Reach::Once { driver: 0 });
        assert_eq!(r.of(4), &Reach::Once { driver: 0 });
        assert_eq!(r.of(6), &Reach::Unreached);
        assert_eq!(r.describe(&g, 2), "called in main's loop");
        assert_eq!(
            r.describe(&g, 3),
            "called by `RunCycle`, which main's loop calls"
        );
        assert_eq!(
            r.describe(&g, 5),
            "reached from main's loop through `RunCycle` → `LoadModel`"
        );
        assert_eq!(r.describe(&g, 1), "called once, outside main's loop");
    }

    #[test]
    fn a_function_reached_from_setup_and_from_the_loop_is_the_loop_s() {
        let g = graph(vec![
            spec(
                "main",
                vec![(0x1004, 1, None), (0x1020, 1, None)],
                vec![(0x1010, 0x1030)],
            ),
            spec("model_load", vec![], vec![]),
        ]);
        let r = ReachMap::compute(&g, &|_| true);
        assert_eq!(r.of(1).depth(), Some(1));
    }

    #[test]
    fn rtos_tasks_from_xtaskcreate_and_its_wrappers_main_only_sets_up() {
        let g = graph(vec![
            // 0: main sets up and starts the scheduler.
            spec(
                "main",
                vec![(0x1004, 1, None), (0x1008, 2, None), (0x100c, 5, None)],
                vec![],
            ),
            spec("board_init", vec![], vec![]),
            // 2: passes infer_task to the wrapper.
            spec("infer_start", vec![(0x3004, 3, Some(6))], vec![]),
            // 3: the wrapper.
            spec("app_create_task", vec![(0x4004, 4, None)], vec![]),
            spec("xTaskCreate", vec![], vec![]),
            spec("vTaskStartScheduler", vec![], vec![]),
            // 6: the task, its loop calls model_load.
            spec(
                "infer_task",
                vec![(0x7010, 7, None)],
                vec![(0x7000, 0x7020)],
            ),
            spec("model_load", vec![], vec![]),
            // 8: passes a function it also calls directly: a function someone calls is no
            // task entry.
            spec(
                "odd_start",
                vec![(0x9004, 9, None), (0x9008, 4, Some(9))],
                vec![],
            ),
            spec("called_directly", vec![], vec![]),
        ]);
        let kernel = |i: usize| !matches!(i, 4 | 5);
        let r = ReachMap::compute(&g, &kernel);
        assert!(r.scheduler);
        let tasks: Vec<usize> = r.tasks().map(|d| d.function).collect();
        assert_eq!(tasks, [6]);
        assert_eq!(r.of(7).depth(), Some(1));
        assert_eq!(r.describe(&g, 7), "called in task `infer_task`'s loop");
        assert_eq!(r.of(1), &Reach::Once { driver: 0 });
        assert_eq!(r.of(2), &Reach::Once { driver: 0 });
        assert_eq!(
            r.describe(&g, 1),
            "called once, before main starts the scheduler"
        );
        assert!(r.is_driver(6));
    }

    #[test]
    fn a_main_without_a_loop_hands_over_to_the_one_function_it_calls() {
        // cortex-m-rt: main -> trampoline -> the user's main, which loops.
        let g = graph(vec![
            spec("main", vec![(0x1004, 1, None)], vec![]),
            spec(
                "__cortex_m_rt_main_trampoline",
                vec![(0x2004, 2, None)],
                vec![],
            ),
            spec(
                "firmware::__cortex_m_rt_main",
                vec![(0x3004, 3, None), (0x3020, 4, None)],
                vec![(0x3010, 0x3030)],
            ),
            spec("firmware::init", vec![], vec![]),
            spec("firmware::engine::model_load", vec![], vec![]),
        ]);
        let r = ReachMap::compute(&g, &|_| true);
        assert_eq!(r.drivers[0].function, 2);
        assert_eq!(r.of(4).depth(), Some(1));
        assert_eq!(r.of(3), &Reach::Once { driver: 0 });
        assert_eq!(
            r.describe(&g, 4),
            "called in the loop of `firmware::__cortex_m_rt_main` (main's)"
        );
    }

    #[test]
    fn a_deep_chain_is_walked_once_and_shown_shortened() {
        // main's loop -> f1 -> f2 -> ... -> f2999, each calling the next (and itself).
        let names: Vec<String> = (0..3000).map(|i| format!("f{i}")).collect();
        let mut specs = vec![spec(
            "main",
            vec![(0x1004, 1, None)],
            vec![(0x1000, 0x1010)],
        )];
        for (i, name) in names.iter().enumerate().skip(1) {
            let entry = 0x1000 * (i as u64 + 1);
            let mut calls = vec![(entry + 2, i, None)];
            if i + 1 < names.len() {
                calls.push((entry + 4, i + 1, None));
            }
            specs.push(spec(name, calls, vec![]));
        }
        let g = graph(specs);
        let r = ReachMap::compute(&g, &|_| true);
        assert_eq!(r.of(2999).depth(), Some(2999));
        let text = r.describe(&g, 9);
        assert_eq!(
            text,
            "reached from main's loop through `f1` → `f2` → `f3` → `f4` → `f5` → `f6` → …"
        );
    }

    #[test]
    fn without_main_or_tasks_nothing_is_known() {
        let g = graph(vec![
            spec("Reset_Handler", vec![(0x1004, 1, None)], vec![]),
            spec("model_load", vec![], vec![]),
        ]);
        let r = ReachMap::compute(&g, &|_| true);
        assert!(!r.known());
        assert_eq!(r.of(1), &Reach::Unknown);
        assert_eq!(r.describe(&g, 1), "");
    }
}
