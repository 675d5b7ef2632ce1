//! Real boards through a debug probe: the one place the CLI meets probe-rs, so that a build
//! without the `probe` cargo feature (no probe-rs at all) differs only here. There the flags
//! still parse as far as `--chip NAME`, and using them says how to get a build that has them.

use std::path::Path;

use anyhow::Result;
use memlife_core::Target;
use memlife_rsp::QemuProcess;

use crate::cli::ProbeArgs;

#[cfg(feature = "probe")]
mod imp {
    use std::path::Path;

    use anyhow::{Result, bail};
    use memlife_core::Target;
    use memlife_probe::{ProbeOptions, ProbeTarget};
    use memlife_rsp::QemuProcess;

    use crate::cli::ProbeArgs;
    use crate::probe_choice::ProbeChoice;

    pub use memlife_probe::ProbeSelector;

    pub fn open(
        chip: &str,
        args: &ProbeArgs,
        elf: &Path,
    ) -> Result<(Box<dyn Target>, Option<QemuProcess>)> {
        let mut opts = ProbeOptions {
            chip: chip.to_string(),
            probe: None,
            speed_khz: args.speed,
            connect_under_reset: args.connect_under_reset,
        };
        match &args.probe {
            Some(ProbeChoice::Qemu { machine }) => {
                let (target, qemu) = crate::virtual_board::open(&opts, machine, elf)?;
                Ok((Box::new(target), Some(qemu)))
            }
            Some(ProbeChoice::Usb(sel)) => {
                opts.probe = Some(sel.clone());
                Ok((Box::new(ProbeTarget::open(&opts)?), None))
            }
            None => Ok((Box::new(ProbeTarget::open(&opts)?), None)),
        }
    }

    pub fn require_cortex_m(chip: &str) -> Result<()> {
        let info = memlife_probe::resolve_chip(&memlife_probe::registry(), chip)?;
        if !info.core_type().is_some_and(|t| t.is_cortex_m()) {
            bail!(
                "memlife serve speaks Cortex-M to gdb, and {} is not a Cortex-M chip; use memlife heap, snapshot or audit with it",
                info.name
            );
        }
        Ok(())
    }
}

#[cfg(not(feature = "probe"))]
mod imp {
    use std::path::Path;

    use anyhow::{Result, bail};
    use memlife_core::Target;
    use memlife_rsp::QemuProcess;

    use crate::cli::ProbeArgs;

    /// What using a board says in a build without probe-rs.
    pub const NOT_BUILT: &str = "this memlife is built without the `probe` feature (probe-rs): \
        boards through a debug probe need the default build (`cargo build` without \
        --no-default-features)";

    /// A `--probe` value; none can be given without probe support.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum ProbeSelector {}

    impl ProbeSelector {
        /// Refuses: there are no probes in this build.
        pub fn parse(_: &str) -> Result<Self, String> {
            Err(NOT_BUILT.to_string())
        }
    }

    impl std::fmt::Display for ProbeSelector {
        fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match *self {}
        }
    }

    pub fn open(
        _chip: &str,
        _args: &ProbeArgs,
        _elf: &Path,
    ) -> Result<(Box<dyn Target>, Option<QemuProcess>)> {
        bail!(NOT_BUILT)
    }

    pub fn require_cortex_m(_chip: &str) -> Result<()> {
        bail!(NOT_BUILT)
    }
}

#[cfg(not(feature = "probe"))]
pub use imp::NOT_BUILT;
pub use imp::ProbeSelector;

/// Opens `chip` through the probe the options choose; with `--probe qemu` also the QEMU that
/// runs `elf` behind the virtual probe, to be killed after the target is closed.
pub fn open(
    chip: &str,
    args: &ProbeArgs,
    elf: &Path,
) -> Result<(Box<dyn Target>, Option<QemuProcess>)> {
    imp::open(chip, args, elf)
}

/// `memlife serve` describes Cortex-M registers to gdb: other chips are refused up front.
pub fn require_cortex_m(chip: &str) -> Result<()> {
    imp::require_cortex_m(chip)
}
