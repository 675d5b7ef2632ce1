//! The ROM table and the CoreSight identification registers a debugger reads to find the
//! debug components (SCS, DWT, FPB, ITM) of a Cortex-M4.
//!
//! Every CoreSight component has, in the last 48 bytes of its 4 KiB block, peripheral ID
//! registers PIDR4-7 (`0xFD0`-`0xFDC`) and PIDR0-3 (`0xFE0`-`0xFEC`) and component ID
//! registers CIDR0-3 (`0xFF0`-`0xFFC`), one byte each in the low 8 bits:
//!
//! - CIDR0-3 read `0x0D`, `0x?0`, `0x05`, `0xB1`: the preamble, with the component class in
//!   the high nibble of CIDR1 (1 = ROM table, 0xE = generic IP, which the Cortex-M debug
//!   blocks are).
//! - PIDR0 and `PIDR1[3:0]` hold the 12-bit part number; `PIDR1[7:4]` and `PIDR2[2:0]` the
//!   7-bit JEP106 identity of the designer, `PIDR2[3]` says a JEP106 code is used, `PIDR4[3:0]`
//!   is the JEP106 continuation count. Arm is continuation 4, identity 0x3B.
//!
//! A ROM table (class 1) lists its components as 32-bit entries from offset 0: bits 31:12 a
//! signed offset from the table's base, bit 0 "present", bit 1 "32-bit format"; a zero word
//! ends it. Its `MEMTYPE` (`0xFCC`) bit 0 says the bus also has system memory.

/// A JEP106 designer: (continuation count, 7-bit identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jep106 {
    /// Number of 0x7F continuation bytes.
    pub cc: u8,
    /// Identity code without parity.
    pub id: u8,
}

/// Arm Ltd.
pub const ARM: Jep106 = Jep106 { cc: 4, id: 0x3B };
/// STMicroelectronics.
pub const ST: Jep106 = Jep106 { cc: 0, id: 0x20 };

/// CoreSight component class (`CIDR1[7:4]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A class 1 ROM table.
    RomTable = 0x1,
    /// A generic IP block (the Cortex-M SCS, DWT, FPB and ITM).
    GenericIp = 0xE,
}

/// Identity of one component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ident {
    /// Component class.
    pub class: Class,
    /// Designer.
    pub designer: Jep106,
    /// 12-bit part number.
    pub part: u16,
    /// 4-bit revision.
    pub revision: u8,
}

impl Ident {
    /// The ID register at `offset` (`0xFD0`-`0xFFC`) in the component's block, if it is one.
    pub fn register(&self, offset: u32) -> Option<u32> {
        let d = self.designer;
        let v = match offset {
            0xFD0 => u32::from(d.cc & 0xF), // PIDR4: 4 KiB block, continuation count
            0xFD4..=0xFDC => 0,             // PIDR5-7: reserved
            0xFE0 => u32::from(self.part & 0xFF),
            0xFE4 => u32::from((self.part >> 8) & 0xF) | (u32::from(d.id & 0xF) << 4),
            0xFE8 => u32::from((d.id >> 4) & 0x7) | 0x8 | (u32::from(self.revision & 0xF) << 4),
            0xFEC => 0, // PIDR3: no customer modification
            0xFF0 => 0x0D,
            0xFF4 => (self.class as u32) << 4,
            0xFF8 => 0x05,
            0xFFC => 0xB1,
            _ => return None,
        };
        Some(v)
    }
}

/// A component in the system: where its block is and who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// Human name for messages ("DWT").
    pub name: &'static str,
    /// Base of its 4 KiB block.
    pub base: u32,
    /// Its identity.
    pub ident: Ident,
}

const fn arm_ip(name: &'static str, base: u32, part: u16) -> Component {
    Component {
        name,
        base,
        ident: Ident {
            class: Class::GenericIp,
            designer: ARM,
            part,
            revision: 0,
        },
    }
}

/// The Cortex-M4 debug components the ROM table lists (Cortex-M4 part numbers).
pub const ITM: Component = arm_ip("ITM", 0xE000_0000, 0x001);
/// Data Watchpoint and Trace unit.
pub const DWT: Component = arm_ip("DWT", 0xE000_1000, 0x002);
/// Flash Patch and Breakpoint unit.
pub const FPB: Component = arm_ip("FPB", 0xE000_2000, 0x003);
/// System Control Space (the debug registers live here).
pub const SCS: Component = arm_ip("SCS", 0xE000_E000, 0x00C);

/// A class 1 ROM table at `base` listing `entries`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RomTable {
    /// Base of the table's 4 KiB block.
    pub base: u32,
    /// Its identity (the chip's: designer and part number say which device this is).
    pub ident: Ident,
    /// The components it lists, in order.
    pub entries: Vec<Component>,
}

impl RomTable {
    /// The STM32F4's table at `0xE00FF000` (designer ST, part 0x413 as its DBGMCU reports).
    pub fn stm32f4() -> RomTable {
        RomTable {
            base: 0xE00F_F000,
            ident: Ident {
                class: Class::RomTable,
                designer: ST,
                part: 0x413,
                revision: 0,
            },
            entries: vec![SCS, DWT, FPB, ITM],
        }
    }

    /// The word at `addr` inside the table's block, if the table defines it.
    pub fn read(&self, addr: u32) -> Option<u32> {
        let offset = addr.checked_sub(self.base)?;
        if offset >= 0x1000 {
            return None;
        }
        if let Some(v) = self.ident.register(offset) {
            return Some(v);
        }
        if offset == 0xFCC {
            return Some(1); // MEMTYPE.SYSMEM
        }
        let index = (offset / 4) as usize;
        if offset % 4 == 0 && index <= self.entries.len() {
            return Some(match self.entries.get(index) {
                // Offsets are signed 20-bit multiples of 4 KiB; wrapping arithmetic is the encoding.
                Some(c) => (c.base.wrapping_sub(self.base) & 0xFFFF_F000) | 0b11,
                None => 0, // end marker
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_bytes(read: impl Fn(u32) -> Option<u32>, base: u32) -> (u64, u32) {
        // PIDR as one 40-bit value (PIDR4 << 32 | PIDR3..0), CIDR as one 32-bit value.
        let b = |o: u32| read(base + o).expect("id register");
        let pidr = u64::from(b(0xFE0))
            | u64::from(b(0xFE4)) << 8
            | u64::from(b(0xFE8)) << 16
            | u64::from(b(0xFEC)) << 24
            | u64::from(b(0xFD0)) << 32;
        let cidr = b(0xFF0) | b(0xFF4) << 8 | b(0xFF8) << 16 | b(0xFFC) << 24;
        (pidr, cidr)
    }

    #[test]
    fn arm_components_decode_to_arm_and_their_part() {
        for c in [SCS, DWT, FPB, ITM] {
            let (pidr, cidr) = id_bytes(|a| c.ident.register(a - c.base), c.base);
            assert_eq!(cidr, 0xB105_E00D, "{} CIDR", c.name);
            assert_eq!(pidr & 0xFFF, u64::from(c.ident.part), "{} part", c.name);
            let designer = ((pidr >> 12) & 0x7F) as u8;
            assert_eq!(designer, 0x3B, "{} designer", c.name);
            assert_eq!((pidr >> 19) & 1, 1, "{} JEDEC bit", c.name);
            assert_eq!((pidr >> 32) & 0xF, 4, "{} continuation", c.name);
        }
    }

    #[test]
    fn rom_table_lists_the_components_and_ends() {
        let t = RomTable::stm32f4();
        let (pidr, cidr) = id_bytes(|a| t.read(a), t.base);
        assert_eq!(cidr, 0xB105_100D);
        assert_eq!(pidr & 0xFFF, 0x413);
        assert_eq!((pidr >> 12) & 0x7F, 0x20);
        let mut found = Vec::new();
        for i in 0.. {
            let e = t.read(t.base + 4 * i).expect("entry");
            if e == 0 {
                break;
            }
            assert_eq!(e & 0b11, 0b11, "present, 32-bit format");
            found.push(t.base.wrapping_add(e & 0xFFFF_F000));
        }
        assert_eq!(
            found,
            vec![0xE000_E000, 0xE000_1000, 0xE000_2000, 0xE000_0000]
        );
        assert_eq!(t.read(t.base + 0xFCC), Some(1));
        // Between the end marker and the ID block nothing is defined.
        assert_eq!(t.read(t.base + 0x800), None);
        assert_eq!(t.read(t.base + 0x1000), None);
    }
}
