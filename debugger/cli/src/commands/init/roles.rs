//! Choosing a function for each lifecycle role, with the reasons and the runners-up.
//!
//! Only the application's functions are candidates ([`super::origin`]), never `main`, a task
//! entry (neither returns), a function named for a whole cycle or loop (`RunCycle`,
//! `run_forever`: it holds the phases) or one that runs once before the loops
//! ([`super::reach`]: setup). A candidate for a role calls the role's framework anchor
//! ([`super::anchors`]) or has a word of the role's vocabulary in its last name component
//! (`model_load`, `Model::Open`, `AllocateTensors`). Within a role, best first:
//!
//! 1. it calls the role's anchor;
//! 2. it is reached from `main`'s loop or a task's loop (known only from Thumb code; a function
//!    reached only through a pointer comes after);
//! 3. the earlier its word in the vocabulary;
//! 4. the loop calls it, or calls a function that calls it (deeper comes after);
//! 5. global before file-static (the application calls a phase from another file; a `static`
//!    function of the same words is its helper: the C engine's `graph_build` calls its static
//!    `build_graph`);
//! 6. without parameters before with (a phase runs a whole step; `Invoke(int)` runs one node of
//!    `Invoke()`);
//! 7. the shorter name.
//!
//! Roles are chosen build, run, release, load, switch (the anchored roles first, so that the
//! function that builds the interpreter is not taken for load), one function per role.

use super::anchors::Hit;
use super::origin::Origin;
use super::reach::{Reach, ReachMap};

/// A lifecycle role and the words that name it, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleSpec {
    /// The role's name in `[phases]`.
    pub name: &'static str,
    /// Its vocabulary.
    pub words: &'static [&'static str],
}

/// The roles, in the order a cycle runs them (and the file lists them).
pub const ROLES: &[RoleSpec] = &[
    RoleSpec {
        name: "load",
        words: &["load", "open", "init", "setup", "begin"],
    },
    RoleSpec {
        name: "build",
        words: &["build", "allocate", "prepare", "plan"],
    },
    RoleSpec {
        name: "run",
        words: &["run", "invoke", "execute", "infer", "predict"],
    },
    RoleSpec {
        name: "switch",
        words: &["switch", "reload"],
    },
    RoleSpec {
        name: "release",
        words: &["release", "close", "deinit", "destroy", "teardown"],
    },
];

/// The order roles are chosen in.
const CHOICE_ORDER: [&str; 5] = ["build", "run", "release", "load", "switch"];

/// Words of functions that run a whole cycle or loop around the roles (`RunCycle`,
/// `run_forever`): never a phase, which would hold the others.
const CONTAINER_WORDS: &[&str] = &[
    "cycle",
    "cycles",
    "loop",
    "forever",
    "lifecycle",
    "all",
    "main",
];

/// Words of per-operator functions (spans).
pub const SPAN_WORDS: &[&str] = &["op", "layer", "node", "kernel", "forward", "eval"];

/// A function of the image with what init knows of it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its index in the call graph.
    pub index: usize,
    /// Its name as users write it.
    pub name: String,
    /// The base name of its source file.
    pub file: String,
    /// Its first line.
    pub line: u32,
    /// The lowercase words of its last name component.
    pub words: Vec<String>,
    /// It takes parameters.
    pub params: bool,
    /// File-static.
    pub local: bool,
    /// The application's or a framework's.
    pub origin: Origin,
}

impl Candidate {
    /// Whether init may propose it for a role at all (origin, name, reach).
    fn eligible(&self, reach: &ReachMap) -> bool {
        self.origin == Origin::Application
            && !self.name.starts_with('_')
            && self.name != "main"
            && !self.name.starts_with("operator")
            && !self
                .words
                .iter()
                .any(|w| CONTAINER_WORDS.contains(&w.as_str()))
            && !reach.is_driver(self.index)
            && !matches!(reach.of(self.index), Reach::Once { .. })
    }

    /// The position of the first of `words` its name has.
    fn word(&self, words: &[&'static str]) -> Option<(usize, &'static str)> {
        words
            .iter()
            .enumerate()
            .find(|(_, w)| self.words.iter().any(|x| x == *w))
            .map(|(i, w)| (i, *w))
    }
}

/// The lowercase words of a name's last component: `AllocateTensors` → allocate, tensors;
/// `model_load` → model, load.
pub fn words(name: &str) -> Vec<String> {
    let base = memlife_dwarf::demangle::without_params(name);
    let last = base.rsplit("::").next().unwrap_or(base);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in last.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Why a candidate stands where it does for a role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The anchor it calls, if any.
    pub anchor: Option<&'static str>,
    /// The word of the role's vocabulary its name has.
    pub word: Option<&'static str>,
}

/// A candidate for one role with its evidence, in ranking order.
#[derive(Debug, Clone)]
pub struct Ranked<'a> {
    /// The function.
    pub candidate: &'a Candidate,
    /// What made it a candidate.
    pub evidence: Evidence,
    key: (bool, u8, usize, u8, bool, bool, usize),
}

impl Ranked<'_> {
    /// Whether this looks like a lifecycle phase by itself: it calls a framework's anchor, or
    /// the loops reach it (or nothing is known of reach) and it has the role's word.
    pub fn is_strong(&self) -> bool {
        self.evidence.anchor.is_some() || self.key.1 == 0
    }
}

/// Every role's candidates, best first.
#[derive(Debug, Clone)]
pub struct Choices<'a> {
    /// Per role of [`ROLES`], in that order: its candidates, the chosen one first (none were
    /// chosen for another role).
    pub roles: Vec<(&'static RoleSpec, Vec<Ranked<'a>>)>,
}

impl Choices<'_> {
    /// Whether anything looks like a lifecycle: some role's choice is strong.
    pub fn found(&self) -> bool {
        self.roles
            .iter()
            .any(|(_, r)| r.first().is_some_and(Ranked::is_strong))
    }
}

/// Ranks `pool` for `role`.
fn rank<'a>(
    role: &RoleSpec,
    pool: &'a [Candidate],
    reach: &ReachMap,
    hits: &[Hit],
) -> Vec<Ranked<'a>> {
    let mut out: Vec<Ranked<'a>> = pool
        .iter()
        .filter(|c| c.eligible(reach))
        .filter_map(|c| {
            let anchor = hits
                .iter()
                .find(|h| h.function == c.index && h.anchor.role == role.name)
                .map(|h| h.anchor.says);
            let word = c.word(role.words);
            if anchor.is_none() && word.is_none() {
                return None;
            }
            let r = reach.of(c.index);
            let unreached = u8::from(matches!(r, Reach::Unreached));
            let deep = u8::from(r.depth().is_some_and(|d| d > 2));
            let key = (
                anchor.is_none(),
                unreached,
                word.map_or(role.words.len(), |(i, _)| i),
                deep,
                c.local,
                c.params,
                c.name.len(),
            );
            Some(Ranked {
                candidate: c,
                evidence: Evidence {
                    anchor,
                    word: word.map(|(_, w)| w),
                },
                key,
            })
        })
        .collect();
    out.sort_by_key(|a| a.key);
    out
}

/// Chooses every role (see the module docs).
pub fn choose<'a>(pool: &'a [Candidate], reach: &ReachMap, hits: &[Hit]) -> Choices<'a> {
    let mut used: Vec<usize> = Vec::new();
    let mut chosen: Vec<(&'static RoleSpec, Vec<Ranked<'a>>)> = Vec::new();
    for name in CHOICE_ORDER {
        let Some(role) = ROLES.iter().find(|r| r.name == name) else {
            continue;
        };
        let ranked: Vec<Ranked<'a>> = rank(role, pool, reach, hits)
            .into_iter()
            .filter(|r| !used.contains(&r.candidate.index))
            .collect();
        if let Some(first) = ranked.first() {
            used.push(first.candidate.index);
        }
        chosen.push((role, ranked));
    }
    let roles = ROLES
        .iter()
        .filter_map(|role| {
            let i = chosen.iter().position(|(r, _)| r.name == role.name)?;
            Some(chosen.swap_remove(i))
        })
        .collect();
    Choices { roles }
}

/// The span candidates: eligible functions with a span word, best word first.
pub fn spans<'a>(pool: &'a [Candidate], reach: &ReachMap) -> Vec<(&'a Candidate, &'static str)> {
    let mut out: Vec<(usize, &'a Candidate, &'static str)> = pool
        .iter()
        .filter(|c| c.eligible(reach))
        .filter_map(|c| c.word(SPAN_WORDS).map(|(i, w)| (i, c, w)))
        .collect();
    out.sort_by_key(|(i, c, _)| (*i, c.local, c.params, c.name.len()));
    out.into_iter().map(|(_, c, w)| (c, w)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::anchors::{Hit, TFLM};
    use super::super::origin::Framework;
    use super::*;

    fn candidate(index: usize, name: &str, local: bool) -> Candidate {
        Candidate {
            index,
            name: name.into(),
            file: "engine.c".into(),
            line: 1,
            words: words(name),
            params: name.contains('(') && !name.ends_with("()"),
            local,
            origin: Origin::Application,
        }
    }

    fn names(r: &[Ranked<'_>]) -> Vec<String> {
        r.iter().map(|r| r.candidate.name.clone()).collect()
    }

    fn role(name: &str) -> &'static RoleSpec {
        ROLES.iter().find(|r| r.name == name).unwrap()
    }

    #[test]
    fn words_split_snake_camel_and_scopes() {
        assert_eq!(words("model_load"), ["model", "load"]);
        assert_eq!(
            words("tflite::MicroInterpreter::AllocateTensors()"),
            ["allocate", "tensors"]
        );
        assert_eq!(
            words("app::LoadModel(app::ModelSpec const&)"),
            ["load", "model"]
        );
        // A combining accent ends a word like any other non-ASCII character.
        assert_eq!(words("model_load\u{301}"), ["model", "load"]);
    }

    #[test]
    fn a_global_function_wins_over_a_static_helper_of_the_same_words() {
        // The C engine: `graph_build` (global, the phase) calls `build_graph` (static), whose
        // symbol comes first in the ELF and whose name is as long.
        let all = [
            candidate(0, "build_graph", true),
            candidate(1, "graph_build", false),
        ];
        let unknown = ReachMap::unknown();
        let ranked = rank(role("build"), &all, &unknown, &[]);
        assert_eq!(names(&ranked), ["graph_build", "build_graph"]);
        // The vocabulary's order still comes first.
        let all = [
            candidate(0, "plan_graph", false),
            candidate(1, "build_it", true),
        ];
        let ranked = rank(role("build"), &all, &unknown, &[]);
        assert_eq!(names(&ranked), ["build_it", "plan_graph"]);
    }

    #[test]
    fn frameworks_containers_and_drivers_are_never_candidates() {
        let mut tflm = candidate(0, "tflite::MicroInterpreterGraph::InitSubgraphs()", false);
        tflm.origin = Origin::Framework(Framework::Tflm, "its namespace");
        let mut hook = candidate(1, "xTraceTaskSwitch", false);
        hook.origin = Origin::Framework(Framework::RtosTrace, "a trace hook's name");
        let all = [
            tflm,
            hook,
            candidate(2, "app::RunCycle(app::ModelSpec const&)", false),
            candidate(3, "main", false),
            candidate(4, "fw::OpenModel()", false),
        ];
        let unknown = ReachMap::unknown();
        assert_eq!(
            names(&rank(role("load"), &all, &unknown, &[])),
            ["fw::OpenModel()"]
        );
        assert!(rank(role("switch"), &all, &unknown, &[]).is_empty());
        assert!(rank(role("run"), &all, &unknown, &[]).is_empty());
    }

    #[test]
    fn setup_is_never_a_role_and_what_the_loops_reach_comes_before_callbacks() {
        use super::super::callgraph::testing::{Spec, graph};
        let spec = |name, calls, loops| Spec { name, calls, loops };
        // main calls mem_init before its loop and RunCycle in it; RunCycle calls app::Setup; a
        // kernel's Init callback is called by nobody (through a pointer).
        let g = graph(vec![
            spec(
                "main",
                vec![(0x1004, 1, None), (0x1020, 2, None)],
                vec![(0x1010, 0x1030)],
            ),
            spec("mem_init", vec![], vec![]),
            spec("app::RunCycle()", vec![(0x3004, 3, None)], vec![]),
            spec("app::Setup()", vec![], vec![]),
            spec(
                "ops::Init(TfLiteContext*, char const*, unsigned int)",
                vec![],
                vec![],
            ),
        ]);
        let reach = ReachMap::compute(&g, &|_| true);
        let pool: Vec<Candidate> = g
            .functions()
            .iter()
            .enumerate()
            .map(|(i, f)| candidate(i, &f.name, false))
            .collect();
        // `init` comes before `setup` in the vocabulary, yet setup runs once and the callback
        // is reached from no loop.
        assert_eq!(
            names(&rank(role("load"), &pool, &reach, &[])),
            [
                "app::Setup()",
                "ops::Init(TfLiteContext*, char const*, unsigned int)"
            ]
        );
        let choices = choose(&pool, &reach, &[]);
        assert!(choices.found());
        // A callback alone is no lifecycle.
        let callback_only: Vec<Candidate> = pool.iter().filter(|c| c.index == 4).cloned().collect();
        assert!(!choose(&callback_only, &reach, &[]).found());
    }

    #[test]
    fn an_anchor_beats_any_word_and_names_the_function_it_calls() {
        // BuildInterpreter calls AllocateTensors; a `Prepare` callback has the better word.
        let all = [
            candidate(0, "app::ops::Prepare(TfLiteContext*, TfLiteNode*)", false),
            candidate(1, "app::BuildInterpreter(app::Session&)", false),
            candidate(2, "fw::ReadModelImage()", false),
            candidate(3, "fw::Infer()", false),
        ];
        let anchor = |role: &str| TFLM.iter().find(|a| a.role == role).unwrap();
        let hits = [
            Hit {
                function: 1,
                anchor: anchor("build"),
            },
            Hit {
                function: 2,
                anchor: anchor("load"),
            },
            Hit {
                function: 3,
                anchor: anchor("run"),
            },
        ];
        let choices = choose(&all, &ReachMap::unknown(), &hits);
        let first = |role: &str| {
            choices
                .roles
                .iter()
                .find(|(r, _)| r.name == role)
                .and_then(|(_, r)| r.first())
                .map(|r| r.candidate.name.clone())
        };
        assert_eq!(
            first("build").as_deref(),
            Some("app::BuildInterpreter(app::Session&)")
        );
        // Without a word of its own, ReadModelImage is load by its anchor.
        assert_eq!(first("load").as_deref(), Some("fw::ReadModelImage()"));
        assert_eq!(first("run").as_deref(), Some("fw::Infer()"));
        assert!(choices.found());
        let build = &choices.roles[1].1;
        assert_eq!(
            build[0].evidence.anchor,
            Some("calls tflite::MicroInterpreter::AllocateTensors")
        );
        // The callback stays, as the runner-up.
        assert_eq!(
            build[1].candidate.name,
            "app::ops::Prepare(TfLiteContext*, TfLiteNode*)"
        );
    }
}
