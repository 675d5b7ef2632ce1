//! probe-rs's unchanged ARM stack on the virtual probe, against real QEMU.

use std::time::Duration;

use memlife_rsp::QemuProcess;
use memlife_testkit::firmware;
use memlife_vprobe::VirtualProbe;
use probe_rs::{MemoryInterface, Permissions, RegisterValue};

fn attach(qemu: &QemuProcess) -> probe_rs::Session {
    let probe = VirtualProbe::over_qemu(qemu.connect().expect("gdbstub"))
        .expect("virtual probe")
        .into_probe();
    probe
        .attach("STM32F405RGTx", Permissions::new())
        .expect("probe-rs attaches")
}

#[test]
fn probe_rs_attaches_halts_reads_and_runs() {
    let elf = firmware::elf("heap4", "healthy");
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).expect("qemu");
    let mut session = attach(&qemu);
    let mut core = session.core(0).expect("core 0");
    assert!(core.core_halted().expect("status"), "QEMU starts halted");
    core.run().expect("run");
    assert!(!core.core_halted().expect("status"));
    core.halt(Duration::from_millis(500)).expect("halt");
    assert!(core.core_halted().expect("status"));
    let pc: u32 = core
        .read_core_reg::<RegisterValue>(core.program_counter().id())
        .expect("pc")
        .try_into()
        .expect("32 bits");
    assert!(
        (0x0800_0000..0x0810_0000).contains(&pc),
        "pc {pc:#x} in flash"
    );
    let mut vectors = [0u32; 2];
    core.read_32(0x0800_0000, &mut vectors)
        .expect("vector table");
    assert!(
        (0x2000_0000..=0x2003_0000).contains(&vectors[0]),
        "initial sp {:#x}",
        vectors[0]
    );
    assert_eq!(vectors[1] & 1, 1, "thumb reset vector");
    core.run().expect("run");
    assert!(!core.core_halted().expect("status"));
}

/// The address of a function in the ELF.
fn symbol(elf: &std::path::Path, name: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(elf).expect("elf");
    let file = object::File::parse(&*data).expect("parse elf");
    let sym = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .expect("the symbol is in the ELF");
    sym.address() & !1
}

#[test]
fn fpb_breakpoints_fire_step_and_run_out_at_six() {
    let elf = firmware::elf("heap4", "healthy");
    let release = symbol(&elf, "model_release");
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).expect("qemu");
    let mut session = attach(&qemu);
    let mut core = session.core(0).expect("core 0");
    core.halt(Duration::from_millis(500)).expect("halt");
    assert_eq!(core.available_breakpoint_units().expect("units"), 6);
    core.set_hw_breakpoint(release).expect("breakpoint");
    core.run().expect("run");
    core.wait_for_core_halted(Duration::from_secs(10))
        .expect("stops at model_release");
    let status = core.status().expect("status");
    assert!(
        matches!(
            status,
            probe_rs::CoreStatus::Halted(probe_rs::HaltReason::Breakpoint(_))
        ),
        "{status:?}"
    );
    let pc = |core: &mut probe_rs::Core| -> u64 {
        let v: u32 = core
            .read_core_reg::<RegisterValue>(core.program_counter().id())
            .expect("pc")
            .try_into()
            .expect("32 bits");
        u64::from(v)
    };
    assert_eq!(pc(&mut core), release);
    let info = core.step().expect("step");
    assert_ne!(info.pc, release, "the step left the breakpoint");
    // Running on stops at the next call.
    core.run().expect("run");
    core.wait_for_core_halted(Duration::from_secs(10))
        .expect("stops at model_release again");
    assert_eq!(pc(&mut core), release);
    // Five more fill the unit; a seventh is refused. None may fall on model_release: probe-rs
    // gives an address that already has a comparator the same one.
    let mut others = (1..)
        .map(|i: u64| 0x0800_0000 + 0x100 * i)
        .filter(|a| *a != release);
    for a in others.by_ref().take(5) {
        core.set_hw_breakpoint(a).expect("breakpoint");
    }
    let seventh = others.next().expect("an address");
    let e = core.set_hw_breakpoint(seventh).expect_err("a seventh");
    assert!(e.to_string().to_lowercase().contains("breakpoint"), "{e}");
    core.clear_all_hw_breakpoints().expect("clear");
    // Reset and halt: caught at the reset vector.
    let mut vector = [0u32; 1];
    core.read_32(0x0800_0004, &mut vector)
        .expect("reset vector");
    let info = core
        .reset_and_halt(Duration::from_millis(500))
        .expect("reset and halt");
    assert_eq!(info.pc, u64::from(vector[0] & !1));
}
