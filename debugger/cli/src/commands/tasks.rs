//! `memlife tasks`: halt, read every FreeRTOS task, walk the heap for their TCB and stack
//! blocks, print, let go.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use memlife_core::Target;
use memlife_core::cortex_m::CoreRegisters;
use memlife_dwarf::Symbols;
use memlife_heap::{HeapState, LinkState};
use memlife_rtos::{FreeRtos, TaskSnapshot, render};

use crate::cli::{HeapOptions, TasksArgs};
use crate::session::Session;

pub fn run(args: TasksArgs) -> Result<ExitCode> {
    let symbols = super::load_symbols(&args.elf)?;
    let mut walks = super::environment::link(args.heap.walk, &super::environment::read()?);
    let kernel = FreeRtos::from_symbols(&symbols)
        .with_context(|| format!("{}: no FreeRTOS tasks to read", args.elf.display()))?;
    let mut session = Session::open(&args.target, &args.elf, args.stop.leave)?;
    let target = session.target()?;
    crate::runto::stop_where_asked(target, &symbols, &args.stop)?;
    let core = core_registers(target);
    let mut snap = kernel
        .read_tasks(target.as_memory(), core.as_ref())
        .context("reading the FreeRTOS tasks")?;
    let heap = walk_heap(target, &symbols, &args.heap, &mut walks);
    if let Ok(state) = &heap {
        snap.attribute_heap(state);
    }
    snap.annotate(&symbols);
    let ctx = memlife_heap::render::Context {
        at: args.stop.at.as_deref().map(|f| (f, args.stop.hit)),
        ..memlife_heap::render::Context::of(target, &symbols, Default::default())
    };
    let out = if args.json {
        let mut v = render::json(&snap);
        if let Some(obj) = v.as_object_mut() {
            obj.insert("heap".into(), heap_json(&snap, &heap));
            obj.insert("target".into(), ctx.target.clone().into());
            if let Some((f, n)) = ctx.at {
                obj.insert("at".into(), serde_json::json!({ "function": f, "hit": n }));
            }
        }
        let mut s = serde_json::to_string_pretty(&v)?;
        s.push('\n');
        s
    } else {
        let mut s = render::text(&snap);
        if let Err(e) = &heap {
            s.push_str(&format!("\nheap not walked: {e:#}\n"));
        }
        s
    };
    session.close()?;
    // Task names come from the target: no terminal controls.
    std::io::stdout().write_all(memlife_core::text::printable(&out).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The halted core's registers: by GDB number from a live target, by name from a snapshot
/// (which keeps them as the backend listed them); `None` when neither answers, and the tasks'
/// saved contexts are still read.
fn core_registers(target: &mut dyn Target) -> Option<CoreRegisters> {
    CoreRegisters::read(target).ok().or_else(|| {
        let named = target.read_all_registers().ok()?;
        CoreRegisters::from_named(&named)
    })
}

/// The heap at the same stop, for the tasks' blocks; a firmware whose heap memlife cannot walk
/// (static tasks only, an allocator it does not know) still gets its tasks.
fn walk_heap(
    target: &mut dyn Target,
    symbols: &Symbols,
    opts: &HeapOptions,
    link: &mut LinkState,
) -> Result<HeapState> {
    let walker = super::walker(
        symbols,
        opts.allocator,
        &opts.walker_options(),
        Some(&mut *target),
    )?;
    Ok(super::walk(target, symbols, walker.as_ref(), link)?.0)
}

fn heap_json(snap: &TaskSnapshot, heap: &Result<HeapState>) -> serde_json::Value {
    match heap {
        Ok(state) => {
            let blocks = snap.task_blocks();
            serde_json::json!({
                "allocator": state.allocator,
                "status": state.status,
                "task_blocks": blocks.len(),
                "task_bytes": blocks.iter().map(|b| b.block.size).sum::<u64>(),
            })
        }
        Err(e) => serde_json::json!({ "error": format!("{e:#}") }),
    }
}
