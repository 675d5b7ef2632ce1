//! Errors that stop a task read. Damage found in the kernel's lists, TCBs or stacks is not one
//! of them: it is data ([`crate::Anomaly`]). Only a layout memlife cannot resolve, and a link
//! that fails (not a wild pointer), are errors.

use memlife_core::TargetError;

/// Why the kernel could not be found in the ELF, or its tasks could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RtosError {
    /// The ELF has no FreeRTOS kernel (no `pxCurrentTCB` in DWARF or the symbol table).
    #[error(
        "no FreeRTOS kernel found in the ELF (no `pxCurrentTCB`; is tasks.c linked and built with -g?)"
    )]
    NotFound,
    /// A kernel global the reader needs is missing from DWARF.
    #[error("the FreeRTOS kernel's `{symbol}` is not in the ELF's DWARF{hint}")]
    MissingSymbol {
        /// The global.
        symbol: &'static str,
        /// What the user can do.
        hint: &'static str,
    },
    /// A kernel type lacks a member the reader needs (or DWARF does not describe the type).
    #[error("the FreeRTOS kernel's {ty} has no member `{member}` in DWARF")]
    MissingMember {
        /// The type (`TCB_t`, `List_t`...).
        ty: &'static str,
        /// The member.
        member: &'static str,
    },
    /// A kernel build memlife does not read (SMP, a type of an unexpected shape).
    #[error("{0}")]
    Unsupported(String),
    /// Reading target memory failed for another reason than an address that is not backed by
    /// memory (which is an anomaly); the target's error is the source.
    #[error("reading the FreeRTOS tasks failed")]
    Target(#[from] TargetError),
}
