//! The Data Watchpoint and Trace unit (ARMv7-M programming model), four comparators as on a
//! Cortex-M4; only data address matching, which is what a debugger's watchpoints use.
//!
//! - `DWT_CTRL` (`0xE0001000`): `NUMCOMP` in bits 31:28; the counters and trace bits are not
//!   modelled (reading gives `NUMCOMP` alone, writing is an error).
//! - Comparator n at `0xE0001020 + 16n`: `COMPn` (+0, the address), `MASKn` (+4, how many low
//!   address bits are ignored: the watched range is 2^MASK bytes, at most 2^15 here) and
//!   `FUNCTIONn` (+8: bits 3:0 are 0 disabled, 5 read, 6 write, 7 read or write; bit 24
//!   `MATCHED` says this comparator fired and is cleared by reading the register).
//!
//! Whether comparators act at all depends on `DEMCR.TRCENA`, which the caller passes in.

use memlife_core::WatchKind;

/// `DWT_CTRL`.
pub const DWT_CTRL: u32 = 0xE000_1000;
/// `COMP0`.
pub const DWT_COMP0: u32 = 0xE000_1020;
/// Comparators on a Cortex-M4.
pub const NUM_COMP: usize = 4;
/// The largest `MASK` the model keeps.
pub const MAX_MASK: u32 = 15;
/// `FUNCTION.MATCHED`.
pub const MATCHED: u32 = 1 << 24;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Comparator {
    comp: u32,
    mask: u32,
    function: u32,
    matched: bool,
}

/// One data watchpoint as a GDB server takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watch {
    /// First watched byte.
    pub addr: u64,
    /// Bytes watched.
    pub len: u64,
    /// Which accesses.
    pub kind: WatchKind,
}

/// An access the DWT model refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DwtError {
    /// The address is none of the modelled registers (a counter, a trace register).
    #[error("{addr:#010x} is not a DWT register the virtual probe models")]
    NotARegister {
        /// The address accessed.
        addr: u32,
    },
    /// `DWT_CTRL` written: the counters and trace are not modelled.
    #[error(
        "DWT_CTRL ({:#010x}) write {value:#010x}: the DWT counters and trace are not modelled",
        DWT_CTRL
    )]
    CtrlWrite {
        /// The value written.
        value: u32,
    },
    /// A `FUNCTION` other than off or a data address watchpoint.
    #[error(
        "DWT_FUNCTION{index} ({addr:#010x}) = {value:#010x}: only data address watchpoints (FUNCTION 5, 6, 7) are modelled"
    )]
    Function {
        /// Comparator number.
        index: usize,
        /// The register's address.
        addr: u32,
        /// The value written.
        value: u32,
    },
}

/// The unit's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dwt {
    comps: [Comparator; NUM_COMP],
}

/// Which register of which comparator an address is.
enum Reg {
    Ctrl,
    Comp(usize),
    Mask(usize),
    Function(usize),
}

fn decode(addr: u32) -> Option<Reg> {
    if addr == DWT_CTRL {
        return Some(Reg::Ctrl);
    }
    let off = addr.checked_sub(DWT_COMP0)?;
    let n = (off / 16) as usize;
    if n >= NUM_COMP {
        return None;
    }
    match off % 16 {
        0 => Some(Reg::Comp(n)),
        4 => Some(Reg::Mask(n)),
        8 => Some(Reg::Function(n)),
        _ => None,
    }
}

fn kind_of(function: u32) -> Option<WatchKind> {
    match function & 0xF {
        5 => Some(WatchKind::Read),
        6 => Some(WatchKind::Write),
        7 => Some(WatchKind::Access),
        _ => None,
    }
}

impl Dwt {
    /// Whether `addr` is a register this model has.
    pub fn contains(addr: u32) -> bool {
        decode(addr).is_some()
    }

    /// Reads one register (reading a `FUNCTION` clears its `MATCHED`).
    pub fn read(&mut self, addr: u32) -> Result<u32, DwtError> {
        match decode(addr) {
            Some(Reg::Ctrl) => Ok((NUM_COMP as u32) << 28),
            Some(Reg::Comp(n)) => Ok(self.comps[n].comp),
            Some(Reg::Mask(n)) => Ok(self.comps[n].mask),
            Some(Reg::Function(n)) => {
                let c = &mut self.comps[n];
                let v = c.function | if c.matched { MATCHED } else { 0 };
                c.matched = false;
                Ok(v)
            }
            None => Err(DwtError::NotARegister { addr }),
        }
    }

    /// Writes one register.
    pub fn write(&mut self, addr: u32, value: u32) -> Result<(), DwtError> {
        match decode(addr) {
            Some(Reg::Ctrl) => Err(DwtError::CtrlWrite { value }),
            Some(Reg::Comp(n)) => {
                self.comps[n].comp = value;
                Ok(())
            }
            Some(Reg::Mask(n)) => {
                self.comps[n].mask = (value & 0x1F).min(MAX_MASK);
                Ok(())
            }
            Some(Reg::Function(n)) => {
                let f = value & 0xF;
                if value & !0xF != 0 || !(f == 0 || kind_of(f).is_some()) {
                    return Err(DwtError::Function {
                        index: n,
                        addr,
                        value,
                    });
                }
                self.comps[n].function = f;
                Ok(())
            }
            None => Err(DwtError::NotARegister { addr }),
        }
    }

    /// The watchpoints the comparators stand for, given `DEMCR.TRCENA`.
    pub fn watches(&self, trcena: bool) -> Vec<Watch> {
        if !trcena {
            return Vec::new();
        }
        self.comps
            .iter()
            .filter_map(|c| {
                let kind = kind_of(c.function)?;
                let len = 1u64 << c.mask;
                Some(Watch {
                    addr: u64::from(c.comp) & !(len - 1),
                    len,
                    kind,
                })
            })
            .collect()
    }

    /// A watchpoint stop on `addr`: sets `MATCHED` on every comparator that covers it for that
    /// kind of access. Returns whether one did.
    pub fn hit(&mut self, addr: u64, kind: WatchKind) -> bool {
        let mut any = false;
        for c in &mut self.comps {
            let Some(k) = kind_of(c.function) else {
                continue;
            };
            let len = 1u64 << c.mask;
            let base = u64::from(c.comp) & !(len - 1);
            let kind_ok = k == WatchKind::Access || kind == WatchKind::Access || k == kind;
            if kind_ok && (base..base + len).contains(&addr) {
                c.matched = true;
                any = true;
            }
        }
        any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(n: u32) -> u32 {
        DWT_COMP0 + 16 * n + 8
    }

    #[test]
    fn ctrl_says_four_comparators() {
        let mut d = Dwt::default();
        assert_eq!(d.read(DWT_CTRL).unwrap() >> 28, 4);
        let e = d.write(DWT_CTRL, 1).unwrap_err();
        assert_eq!(e, DwtError::CtrlWrite { value: 1 });
        assert!(e.to_string().contains("DWT_CTRL (0xe0001000)"), "{e}");
    }

    #[test]
    fn comparators_become_watches_under_trcena() {
        let mut d = Dwt::default();
        d.write(DWT_COMP0, 0x2000_0010).unwrap();
        d.write(DWT_COMP0 + 4, 2).unwrap();
        d.write(function(0), 6).unwrap();
        d.write(DWT_COMP0 + 16, 0x2000_0101).unwrap();
        d.write(function(1), 5).unwrap();
        assert!(d.watches(false).is_empty());
        assert_eq!(
            d.watches(true),
            vec![
                Watch {
                    addr: 0x2000_0010,
                    len: 4,
                    kind: WatchKind::Write
                },
                Watch {
                    addr: 0x2000_0101,
                    len: 1,
                    kind: WatchKind::Read
                }
            ]
        );
    }

    #[test]
    fn mask_is_limited_and_read_back() {
        let mut d = Dwt::default();
        d.write(DWT_COMP0 + 4, 31).unwrap();
        assert_eq!(d.read(DWT_COMP0 + 4).unwrap(), MAX_MASK);
    }

    #[test]
    fn matched_names_the_comparator_and_clears_on_read() {
        let mut d = Dwt::default();
        d.write(DWT_COMP0, 0x2000_0010).unwrap();
        d.write(DWT_COMP0 + 4, 2).unwrap();
        d.write(function(0), 6).unwrap();
        d.write(DWT_COMP0 + 16, 0x2000_0020).unwrap();
        d.write(function(1), 7).unwrap();
        assert!(
            !d.hit(0x2000_0012, WatchKind::Read),
            "a read does not match a write watch"
        );
        assert!(d.hit(0x2000_0012, WatchKind::Write));
        assert_eq!(d.read(function(0)).unwrap(), 6 | MATCHED);
        assert_eq!(d.read(function(0)).unwrap(), 6, "cleared by the read");
        assert_eq!(d.read(function(1)).unwrap(), 7);
    }

    #[test]
    fn other_functions_are_refused_by_name() {
        let mut d = Dwt::default();
        let e = d.write(function(2), 4).unwrap_err();
        assert_eq!(
            e,
            DwtError::Function {
                index: 2,
                addr: function(2),
                value: 4
            }
        );
        assert!(e.to_string().contains("DWT_FUNCTION2"), "{e}");
        let e = d.write(function(0), 6 | 1 << 8).unwrap_err();
        assert!(e.to_string().contains("DWT_FUNCTION0"), "{e}");
        let e = d.read(DWT_COMP0 + 16 * 4).unwrap_err();
        assert_eq!(e, DwtError::NotARegister { addr: 0xE000_1060 });
        assert!(e.to_string().contains("0xe0001060"), "{e}");
        assert!(d.read(DWT_COMP0 + 12).is_err());
        assert!(d.write(DWT_COMP0 + 12, 0).is_err());
    }
}
