//! `memlife heap`: halt, walk, print, let go.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use memlife_heap::render;

use crate::cli::HeapArgs;
use crate::session::Session;

pub fn run(args: HeapArgs) -> Result<ExitCode> {
    let symbols = super::load_symbols(&args.elf)?;
    let mut walks = super::environment::link(args.heap.walk, &super::environment::read()?);
    let mut session = Session::open(&args.target, &args.elf, args.stop.leave)?;
    let target = session.target()?;
    crate::runto::stop_where_asked(target, &symbols, &args.stop)?;
    let walker = super::walker(
        &symbols,
        args.heap.allocator,
        &args.heap.walker_options(),
        Some(&mut *target),
    )?;
    let (mut state, link) = super::walk(target, &symbols, walker.as_ref(), &mut walks)?;
    if let Some(memlife_heap::FirmwareView::EspIdf(view)) = &mut state.firmware_view {
        for &caps in &args.caps {
            if !view.heap_caps.iter().any(|c| c.caps == caps) {
                view.heap_caps.push(view.figures(caps));
            }
        }
    } else if !args.caps.is_empty() {
        anyhow::bail!(
            "--caps: heap capabilities are ESP-IDF's; this firmware's heap is {}",
            state.allocator
        );
    }
    let arenas = tflm_arenas(target, &symbols, &state)?;
    let tasks = by_task(target, &symbols, &state);
    let ctx = render::Context {
        at: args.stop.at.as_deref().map(|f| (f, args.stop.hit)),
        ..render::Context::of(target, &symbols, link)
    };
    let out = if args.json {
        let mut v = render::json(&state, Some(&ctx));
        if let Some(tasks) = &tasks {
            tasks.insert_json(&mut v, "task blocks");
        }
        if let Some(arenas) = &arenas {
            memlife_tflm::render::insert_json(&mut v, arenas);
        }
        let mut s = serde_json::to_string_pretty(&v)?;
        s.push('\n');
        s
    } else {
        let mut s = render::text(&state, &ctx);
        if let Some(tasks) = &tasks {
            s.push_str(&tasks_text(tasks));
        }
        if let Some(arenas) = &arenas {
            s.push('\n');
            s.push_str(&memlife_tflm::render::text(arenas));
        }
        s
    };
    if let Some(path) = &args.svg {
        let at = match &ctx.at {
            Some((f, hit)) => format!("{f} (hit {hit})"),
            None => "where the target stopped".to_string(),
        };
        let map = memlife_render::heapmap::from_state(&at, &state);
        memlife_render::write_atomic(path, memlife_render::heap_map_svg(&map).as_bytes())?;
    }
    session.close()?;
    // Descriptions and names come from the snapshot or the target: no terminal controls.
    std::io::stdout().write_all(memlife_core::text::printable(&out).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// On a FreeRTOS firmware, the blocks in use by task: each task's TCB and stack (without a
/// trace, the blocks the kernel's lists say are a task's), the rest untraced. `None` without a
/// kernel; a kernel that cannot be read is a warning, not an error (the heap is still shown).
fn by_task(
    target: &mut dyn memlife_core::Target,
    symbols: &memlife_dwarf::Symbols,
    state: &memlife_heap::HeapState,
) -> Option<memlife_audit::observers::tasks::ByTask> {
    if !memlife_rtos::FreeRtos::present(symbols) {
        return None;
    }
    let read = memlife_rtos::FreeRtos::from_symbols(symbols).and_then(|k| {
        let mut snap = k.read_tasks(target.as_memory(), None)?;
        snap.attribute_heap(state);
        Ok(snap.task_blocks())
    });
    match read {
        Ok(blocks) => Some(memlife_audit::observers::tasks::by_task(
            state, None, &blocks,
        )),
        Err(e) => {
            tracing::warn!("the heap is not told apart by task: {e}");
            None
        }
    }
}

/// `by task (TCB and stack blocks): ...`, one line per task.
fn tasks_text(t: &memlife_audit::observers::tasks::ByTask) -> String {
    let mut s = String::from(
        "
blocks in use by task (each task's TCB and stack):
",
    );
    for (task, held) in &t.tasks {
        s.push_str(&format!(
            "  {task:<16} {:>4} blocks {:>8} B\n",
            held.blocks, held.bytes
        ));
    }
    s
}

/// TensorFlow Lite Micro's live arenas, when the ELF has TFLM.
fn tflm_arenas(
    target: &mut dyn memlife_core::Target,
    symbols: &memlife_dwarf::Symbols,
    state: &memlife_heap::HeapState,
) -> Result<Option<Vec<memlife_tflm::Arena>>> {
    memlife_audit::observers::arena::in_heap(target.as_memory(), symbols, state)
        .context("reading TensorFlow Lite Micro's arenas")
}
