//! Just enough Thumb-2 to resume from a breakpoint without a single step.
//!
//! Resuming from a breakpoint normally means "step one instruction, then continue": two trips
//! over the link, and on QEMU a flush of its whole translation cache each time single-stepping
//! is switched on or off. The instructions memlife stops on are few and simple (a function's
//! `push`, an allocator's `pop {..., pc}`, a `cbz` at the top of `free`), so memlife executes
//! that one instruction itself, on the registers it has just read, and sends the new registers
//! with the continue in one segment. Anything outside this subset, or inside an IT block,
//! returns `None` and the caller steps as usual.
//!
//! Also here: finding a function's return instructions, where the tracer puts its one
//! breakpoint per allocation (`r0` holds the new block there).

use super::{CoreRegisters, LR, PC, SP};

/// What executing one instruction did besides changing registers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Effect {
    /// Memory written: `(address, bytes)`.
    pub writes: Vec<(u32, Vec<u8>)>,
}

fn half(code: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*code.get(at)?, *code.get(at + 1)?]))
}

/// Whether a first halfword starts a 32-bit instruction.
pub fn is_32bit(hw1: u16) -> bool {
    matches!(hw1 & 0xF800, 0xE800 | 0xF000 | 0xF800)
}

/// The register list of a `pop` that loads the pc, if `code` starts with one.
fn pop_list(hw1: u16, hw2: Option<u16>) -> Option<(u16, usize)> {
    if hw1 & 0xFE00 == 0xBC00 {
        return Some(((hw1 & 0xFF) | ((hw1 >> 8) & 1) << 15, 2));
    }
    if hw1 == 0xE8BD {
        let list = hw2?;
        // sp may not be in the list; a list with pc and lr both is unpredictable.
        if list & (1 << 13) != 0 || (list & 0xC000) == 0xC000 {
            return None;
        }
        return Some((list, 4));
    }
    if hw1 == 0xF85D && hw2? & 0x0FFF == 0x0B04 {
        return Some((1 << (hw2? >> 12), 4));
    }
    None
}

/// Addresses of the instructions that return from the function whose code is `code` at
/// `base`: `pop {..., pc}`, `ldmia sp!, {..., pc}`, `ldr pc, [sp], #4` and `bx lr`. Decoded
/// linearly from the start; literal pools after the code can yield false entries, which are
/// harmless as breakpoints (never executed).
pub fn return_instructions(code: &[u8], base: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(hw1) = half(code, at) {
        let wide = is_32bit(hw1);
        let hw2 = if wide { half(code, at + 2) } else { None };
        let returns =
            hw1 == 0x4770 || pop_list(hw1, hw2).is_some_and(|(list, _)| list & (1 << PC) != 0);
        if returns {
            out.push(base + at as u64);
        }
        at += if wide { 4 } else { 2 };
    }
    out
}

fn in_it_block(xpsr: u32) -> bool {
    ((xpsr >> 25) & 3) != 0 || ((xpsr >> 10) & 0x3F) != 0
}

fn set_nz(xpsr: u32, result: u32) -> u32 {
    let mut x = xpsr & !(0xC000_0000);
    if result & 0x8000_0000 != 0 {
        x |= 1 << 31;
    }
    if result == 0 {
        x |= 1 << 30;
    }
    x
}

/// Executes the instruction at `core.r[15]` whose bytes are `code` (at least 4 bytes, or 2 for
/// a 16-bit instruction at the end of the code). `stack(addr)` reads a word for pops. Returns
/// `None`, leaving `core` untouched, for anything it does not know.
pub fn execute(
    core: &mut CoreRegisters,
    code: &[u8],
    stack: &mut dyn FnMut(u32) -> Option<u32>,
) -> Option<Effect> {
    if in_it_block(core.xpsr) {
        return None;
    }
    let hw1 = half(code, 0)?;
    let wide = is_32bit(hw1);
    let hw2 = if wide { Some(half(code, 2)?) } else { None };
    let mut next = *core;
    let pc = core.r[PC];
    next.r[PC] = pc.wrapping_add(if wide { 4 } else { 2 });
    let mut effect = Effect::default();
    if let Some((list, _)) = pop_list(hw1, hw2) {
        let mut sp = core.r[SP];
        for reg in 0..16 {
            if list & (1 << reg) != 0 {
                let v = stack(sp)?;
                sp = sp.wrapping_add(4);
                if reg == PC {
                    // Interworking: a Thumb return address has bit 0 set; anything else faults.
                    if v & 1 == 0 {
                        return None;
                    }
                    next.r[PC] = v & !1;
                } else {
                    next.r[reg] = v;
                }
            }
        }
        next.r[SP] = sp;
    } else if hw1 & 0xFE00 == 0xB400 || hw1 == 0xE92D || (hw1 == 0xF84D && hw2? & 0x0FFF == 0x0D04)
    {
        // push {list} / stmdb sp!, {list} / str rt, [sp, #-4]!
        let list: u16 = if hw1 & 0xFE00 == 0xB400 {
            (hw1 & 0xFF) | ((hw1 >> 8) & 1) << LR
        } else if hw1 == 0xE92D {
            hw2?
        } else {
            1 << (hw2? >> 12)
        };
        if list == 0 || list & ((1 << SP) | (1 << PC)) != 0 {
            return None;
        }
        let n = list.count_ones();
        let sp = core.r[SP].wrapping_sub(4 * n);
        let mut bytes = Vec::with_capacity(4 * n as usize);
        for reg in 0..16 {
            if list & (1 << reg) != 0 {
                bytes.extend_from_slice(&core.r[reg].to_le_bytes());
            }
        }
        effect.writes.push((sp, bytes));
        next.r[SP] = sp;
    } else if hw1 & 0xFF87 == 0x4700 {
        // bx rm
        let rm = usize::from((hw1 >> 3) & 0xF);
        let target = core.r[rm];
        if rm == PC || target & 1 == 0 {
            return None;
        }
        next.r[PC] = target & !1;
    } else if hw1 & 0xF500 == 0xB100 {
        // cbz / cbnz rn, label
        let rn = usize::from(hw1 & 7);
        let imm = u32::from(((hw1 >> 9) & 1) << 6 | ((hw1 >> 3) & 0x1F) << 1);
        let nonzero = hw1 & (1 << 11) != 0;
        if (core.r[rn] != 0) == nonzero {
            next.r[PC] = pc.wrapping_add(4).wrapping_add(imm);
        }
    } else if hw1 & 0xF800 == 0x2800 {
        // cmp rn, #imm8
        let rn = usize::from((hw1 >> 8) & 7);
        let (a, b) = (core.r[rn], u32::from(hw1 & 0xFF));
        let result = a.wrapping_sub(b);
        let mut x = set_nz(core.xpsr, result) & !(0x3000_0000);
        if a >= b {
            x |= 1 << 29;
        }
        if ((a ^ b) & (a ^ result)) & 0x8000_0000 != 0 {
            x |= 1 << 28;
        }
        next.xpsr = x;
    } else if hw1 & 0xF800 == 0x2000 {
        // movs rd, #imm8
        let rd = usize::from((hw1 >> 8) & 7);
        let v = u32::from(hw1 & 0xFF);
        next.r[rd] = v;
        next.xpsr = set_nz(core.xpsr, v);
    } else if hw1 & 0xFF00 == 0x4600 {
        // mov rd, rm (no flags)
        let rd = usize::from(((hw1 >> 7) & 1) << 3 | (hw1 & 7));
        let rm = usize::from((hw1 >> 3) & 0xF);
        if rd == PC || rm == PC || rd == SP || rm == SP {
            return None;
        }
        next.r[rd] = core.r[rm];
    } else if hw1 & 0xFF00 == 0xB000 {
        // add sp, #imm / sub sp, #imm
        let imm = u32::from(hw1 & 0x7F) << 2;
        next.r[SP] = if hw1 & 0x80 != 0 {
            core.r[SP].wrapping_sub(imm)
        } else {
            core.r[SP].wrapping_add(imm)
        };
    } else {
        return None;
    }
    *core = next;
    Some(effect)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn core() -> CoreRegisters {
        let mut r = [0u32; 16];
        for (i, v) in r.iter_mut().enumerate() {
            *v = 0x100 + i as u32;
        }
        r[SP] = 0x2000_1000;
        r[LR] = 0x0800_0201;
        r[PC] = 0x0800_0100;
        CoreRegisters::new(r, 0x0100_0000)
    }

    fn no_stack(_: u32) -> Option<u32> {
        None
    }

    #[test]
    fn push_16_and_32_bit() {
        // push {r4, r5, lr} = 0xB530
        let mut c = core();
        let e = execute(&mut c, &[0x30, 0xB5, 0, 0], &mut no_stack).unwrap();
        assert_eq!(c.r[SP], 0x2000_1000 - 12);
        assert_eq!(c.r[PC], 0x0800_0102);
        assert_eq!(
            e.writes,
            vec![(
                0x2000_0ff4,
                [0x104u32, 0x105, 0x0800_0201]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect()
            )]
        );
        // stmdb sp!, {r3-r9, lr} = E92D 43F8
        let mut c = core();
        let e = execute(&mut c, &[0x2D, 0xE9, 0xF8, 0x43], &mut no_stack).unwrap();
        assert_eq!(c.r[SP], 0x2000_1000 - 32);
        assert_eq!(c.r[PC], 0x0800_0104);
        assert_eq!(e.writes[0].1.len(), 32);
    }

    #[test]
    fn pop_with_pc_returns() {
        // pop {r4, r5, pc} = 0xBD30
        let mem = [0xAAu32, 0xBB, 0x0800_0301];
        let mut stack = |a: u32| mem.get(((a - 0x2000_1000) / 4) as usize).copied();
        let mut c = core();
        execute(&mut c, &[0x30, 0xBD], &mut stack).unwrap();
        assert_eq!(
            (c.r[4], c.r[5], c.r[PC], c.r[SP]),
            (0xAA, 0xBB, 0x0800_0300, 0x2000_100c)
        );
        // ldmia.w sp!, {r3-r9, pc} = E8BD 83F8
        let words: Vec<u32> = (0..8)
            .map(|i| if i == 7 { 0x0800_0401 } else { i })
            .collect();
        let mut stack = |a: u32| words.get(((a - 0x2000_1000) / 4) as usize).copied();
        let mut c = core();
        execute(&mut c, &[0xBD, 0xE8, 0xF8, 0x83], &mut stack).unwrap();
        assert_eq!(
            (c.r[3], c.r[9], c.r[PC], c.r[SP]),
            (0, 6, 0x0800_0400, 0x2000_1020)
        );
        // A return address without the Thumb bit is refused.
        let mut stack = |_: u32| Some(0x0800_0400);
        let mut c = core();
        let before = c;
        assert!(execute(&mut c, &[0x00, 0xBD], &mut stack).is_none());
        assert_eq!(c, before);
    }

    #[test]
    fn branches_and_flags() {
        // cbz r0, +8 with r0 = 0 branches; with r0 != 0 falls through.
        let insn = 0xB100u16 | (4 << 3); // imm5 = 4 -> offset 8
        let mut c = core();
        c.r[0] = 0;
        execute(&mut c, &insn.to_le_bytes(), &mut no_stack).unwrap();
        assert_eq!(c.r[PC], 0x0800_0100 + 4 + 8);
        let mut c = core();
        execute(&mut c, &insn.to_le_bytes(), &mut no_stack).unwrap();
        assert_eq!(c.r[PC], 0x0800_0102);
        // cmp r1, #0 with r1 = 0: Z and C set.
        let mut c = core();
        c.r[1] = 0;
        execute(&mut c, &0x2900u16.to_le_bytes(), &mut no_stack).unwrap();
        assert_eq!(c.xpsr >> 28, 0b0110);
        // bx lr
        let mut c = core();
        execute(&mut c, &0x4770u16.to_le_bytes(), &mut no_stack).unwrap();
        assert_eq!(c.r[PC], 0x0800_0200);
        // Inside an IT block nothing is emulated.
        let mut c = core();
        c.xpsr |= 1 << 25;
        assert!(execute(&mut c, &0x4770u16.to_le_bytes(), &mut no_stack).is_none());
        // Unknown instruction (ldr r3, [r0]) is refused.
        let mut c = core();
        assert!(execute(&mut c, &0x6803u16.to_le_bytes(), &mut no_stack).is_none());
    }

    #[test]
    fn finds_return_instructions() {
        // push {r4, lr}; movs r0, #0; pop {r4, pc}; bx lr; ldmia.w sp!, {r4, pc}
        let code = [
            0x10, 0xB5, 0x00, 0x20, 0x10, 0xBD, 0x70, 0x47, 0xBD, 0xE8, 0x10, 0x80,
        ];
        assert_eq!(return_instructions(&code, 0x100), vec![0x104, 0x106, 0x108]);
    }
}
