//! The text `memlife init` writes: the commented `memlife.toml`, and the summary on stderr.
//!
//! Every string from the ELF (its path, function and file names) goes through one of two
//! escapers: [`toml_string`] for values (TOML basic strings: `"`, `\` and every control
//! character escaped, everything else as it is, so that `toml` parses back the exact name, a
//! combining accent included) and [`comment`] for comments (a newline or another control
//! character shown as `\u{..}`, so that nothing ends a comment early and injects a key). The
//! stderr summary shows names as [`memlife_core::text::printable`] does.

use std::fmt::Write as _;

use super::callgraph::CallGraph;
use super::origin::{Framework, Origin};
use super::reach::{DriverKind, ReachMap};
use super::roles::{Candidate, Choices, Ranked};

/// "1 function", "3 functions".
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `s` as a TOML basic string, quotes included.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` as a TOML key: bare when it can be, else a basic string.
pub fn toml_key(s: &str) -> String {
    let bare = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { s.to_string() } else { toml_string(s) }
}

/// `s` for a TOML comment: control characters (newline included: it would end the comment),
/// and the characters that reorder or hide text, as `\u{..}`.
pub fn comment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if (c.is_control() && c != '\t') || memlife_core::text::is_deceptive(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// What the file and the summary are made of.
pub struct Inputs<'a> {
    /// The ELF's path as written into `elf = ...` (`None`: not UTF-8).
    pub elf: Option<&'a str>,
    /// The allocator detected, or why none was.
    pub allocator: Result<memlife_heap::AllocatorKind, String>,
    /// Every function of the image with a source file.
    pub pool: &'a [Candidate],
    /// The call graph (without calls for code that is not Thumb).
    pub graph: &'a CallGraph,
    /// Loops and reach.
    pub reach: &'a ReachMap,
    /// The roles' candidates.
    pub choices: &'a Choices<'a>,
    /// The image has TensorFlow Lite Micro.
    pub tflm: bool,
}

impl Inputs<'_> {
    fn name(&self, i: usize) -> &str {
        self.graph.function(i).map_or("?", |f| f.name.as_str())
    }

    fn candidate(&self, i: usize) -> Option<&Candidate> {
        self.pool.iter().find(|c| c.index == i)
    }

    /// Why `r` stands where it does: anchor, reach, word, tie-breaks.
    pub fn reasons(&self, r: &Ranked<'_>) -> String {
        let c = r.candidate;
        let mut parts: Vec<String> = Vec::new();
        if let Some(a) = r.evidence.anchor {
            parts.push(a.to_string());
        }
        let reach = self.reach.describe(self.graph, c.index);
        if !reach.is_empty() {
            parts.push(reach);
        }
        if let Some(w) = r.evidence.word {
            parts.push(format!("its name has `{w}`"));
        }
        if !c.local {
            parts.push("global".into());
        }
        if c.name.ends_with("()") {
            parts.push("no parameters".into());
        }
        parts.join(", ")
    }

    /// One line on how init read the code.
    fn code_summary(&self) -> String {
        if !self.graph.decoded() {
            return "the code is not Thumb code: no call graph, guesses from names and source files only".into();
        }
        if !self.reach.known() {
            return "no `main` and no RTOS task found in the code: guesses from names and source files only".into();
        }
        let mut parts = Vec::new();
        for d in &self.reach.drivers {
            let name = self.name(d.function);
            let what = match (d.kind, d.looping) {
                (DriverKind::Main, true) if name == "main" => "main's loop".to_string(),
                (DriverKind::Main, true) => format!("the loop of `{name}` (main hands over to it)"),
                (DriverKind::Main, false) if self.reach.scheduler => {
                    "main, which sets up and starts the scheduler".to_string()
                }
                (DriverKind::Main, false) => format!("`{name}`, which has no loop"),
                (DriverKind::Task, true) => format!("task `{name}`'s loop"),
                (DriverKind::Task, false) => format!("task `{name}` (no loop)"),
            };
            parts.push(what);
        }
        format!("call graph from the code: {}", parts.join("; "))
    }

    /// Frameworks and libraries found, with their function counts.
    fn frameworks(&self) -> Vec<(Framework, usize)> {
        tally(self.pool.iter())
    }

    /// Functions with a role's word that were passed over, as a sentence (empty: none).
    fn passed_over(&self) -> String {
        let has_word = |c: &Candidate| {
            super::roles::ROLES
                .iter()
                .any(|r| r.words.iter().any(|w| c.words.iter().any(|x| x == w)))
        };
        let by_framework = tally(self.pool.iter().filter(|c| has_word(c)));
        let mut once: Vec<String> = self
            .pool
            .iter()
            .filter(|c| has_word(c) && c.origin == Origin::Application)
            .filter(|c| matches!(self.reach.of(c.index), super::reach::Reach::Once { .. }))
            .map(|c| format!("`{}` ({}:{})", c.name, c.file, c.line))
            .collect();
        let mut parts = Vec::new();
        if !by_framework.is_empty() {
            let list: Vec<String> = by_framework
                .iter()
                .map(|(f, n)| format!("{n} of {f}"))
                .collect();
            parts.push(format!(
                "{} whose names have a role's word ({}): a framework's functions run inside the application's phases",
                count(by_framework.iter().map(|(_, n)| n).sum::<usize>(), "function"),
                list.join(", ")
            ));
        }
        if !once.is_empty() {
            once.truncate(6);
            parts.push(format!(
                "called once, before the loops (setup): {}",
                once.join(", ")
            ));
        }
        parts.join("; ")
    }
}

/// How many of `functions` each framework has, by framework.
fn tally<'c>(functions: impl Iterator<Item = &'c Candidate>) -> Vec<(Framework, usize)> {
    let mut counts: Vec<(Framework, usize)> = Vec::new();
    for c in functions {
        if let Origin::Framework(f, _) = c.origin {
            match counts.iter_mut().find(|(g, _)| *g == f) {
                Some((_, n)) => *n += 1,
                None => counts.push((f, 1)),
            }
        }
    }
    counts.sort();
    counts
}

/// The commented `memlife.toml`.
pub fn file(inp: &Inputs<'_>) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# memlife.toml written by `memlife init` for the ELF named below.\n# Every guess says where the function is, why it was chosen and what came next; edit freely.\n# `memlife audit scripts/lifecycle.rhai --qemu MACHINE` (or --gdb, --chip) runs the bundled audit.\n"
    );
    match inp.elf {
        Some(path) => {
            let _ = writeln!(t, "elf = {}\n", toml_string(path));
        }
        None => {
            let _ = writeln!(
                t,
                "# elf: the ELF's path is not valid UTF-8, which TOML cannot hold; give --elf to memlife audit.\n"
            );
        }
    }
    match &inp.allocator {
        Ok(kind) => {
            let _ = writeln!(
                t,
                "# Allocator detected from the ELF's symbols: {} (memlife finds it by itself).\n# allocator = {}\n",
                comment(kind.name()),
                toml_string(kind.name())
            );
        }
        Err(why) => {
            let _ = writeln!(
                t,
                "# No allocator detected ({}); set one: allocator = \"heap4\"\n",
                comment(why)
            );
        }
    }
    let _ = writeln!(
        t,
        "# How init read the firmware: {}.",
        comment(&inp.code_summary())
    );
    let frameworks = inp.frameworks();
    if !frameworks.is_empty() {
        let list: Vec<String> = frameworks
            .iter()
            .map(|(f, n)| format!("{f} ({})", count(*n, "function")))
            .collect();
        let _ = writeln!(
            t,
            "# Libraries and frameworks, never proposed for a role: {}.",
            list.join(", ")
        );
    }
    t.push('\n');
    if inp.choices.found() {
        phases(&mut t, inp);
    } else {
        no_lifecycle(&mut t, inp);
    }
    spans(&mut t, inp);
    let _ = writeln!(
        t,
        "\n# How spans are named (else by their index): the argument that tells them apart and a\n# global array of names indexed by it, or a `char *` argument.\n# [labels.run]\n# arg = 1                 # 0 is often `this` or a context\n# names = \"layer_names\"  # field = \"name\" when its elements are structs\n# string = true           # instead of names: the argument is the name\n\n# Scripts observe cycles: every call of every role above, in the firmware's order; a cycle\n# begins at each call of this role (default: the first of load, build, run, switch, release).\n# [lifecycle]\n# cycle_starts = \"load\"\n\n# The firmware's tensor table, if it keeps one, for the overlap check (else traced allocations).\n# [tensors]\n# table = \"g_tensors\"         # a global array of structs\n# count = \"g_tensor_count\"    # how many are in use (default: all)\n# name = \"name\"\n# addr = \"addr\"\n# size = \"size\"\n# first = \"first_layer\"\n# last = \"last_layer\""
    );
    let _ = writeln!(
        t,
        "\n[budgets]\ncycles = 3    # cycles the scripts observe\n\n[trace]\nmethod = \"trace\""
    );
    t
}

/// `[phases]` with a choice per role, its reasons and the runners-up.
fn phases(t: &mut String, inp: &Inputs<'_>) {
    let _ = writeln!(
        t,
        "# Lifecycle roles: a cycle is load, build, run (repeated as the firmware does), switch,\n# release; any may be absent. Each choice says why; the first `or` is the runner-up.\n[phases]"
    );
    for (role, ranked) in &inp.choices.roles {
        match ranked.first() {
            Some(r) => {
                let _ = writeln!(
                    t,
                    "{} = {}    # {}:{}; {}",
                    role.name,
                    toml_string(&r.candidate.name),
                    comment(&r.candidate.file),
                    r.candidate.line,
                    comment(&inp.reasons(r))
                );
            }
            None => {
                let _ = writeln!(
                    t,
                    "# {}: no application function named with {} found",
                    role.name,
                    role.words.join("/")
                );
            }
        }
        for r in ranked.iter().skip(1).take(3) {
            let _ = writeln!(
                t,
                "#   or {} = {}    # {}:{}; {}",
                role.name,
                comment(&toml_string(&r.candidate.name)),
                comment(&r.candidate.file),
                r.candidate.line,
                comment(&inp.reasons(r))
            );
        }
    }
    let passed = inp.passed_over();
    if !passed.is_empty() {
        let _ = writeln!(t, "# Not proposed: {}.", comment(&passed));
    }
}

/// No lifecycle: every role commented out, and the tasks' loops proposed instead.
fn no_lifecycle(t: &mut String, inp: &Inputs<'_>) {
    let _ = writeln!(
        t,
        "# No ML lifecycle found: {}.\n# Every phase is commented out, so that an audit does not wait for a cycle that never\n# comes; uncomment the ones that are phases of your firmware.",
        comment(&no_lifecycle_reason(inp))
    );
    let tasks: Vec<_> = inp.reach.tasks().collect();
    if !tasks.is_empty() {
        let _ = writeln!(
            t,
            "#\n# RTOS tasks (entry functions passed to xTaskCreate): task-based phases instead, a\n# function each task's loop calls once per iteration (the entry itself never returns).\n# [phases]"
        );
        for d in tasks {
            task_phase(t, inp, d.function);
        }
    }
    let weak: Vec<(&str, &Ranked<'_>)> = inp
        .choices
        .roles
        .iter()
        .filter_map(|(role, r)| r.first().map(|r| (role.name, r)))
        .collect();
    if !weak.is_empty() {
        let _ = writeln!(t, "#\n# Functions with a role's word that no loop reaches:");
        for (role, r) in weak {
            let _ = writeln!(
                t,
                "# {role} = {}    # {}:{}; {}",
                comment(&toml_string(&r.candidate.name)),
                comment(&r.candidate.file),
                r.candidate.line,
                comment(&inp.reasons(r))
            );
        }
    }
    let passed = inp.passed_over();
    if !passed.is_empty() {
        let _ = writeln!(t, "# Not proposed: {}.", comment(&passed));
    }
}

/// Why nothing looks like a lifecycle, in one sentence.
pub fn no_lifecycle_reason(inp: &Inputs<'_>) -> String {
    let mut why = String::from(
        "no application function that main's loop or a task's loop reaches has a lifecycle name (load, build, run, switch, release)",
    );
    if inp.tflm {
        why.push_str(" or calls TensorFlow Lite Micro's AllocateTensors or Invoke");
    }
    why
}

/// The task-based phase proposals of one task.
fn task_phase(t: &mut String, inp: &Inputs<'_>, task: usize) {
    let name = inp.name(task);
    let mut steps: Vec<usize> = inp
        .graph
        .calls(task)
        .iter()
        .filter(|c| inp.graph.in_loop(task, c.at) || !inp.graph.has_loop(task))
        .map(|c| c.callee)
        .filter(|&c| {
            inp.candidate(c)
                .is_some_and(|c| c.origin == Origin::Application)
        })
        .collect();
    let mut seen = Vec::new();
    steps.retain(|s| {
        let first = !seen.contains(s);
        seen.push(*s);
        first
    });
    let place = inp
        .candidate(task)
        .map(|c| format!("{}:{}", c.file, c.line))
        .unwrap_or_default();
    if steps.is_empty() {
        let _ = writeln!(
            t,
            "# {}: its loop calls no function of the application (its work is inlined into it, {})",
            comment(&toml_key(name)),
            comment(&place)
        );
        return;
    }
    for (n, step) in steps.into_iter().take(3).enumerate() {
        let (file, line) = inp
            .candidate(step)
            .map_or((String::new(), 0), |c| (c.file.clone(), c.line));
        let _ = writeln!(
            t,
            "# {}{} = {}    # {}:{}; called in task `{}`'s loop ({})",
            if n == 0 { "" } else { "  or " },
            comment(&toml_key(name)),
            comment(&toml_string(inp.name(step))),
            comment(&file),
            line,
            comment(name),
            comment(&place)
        );
    }
}

/// Span candidates, as comments: the application's functions with a span word, then on TFLM
/// its kernels' `Eval`s (TFLM calls each operator's kernel through a pointer, one function per
/// operator type, so a span records one type).
fn spans(t: &mut String, inp: &Inputs<'_>) {
    let _ = writeln!(
        t,
        "\n# Per-operator calls recorded inside a phase (their argument labels the charts):\n# [spans]\n# run = \"...\"    # candidates:"
    );
    for (c, w) in super::roles::spans(inp.pool, inp.reach).into_iter().take(6) {
        let _ = writeln!(
            t,
            "#   {}    # {}:{} (`{w}`)",
            comment(&toml_string(&c.name)),
            comment(&c.file),
            c.line
        );
    }
    if inp.tflm {
        let kernels: Vec<&Candidate> = inp
            .pool
            .iter()
            .filter(|c| matches!(c.origin, Origin::Framework(Framework::Tflm, _)))
            .filter(|c| c.words.last().is_some_and(|w| w == "eval"))
            .take(6)
            .collect();
        if !kernels.is_empty() {
            let _ = writeln!(
                t,
                "#   TensorFlow Lite Micro calls each operator's kernel through a pointer, one function per\n#   operator type: a span on one of these records that type's calls:"
            );
            for c in kernels {
                let _ = writeln!(
                    t,
                    "#   {}    # {}:{}",
                    comment(&toml_string(&c.name)),
                    comment(&c.file),
                    c.line
                );
            }
        }
    }
}

/// The stderr summary: per role, the choice and why, and the runner-up.
pub fn summary(inp: &Inputs<'_>) -> Vec<String> {
    let show = |s: &str| memlife_core::text::printable(s).into_owned();
    let mut out = vec![show(&inp.code_summary())];
    if !inp.choices.found() {
        let tasks = inp.reach.tasks().count();
        let instead = if tasks > 0 {
            format!(
                "; the file proposes task-based phases for {}, commented out",
                count(tasks, "task")
            )
        } else {
            String::new()
        };
        out.push(format!(
            "no ML lifecycle found: {}{instead}",
            no_lifecycle_reason(inp)
        ));
        return out;
    }
    for (role, ranked) in &inp.choices.roles {
        let Some(first) = ranked.first() else {
            out.push(format!("{}: no candidate", role.name));
            continue;
        };
        let runner_up = ranked.get(1).map_or_else(
            || "none".to_string(),
            |r| {
                format!(
                    "{} ({}:{}: {})",
                    show(&r.candidate.name),
                    show(&r.candidate.file),
                    r.candidate.line,
                    show(&inp.reasons(r))
                )
            },
        );
        out.push(format!(
            "{} = {} ({}:{}): {}; runner-up: {runner_up}",
            role.name,
            show(&first.candidate.name),
            show(&first.candidate.file),
            first.candidate.line,
            show(&inp.reasons(first))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_parse_back_exactly() {
        for s in [
            "graph_build",
            "app::Teardown(app::Session*)",
            "model_load\u{301}",
            "caf\u{e9} \"quoted\" back\\slash",
            "line\nbreak\ttab\rcr",
            "nul\u{0} esc\u{1b} del\u{7f} c1\u{85}",
            "/tmp/fw\ntarget = { semihosting_dir = \"/\" }\n.elf",
            "\u{202e}gnp.exe",
        ] {
            let doc = format!("k = {}\n", toml_string(s));
            let table: toml::Table = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert_eq!(table.len(), 1, "{doc}");
            assert_eq!(table["k"].as_str(), Some(s), "{doc}");
        }
        // Plain names are written as they are.
        assert_eq!(toml_string("graph_build"), "\"graph_build\"");
        assert_eq!(toml_string("model_load\u{301}"), "\"model_load\u{301}\"");
    }

    #[test]
    fn comments_end_only_at_their_own_newline() {
        let evil = "fw.elf\n[target]\nsemihosting_dir = \"/\"\r\u{0}\u{1b}[2J\u{202e}";
        let doc = format!("# for {}\nk = 1\n", comment(evil));
        let table: toml::Table = toml::from_str(&doc).unwrap();
        assert_eq!(table.keys().collect::<Vec<_>>(), ["k"]);
        assert!(comment(evil).contains("\\u{a}[target]"));
        assert_eq!(comment("tab\tstays"), "tab\tstays");
    }

    #[test]
    fn keys_are_bare_when_they_can_be() {
        assert_eq!(toml_key("logger_task"), "logger_task");
        assert_eq!(toml_key("ns::task"), "\"ns::task\"");
        let doc = format!("{} = 1\n", toml_key("a b\n"));
        let table: toml::Table = toml::from_str(&doc).unwrap();
        assert!(table.contains_key("a b\n"));
    }
}
