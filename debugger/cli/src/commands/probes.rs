//! `memlife probes`: the debug probes probe-rs sees, with the `--probe` value of each.

use std::process::ExitCode;

use anyhow::Result;

#[cfg(not(feature = "probe"))]
pub fn run() -> Result<ExitCode> {
    anyhow::bail!(crate::boards::NOT_BUILT)
}

#[cfg(feature = "probe")]
pub fn run() -> Result<ExitCode> {
    use std::io::Write;

    let probes = memlife_probe::list_probes();
    let mut out = std::io::stdout().lock();
    if probes.is_empty() {
        writeln!(
            out,
            "no debug probes found (on Linux, a probe that is plugged in but not listed usually \
             lacks udev rules; see README \"Real boards\"){}",
            memlife_probe::usb_hint()
        )?;
    } else {
        for p in &probes {
            writeln!(out, "{}  --probe {}", p.name, p.selector)?;
        }
    }
    // Always there: no USB, QEMU behind it (`--probe qemu:MACHINE` for another machine).
    writeln!(
        out,
        "{} (an STM32F405 in qemu-system-arm -M {}; with --chip STM32F405RGTx)  --probe qemu",
        memlife_vprobe::NAME,
        crate::probe_choice::DEFAULT_MACHINE
    )?;
    if !memlife_probe::ESP32 {
        writeln!(
            out,
            "(this memlife is built without --features esp32: ESP USB-JTAG probes and ESP32 chips are not supported)"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
