//! `memlife init --elf FW.elf [-o memlife.toml]`: a commented `memlife.toml` for a firmware memlife
//! has never seen: the allocator it detects, and the lifecycle functions it guesses from the
//! usual vocabularies, each with its file:line and why it was chosen, the other candidates as
//! comments.
//!
//! A guess is a function of the firmware's own sources (not the C or C++ library's) whose last
//! name component has a word of a role's vocabulary (`model_load`, `Model::Open`,
//! `AllocateTensors`). Within a role, the earlier the word in the vocabulary the better, then
//! global functions before file-static ones (the application calls a phase from another file;
//! a `static` function of the same words is its helper: the C engine's `graph_build` calls its
//! static `build_graph`), then functions without parameters (a phase runs a whole step; `Invoke(int)` runs one node of
//! `Invoke()`), then the shorter name. Functions named for a whole cycle or loop (`RunCycle`)
//! are never phases: they hold the others.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use memlife_dwarf::{SymbolKind, Symbols, demangle, demangle_name};
use memlife_heap::WalkerOptions;

use crate::cli::InitArgs;

/// Roles and the words that name them, best first.
const ROLES: &[(&str, &[&str])] = &[
    ("load", &["load", "open", "init", "setup", "begin"]),
    ("build", &["build", "allocate", "prepare", "plan"]),
    ("run", &["run", "invoke", "execute", "infer", "predict"]),
    ("switch", &["switch", "reload"]),
    (
        "release",
        &["release", "close", "deinit", "destroy", "teardown"],
    ),
];

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

/// Words of per-operator functions (spans), for the comments.
const SPAN_WORDS: &[&str] = &["op", "layer", "node", "kernel", "forward", "eval"];

/// A function of the firmware's own code.
struct Candidate {
    name: String,
    file: String,
    line: u32,
    words: Vec<String>,
    params: bool,
    /// File-static (a local ELF symbol).
    local: bool,
}

/// The lowercase words of a name's last component: `AllocateTensors` → allocate, tensors;
/// `model_load` → model, load.
fn words(name: &str) -> Vec<String> {
    let base = demangle::without_params(name);
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

/// Source files that are not the firmware's own: the C and C++ libraries, the compiler's.
fn is_library(file: &str) -> bool {
    [
        "newlib",
        "libgcc",
        "libstdc++",
        "/usr/",
        "gcc/config",
        "libc/",
    ]
    .iter()
    .any(|p| file.contains(p))
}

fn candidates(symbols: &Symbols) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for s in symbols.elf_symbols() {
        if s.kind != SymbolKind::Function || s.size == 0 {
            continue;
        }
        let name = demangle_name(&s.name).unwrap_or_else(|| s.name.clone());
        if name.starts_with('_') || name == "main" || name.starts_with("operator") {
            continue;
        }
        let Some(loc) = symbols
            .locate(s.address & !1)
            .into_iter()
            .last()
            .filter(|l| l.file.is_some())
        else {
            continue;
        };
        let file = loc.file.unwrap_or_default();
        if is_library(&file) || out.iter().any(|c| c.name == name) {
            continue;
        }
        out.push(Candidate {
            words: words(&name),
            params: !name.ends_with("()") && name.contains('('),
            local: s.local,
            name,
            file: file.rsplit('/').next().unwrap_or(&file).to_string(),
            line: loc.line.unwrap_or(0),
        });
    }
    out
}

/// The candidates of a role, best first, with the word that matched.
fn ranked<'a>(all: &'a [Candidate], vocab: &[&'a str]) -> Vec<(&'a Candidate, &'a str)> {
    let mut hits: Vec<(usize, &Candidate, &str)> = all
        .iter()
        .filter(|c| {
            !c.words
                .iter()
                .any(|w| CONTAINER_WORDS.contains(&w.as_str()))
        })
        .filter_map(|c| {
            vocab
                .iter()
                .enumerate()
                .find(|(_, w)| c.words.iter().any(|x| x == *w))
                .map(|(i, w)| (i, c, *w))
        })
        .collect();
    hits.sort_by_key(|(i, c, _)| (*i, c.local, c.params, c.name.len()));
    hits.into_iter().map(|(_, c, w)| (c, w)).collect()
}

/// The commented file.
fn render(symbols: &Symbols, elf: &Path) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# memlife.toml written by `memlife init` for {}.\n# Every guess below says where the function is and why it was chosen; edit freely.\n# `memlife audit scripts/lifecycle.rhai --qemu MACHINE` (or --gdb, --chip) runs the bundled audit.\n",
        elf.display()
    );
    let _ = writeln!(t, "elf = {:?}\n", elf.display().to_string());
    match memlife_heap::detect(symbols, None, &WalkerOptions::default(), None) {
        Ok(w) => {
            let _ = writeln!(
                t,
                "# Allocator detected from the ELF's symbols: {} (memlife finds it by itself).\n# allocator = \"{}\"\n",
                w.name(),
                w.name()
            );
        }
        Err(e) => {
            let _ = writeln!(
                t,
                "# No allocator detected ({e}); set one: allocator = \"heap4\"\n"
            );
        }
    }
    let all = candidates(symbols);
    let mut used: Vec<&str> = Vec::new();
    let _ = writeln!(
        t,
        "# Lifecycle roles: a cycle is load, build, run (repeated as the firmware does), switch,\n# release; any may be absent. Guessed from the function names.\n[phases]"
    );
    for (role, vocab) in ROLES {
        let hits: Vec<(&Candidate, &str)> = ranked(&all, vocab)
            .into_iter()
            .filter(|(c, _)| !used.contains(&c.name.as_str()))
            .collect();
        match hits.first() {
            Some((c, w)) => {
                used.push(&c.name);
                let _ = writeln!(
                    t,
                    "{role} = {:?}    # {}:{}; its name has `{w}`{}{}",
                    c.name,
                    c.file,
                    c.line,
                    if c.local { "" } else { ", global" },
                    if c.name.ends_with("()") {
                        ", no parameters"
                    } else {
                        ""
                    }
                );
            }
            None => {
                let _ = writeln!(
                    t,
                    "# {role}: no function named with {} found",
                    vocab.join("/")
                );
            }
        }
        for (c, w) in hits.iter().skip(1).take(3) {
            let _ = writeln!(
                t,
                "#   or {role} = {:?}    # {}:{} (`{w}`)",
                c.name, c.file, c.line
            );
        }
    }
    let _ = writeln!(
        t,
        "\n# Per-operator calls recorded inside a phase (their argument labels the charts):\n# [spans]\n# run = \"...\"    # candidates:"
    );
    for (c, w) in ranked(&all, SPAN_WORDS).into_iter().take(6) {
        let _ = writeln!(t, "#   {:?}    # {}:{} (`{w}`)", c.name, c.file, c.line);
    }
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

pub fn run(args: InitArgs) -> Result<ExitCode> {
    let symbols = super::load_symbols(&args.elf)?;
    let elf = std::fs::canonicalize(&args.elf).unwrap_or_else(|_| args.elf.clone());
    let text = render(&symbols, &elf);
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("memlife init: wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &str, local: bool) -> Candidate {
        Candidate {
            name: name.into(),
            file: "engine.c".into(),
            line: 1,
            words: words(name),
            params: false,
            local,
        }
    }

    #[test]
    fn a_global_function_wins_over_a_static_helper_of_the_same_words() {
        // The C engine: `graph_build` (global, the phase) calls `build_graph` (static), whose
        // symbol comes first in the ELF and whose name is as long.
        let all = [
            candidate("build_graph", true),
            candidate("graph_build", false),
        ];
        let vocab = ROLES.iter().find(|(r, _)| *r == "build").unwrap().1;
        let names: Vec<&str> = ranked(&all, vocab)
            .iter()
            .map(|(c, _)| c.name.as_str())
            .collect();
        assert_eq!(names, ["graph_build", "build_graph"]);
        // The vocabulary's order still comes first.
        let all = [candidate("plan_graph", false), candidate("build_it", true)];
        let names: Vec<&str> = ranked(&all, vocab)
            .iter()
            .map(|(c, _)| c.name.as_str())
            .collect();
        assert_eq!(names, ["build_it", "plan_graph"]);
    }
}
