//! The real kernel (FreeRTOS V11.2.0 in the repository's RTOS firmware) on QEMU, driven through
//! `memlife-rsp`, on both boards: the layout resolved from its DWARF, and the running task read
//! cheaply ([`FreeRtos::running`], what an allocation tracer tags each event with) against the
//! full read of every task, at the allocator's entries and in the tick interrupt.
//!
//! Needs `qemu-system-arm`; the firmware is built on first use.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::Duration;

use memlife_core::cortex_m::CoreRegisters;
use memlife_core::{BreakpointKind, Breakpoints, Control, StopReason};
use memlife_dwarf::Symbols;
use memlife_rsp::QemuProcess;
use memlife_rtos::frame::ContextLayout;
use memlife_rtos::{FreeRtos, Running};

const WAIT: Duration = Duration::from_secs(20);

fn board(board: &str) {
    let elf = memlife_testkit::firmware::elf("rtos", &format!("{board}-healthy"));
    let symbols = Symbols::load(&elf).unwrap();
    let kernel = FreeRtos::from_symbols(&symbols).unwrap();
    // firmware/rtos/FreeRTOSConfig.h: six priorities, pxEndOfStack, the trace facility,
    // mutexes, static and dynamic tasks.
    let l = kernel.layout();
    assert_eq!(l.priorities, 6);
    let t = &l.tcb;
    assert!(t.end_of_stack.is_some() && t.number.is_some() && t.base_priority.is_some());
    assert!(t.allocation.is_some() && t.notify_state.is_some() && !t.mpu_settings);
    assert_eq!((t.top_of_stack.offset, t.stack_word), (0, 4));
    assert!(l.termination.is_some() && l.suspended.is_some());
    let fpu = board == "netduinoplus2";
    assert_eq!(
        kernel.port().layout,
        Some(if fpu {
            ContextLayout::Fpu
        } else {
            ContextLayout::NoFpu
        }),
        "{:?}",
        kernel.port()
    );

    let qemu = QemuProcess::start(board, &elf, &["-icount", "shift=auto"]).unwrap();
    let mut target = qemu.connect().unwrap();
    let stops: Vec<u64> = ["pvPortMalloc", "vPortFree", "xPortSysTickHandler"]
        .iter()
        .map(|f| symbols.function(f).unwrap().entry)
        .collect();
    for &a in &stops {
        target.add_breakpoint(a, BreakpointKind::Software).unwrap();
    }
    let mut labels = BTreeSet::new();
    let mut tasks = BTreeSet::new();
    for _ in 0..600 {
        target.resume().unwrap();
        match target.wait_for_stop(WAIT).unwrap() {
            Some(StopReason::Breakpoint(a)) if stops.contains(&a) => {}
            other => panic!("{board}: unexpected stop {other:?}"),
        }
        let regs = CoreRegisters::read(&mut target).unwrap();
        let cheap = kernel.running(&mut target, regs.xpsr).unwrap();
        let full = kernel.read_tasks(&mut target, Some(&regs)).unwrap();
        assert_eq!(cheap, full.running(), "{board}: pc {:#x}", regs.pc());
        if let Running::Task { name, .. } = &cheap {
            tasks.insert(name.clone());
        }
        labels.insert(cheap.label());
        if labels.contains("main") && labels.contains("ISR 15") && tasks.len() >= 4 {
            break;
        }
    }
    assert!(labels.contains("main"), "{board}: {labels:?}");
    assert!(labels.contains("ISR 15"), "{board}: {labels:?}");
    assert!(tasks.len() >= 4, "{board}: {tasks:?}");
    assert!(!labels.contains("?"), "{board}: {labels:?}");
}

#[test]
fn who_runs_agrees_with_the_full_read_on_mps2_an385() {
    board("mps2-an385");
}

#[test]
fn who_runs_agrees_with_the_full_read_on_netduinoplus2() {
    board("netduinoplus2");
}
