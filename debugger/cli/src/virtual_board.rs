//! `--chip STM32F4... --probe qemu[:MACHINE]`: QEMU started with the ELF, reached through
//! memlife's virtual SWD probe, so that everything from probe-rs up runs as with a board.

use std::path::Path;

use anyhow::{Context, Result, bail};
use memlife_probe::{ProbeOptions, ProbeTarget};
use memlife_rsp::QemuProcess;
use memlife_vprobe::VirtualProbe;

/// What the virtual probe presents: an STM32F405's debug port (QEMU's netduinoplus2).
const CHIP_FAMILY: &str = "STM32F4";

/// Starts QEMU and attaches probe-rs to it through the virtual probe.
pub fn open(opts: &ProbeOptions, machine: &str, elf: &Path) -> Result<(ProbeTarget, QemuProcess)> {
    // The chip name is checked (with suggestions) before anything starts.
    let chip = memlife_probe::resolve_chip(&memlife_probe::registry(), &opts.chip)?;
    if !chip.name.to_ascii_uppercase().starts_with(CHIP_FAMILY) {
        bail!(
            "--probe qemu presents an STM32F405's debug port (QEMU -M netduinoplus2); --chip {} is not an {CHIP_FAMILY} chip",
            chip.name
        );
    }
    let qemu = QemuProcess::start(machine, elf, &[])
        .with_context(|| format!("cannot start qemu-system-arm -M {machine}"))?;
    let remote = qemu
        .connect()
        .with_context(|| format!("cannot connect to QEMU's gdbstub at {}", qemu.addr()))?;
    let probe = VirtualProbe::over_qemu(remote)
        .with_context(|| format!("starting the firmware in qemu-system-arm -M {machine}"))?;
    let name = format!("{} (qemu-system-arm -M {machine})", memlife_vprobe::NAME);
    let mut target = ProbeTarget::attach(probe.into_probe(), name, opts)?;
    target.set_reopen(reopen(qemu.addr().to_string()));
    Ok((target, qemu))
}

/// A new virtual probe over a new connection to the same QEMU, for a re-attach after a failed
/// reset (the old session has let its connection go: QEMU's gdbstub takes one at a time).
pub fn reopen(addr: String) -> memlife_probe::Reopen {
    Box::new(move || {
        let failed =
            |context: String| move |source| memlife_probe::ProbeError::Target { context, source };
        let remote = memlife_rsp::GdbRemote::connect(&addr).map_err(failed(format!(
            "connecting to QEMU's gdbstub at {addr} again"
        )))?;
        let probe = VirtualProbe::over_qemu(remote)
            .map_err(failed("starting the virtual probe again".into()))?;
        Ok(probe.into_probe())
    })
}
