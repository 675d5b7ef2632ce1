//! Handler mode or thread mode, told by xPSR's IPSR field: who runs (`current`) and whose
//! registers the core holds (`walk`) both ask.

/// IPSR: the exception number in the low 9 bits of xPSR; 0 in thread mode.
pub(crate) const IPSR_MASK: u32 = 0x1ff;
