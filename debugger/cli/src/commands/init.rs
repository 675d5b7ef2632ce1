//! `memlife init --elf FW.elf [-o memlife.toml [--force]]`: a commented `memlife.toml` for a
//! firmware memlife has never seen: the allocator it detects, and for each lifecycle role the
//! application function it chose, with its file:line, why (it calls a framework's anchor, a loop
//! reaches it, its name has the role's word) and the runners-up, as comments and on stderr.
//!
//! How a firmware is read:
//!
//! 1. [`origin`]: every function is the application's or a library's or framework's (TFLM,
//!    FlatBuffers, the FreeRTOS kernel and its trace hooks, CMSIS, vendor HALs, the C and C++
//!    libraries, packages from a cargo registry): from its namespace, its source file (DWARF)
//!    and, for FreeRTOS, its API naming. Only the application's functions are proposed.
//! 2. [`callgraph`]: the ELF's Thumb code decoded: calls, tail calls, loops, function addresses
//!    taken. [`reach`]: the loops of `main` and of every RTOS task (the functions passed to
//!    `xTaskCreate`), and what they reach; a function run once before them is setup.
//! 3. [`anchors`]: on TensorFlow Lite Micro, the application function that calls
//!    `MicroInterpreter::AllocateTensors` builds, the one that calls `Invoke` runs, the one that
//!    reads the model with `GetModel` loads, the one that destroys the interpreter releases.
//! 4. [`roles`]: each role's candidates ranked; [`render`]: the file and the stderr summary.
//!
//! When nothing looks like a lifecycle (no role's choice calls an anchor or is reached from a
//! loop with its role's word), init says so on stderr and writes the file with every phase
//! commented out, so that no audit waits for a cycle that never comes; on an RTOS firmware it
//! proposes task-based phases (a function each task's loop calls) instead, also commented out.
//! It exits 0 either way: the file is written as described.
//!
//! `-o FILE` is written atomically and never through a symbolic link; a FILE that exists is
//! replaced only with `--force`. Without `-o` the file goes to standard output.

mod anchors;
mod callgraph;
mod origin;
mod reach;
mod render;
mod roles;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use memlife_dwarf::Symbols;
use memlife_heap::WalkerOptions;

use crate::cli::InitArgs;

use callgraph::CallGraph;
use origin::{Classifier, Origin};
use reach::ReachMap;
use roles::Candidate;

/// Symbols whose presence means the image holds the FreeRTOS kernel.
const FREERTOS_MARKERS: &[&str] = &[
    "vTaskStartScheduler",
    "xTaskCreate",
    "xTaskCreateStatic",
    "pxCurrentTCB",
    "pvPortMalloc",
];

pub fn run(args: InitArgs) -> Result<ExitCode> {
    if let Some(out) = &args.output {
        check_output(out, args.force)?;
    }
    let symbols = super::load_symbols(&args.elf)?;
    let elf = std::fs::canonicalize(&args.elf).unwrap_or_else(|_| args.elf.clone());
    let graph = CallGraph::build(&symbols);
    let classifier = Classifier {
        freertos: FREERTOS_MARKERS.iter().any(|m| symbols.has_symbol(m)),
    };
    let pool = candidates(&symbols, &graph, &classifier);
    let mut application = vec![false; graph.functions().len()];
    for c in pool.iter().filter(|c| c.origin == Origin::Application) {
        if let Some(a) = application.get_mut(c.index) {
            *a = true;
        }
    }
    let is_app = |i: usize| application.get(i).copied().unwrap_or(false);
    let reach = if graph.decoded() {
        ReachMap::compute(&graph, &is_app)
    } else {
        ReachMap::unknown()
    };
    let hits = anchors::hits(&graph, &symbols, &is_app);
    let choices = roles::choose(&pool, &reach, &hits);
    let inputs = render::Inputs {
        elf: elf.to_str(),
        allocator: memlife_heap::detect(&symbols, None, &WalkerOptions::default(), None)
            .map(|w| w.kind())
            .map_err(|e| e.to_string()),
        pool: &pool,
        graph: &graph,
        reach: &reach,
        choices: &choices,
        tflm: anchors::has_tflm(&graph),
    };
    let text = render::file(&inputs);
    for line in render::summary(&inputs) {
        eprintln!("memlife init: {line}");
    }
    match &args.output {
        Some(path) => {
            write_output(path, &text, args.force)?;
            let shown = memlife_core::text::printable(&path.display().to_string()).into_owned();
            if choices.found() {
                eprintln!("memlife init: wrote {shown}");
            } else {
                eprintln!(
                    "memlife init: wrote {shown} with every phase commented out: edit it before auditing"
                );
            }
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Every function of the image with a source file, classified.
fn candidates(symbols: &Symbols, graph: &CallGraph, classifier: &Classifier) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut names: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (index, f) in graph.functions().iter().enumerate() {
        let Some(loc) = symbols
            .locate(f.entry)
            .into_iter()
            .last()
            .filter(|l| l.file.is_some())
        else {
            continue;
        };
        let path = loc.file.unwrap_or_default();
        // A config names functions: two of one name (static in two files) are one candidate.
        if !names.insert(&f.name) {
            continue;
        }
        out.push(Candidate {
            index,
            words: roles::words(&f.name),
            params: !f.name.ends_with("()") && f.name.contains('('),
            local: f.local,
            origin: classifier.origin(&f.name, &path),
            name: f.name.clone(),
            file: path.rsplit(['/', '\\']).next().unwrap_or(&path).to_string(),
            line: loc.line.unwrap_or(0),
        });
    }
    out
}

/// Refuses an output that is a symbolic link, or that exists without `--force`, before any
/// work is done.
fn check_output(path: &Path, force: bool) -> Result<()> {
    let shown = memlife_core::text::printable(&path.display().to_string()).into_owned();
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => bail!(
            "{shown} is a symbolic link; memlife init does not write through links (name the file itself)"
        ),
        Ok(m) if m.is_dir() => bail!("{shown} is a directory; name a file to write"),
        Ok(_) if !force => bail!("{shown} exists; pass --force to replace it"),
        _ => Ok(()),
    }
}

/// Writes the file atomically: only where nothing is without `--force`, never through a link.
fn write_output(path: &Path, text: &str, force: bool) -> Result<()> {
    check_output(path, force)?;
    let written = if force {
        memlife_core::output::write_atomic(path, text.as_bytes())
    } else {
        memlife_core::output::write_atomic_new(path, text.as_bytes())
    };
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.source.kind() == std::io::ErrorKind::AlreadyExists => {
            let shown = memlife_core::text::printable(&path.display().to_string()).into_owned();
            bail!("{shown} appeared while init was writing it; pass --force to replace it")
        }
        Err(e) => Err(e.into()),
    }
}
