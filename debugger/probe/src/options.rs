//! [`ProbeOptions`]: what the flags say about the board to attach to, apart from the crate
//! root because the target opens with them.

use crate::ProbeSelector;

/// How to reach a board: the `--chip`, `--probe`, `--speed`, `--connect-under-reset` flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    /// probe-rs chip name (`STM32F405RGTx`, `esp32s3`).
    pub chip: String,
    /// Which probe, when several are attached.
    pub probe: Option<ProbeSelector>,
    /// SWD/JTAG clock in kHz; the probe's default when `None`.
    pub speed_khz: Option<u32>,
    /// Hold the reset line while attaching.
    pub connect_under_reset: bool,
}

impl ProbeOptions {
    /// Options for a chip, everything else default.
    pub fn new(chip: impl Into<String>) -> Self {
        ProbeOptions {
            chip: chip.into(),
            ..ProbeOptions::default()
        }
    }
}
