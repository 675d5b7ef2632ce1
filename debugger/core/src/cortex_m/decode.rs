//! Static decoding of Thumb code, for what a call graph needs: where a function calls
//! (`BL`, `BLX`), where it branches (`B`, `B<cond>`, their wide forms: a branch out of the
//! function is a tail call, a branch back is a loop), which literal words it loads
//! (`LDR Rt, [pc, #imm]`: the literal pool, where function pointers and addresses sit) and
//! which 16-bit halves it moves into a register (`MOVW`/`MOVT`, the other way to build an
//! address).
//!
//! Nothing is executed and no register is known: a branch through a register (`BX`, `BLX Rm`,
//! a `POP` into pc) is [`Instruction::Other`]. Decoding is linear from a function's first
//! byte ([`instructions`]), stepping over the literal words the code loads, which are data.
//! Every other encoding, including one this module does not know, is two or four bytes of
//! [`Instruction::Other`], so a walk always moves on and always ends. Data the code never loads
//! through pc (a `TBB` table) is decoded as if it were code: a call graph keeps only calls that
//! land on a function's first instruction.

use super::thumb::is_32bit;

/// What one instruction means for a call graph. Addresses are absolute; a call or branch target
/// has its Thumb bit clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instruction {
    /// `BL label`: a call that stays in Thumb state.
    Call(u32),
    /// `BLX label`: a call into ARM code (never on a Cortex-M; kept so that it is not mistaken
    /// for anything else).
    CallArm(u32),
    /// `B label` or `B<cond> label`, 16- or 32-bit.
    Branch {
        /// Where it goes.
        target: u32,
        /// Whether it depends on the flags (`B<cond>`).
        conditional: bool,
    },
    /// `LDR Rt, [pc, #imm]`.
    LoadLiteral {
        /// The destination register.
        rt: u8,
        /// The address of the literal word it loads.
        address: u32,
    },
    /// `MOV Rd, Rm` (16-bit, any registers): a value passed on, such as an address loaded
    /// once before a loop and moved into `r0` for each call.
    MoveRegister {
        /// The destination register.
        rd: u8,
        /// The source register.
        rm: u8,
    },
    /// `MOVW Rd, #imm16` (`top` false) or `MOVT Rd, #imm16` (`top` true).
    MoveHalf {
        /// The destination register.
        rd: u8,
        /// The 16-bit immediate.
        imm: u16,
        /// `MOVT`: the upper half.
        top: bool,
    },
    /// Anything else.
    Other,
}

/// One decoded instruction: its address, length in bytes (2 or 4) and meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// The instruction's address.
    pub address: u32,
    /// 2 or 4.
    pub len: u32,
    /// What it does.
    pub instruction: Instruction,
}

fn half(code: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*code.get(at)?, *code.get(at + 1)?]))
}

/// The value of pc an instruction at `address` reads: its address plus 4.
fn pc(address: u32) -> u32 {
    address.wrapping_add(4)
}

/// `value` of `bits` bits, sign-extended to 32.
fn sign_extend(value: u32, bits: u32) -> u32 {
    let shift = 32 - bits;
    (((value << shift) as i32) >> shift) as u32
}

/// Decodes the instruction at `code[at..]`, which sits at `address`. `None` only when fewer
/// than two bytes are left (or a 32-bit instruction is cut off at the end).
pub fn decode(code: &[u8], at: usize, address: u32) -> Option<Decoded> {
    let hw1 = half(code, at)?;
    if is_32bit(hw1) {
        let hw2 = half(code, at + 2)?;
        return Some(Decoded {
            address,
            len: 4,
            instruction: decode_32(hw1, hw2, address),
        });
    }
    Some(Decoded {
        address,
        len: 2,
        instruction: decode_16(hw1, address),
    })
}

fn decode_16(hw: u16, address: u32) -> Instruction {
    let hw = u32::from(hw);
    if hw & 0xF800 == 0xE000 {
        // B<c> T2: 11100 imm11.
        let imm = sign_extend((hw & 0x7FF) << 1, 12);
        return Instruction::Branch {
            target: pc(address).wrapping_add(imm),
            conditional: false,
        };
    }
    if hw & 0xF000 == 0xD000 {
        // B<cond> T1: 1101 cond imm8; cond 1110 is UDF and 1111 is SVC.
        let cond = (hw >> 8) & 0xF;
        if cond < 0xE {
            let imm = sign_extend((hw & 0xFF) << 1, 9);
            return Instruction::Branch {
                target: pc(address).wrapping_add(imm),
                conditional: true,
            };
        }
        return Instruction::Other;
    }
    if hw & 0xFF00 == 0x4600 {
        // MOV Rd, Rm (T1): 01000110 D Rm Rd, Rd = D:Rd.
        return Instruction::MoveRegister {
            rd: (((hw >> 4) & 8) | (hw & 7)) as u8,
            rm: ((hw >> 3) & 0xF) as u8,
        };
    }
    if hw & 0xF800 == 0x4800 {
        // LDR Rt, [pc, #imm8 * 4] (T1).
        let base = pc(address) & !3;
        return Instruction::LoadLiteral {
            rt: ((hw >> 8) & 7) as u8,
            address: base.wrapping_add((hw & 0xFF) << 2),
        };
    }
    Instruction::Other
}

fn decode_32(hw1: u16, hw2: u16, address: u32) -> Instruction {
    let (h1, h2) = (u32::from(hw1), u32::from(hw2));
    if h1 & 0xF800 == 0xF000 && h2 & 0x8000 == 0x8000 {
        return branch_32(h1, h2, address);
    }
    if h1 & 0xFF7F == 0xF85F {
        // LDR Rt, [pc, #+/-imm12] (T2); U (bit 7 of hw1) says add.
        let base = pc(address) & !3;
        let imm = h2 & 0xFFF;
        let target = if h1 & 0x80 != 0 {
            base.wrapping_add(imm)
        } else {
            base.wrapping_sub(imm)
        };
        return Instruction::LoadLiteral {
            rt: ((h2 >> 12) & 0xF) as u8,
            address: target,
        };
    }
    if h1 & 0xFB70 == 0xF240 && h2 & 0x8000 == 0 {
        // MOVW (T3) 11110 i 10 0100 imm4 / MOVT 11110 i 10 1100 imm4; hw2: 0 imm3 Rd imm8.
        let imm = ((h1 & 0xF) << 12) | ((h1 >> 10) & 1) << 11 | ((h2 >> 12) & 7) << 8 | (h2 & 0xFF);
        return Instruction::MoveHalf {
            rd: ((h2 >> 8) & 0xF) as u8,
            imm: imm as u16,
            top: h1 & 0x0080 != 0,
        };
    }
    Instruction::Other
}

/// The branch-and-miscellaneous-control group: `hw1` is `11110xxx...`, `hw2` has bit 15 set.
fn branch_32(h1: u32, h2: u32, address: u32) -> Instruction {
    let s = (h1 >> 10) & 1;
    let j1 = (h2 >> 13) & 1;
    let j2 = (h2 >> 11) & 1;
    // BL, BLX and B (T4) share one 25-bit offset: I1 = NOT(J1 XOR S), I2 = NOT(J2 XOR S).
    let i1 = !(j1 ^ s) & 1;
    let i2 = !(j2 ^ s) & 1;
    let wide = (s << 24) | (i1 << 23) | (i2 << 22) | ((h1 & 0x3FF) << 12) | ((h2 & 0x7FF) << 1);
    let offset = sign_extend(wide, 25);
    match (h2 >> 12) & 0b101 {
        // 11x1: BL.
        0b101 => Instruction::Call(pc(address).wrapping_add(offset)),
        // 11x0: BLX to ARM code; the target is word-aligned, H (bit 0) must be 0.
        0b100 if h2 & 1 == 0 => Instruction::CallArm((pc(address) & !3).wrapping_add(offset & !3)),
        // 10x1: B (T4).
        0b001 => Instruction::Branch {
            target: pc(address).wrapping_add(offset),
            conditional: false,
        },
        // 10x0: B<cond> (T3) unless cond is 111x (the other control instructions).
        0b000 if (h1 >> 6) & 0xE != 0xE => {
            let imm =
                (s << 20) | (j2 << 19) | (j1 << 18) | ((h1 & 0x3F) << 12) | ((h2 & 0x7FF) << 1);
            Instruction::Branch {
                target: pc(address).wrapping_add(sign_extend(imm, 21)),
                conditional: true,
            }
        }
        _ => Instruction::Other,
    }
}

/// Every instruction of `code`, which starts at `base`, decoded linearly. A literal word the
/// code has loaded (`LDR Rt, [pc, #imm]` to an address further on) is data: when the walk
/// reaches it, it steps over its four bytes instead of decoding them. Ends at the end of `code`.
pub fn instructions(code: &[u8], base: u32) -> impl Iterator<Item = Decoded> + '_ {
    let mut at = 0usize;
    let mut literals = std::collections::BTreeSet::new();
    std::iter::from_fn(move || {
        loop {
            let address = base.wrapping_add(u32::try_from(at).ok()?);
            if literals.remove(&address) {
                at = at.checked_add(4)?;
                continue;
            }
            let d = decode(code, at, address)?;
            at = at.checked_add(d.len as usize)?;
            if let Instruction::LoadLiteral { address: word, .. } = d.instruction
                && word > address
            {
                literals.insert(word);
            }
            return Some(d);
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn one(bytes: &[u8], address: u32) -> Instruction {
        decode(bytes, 0, address).unwrap().instruction
    }

    /// The little-endian bytes of a 32-bit Thumb instruction written as gdb shows it (`f000 f800`).
    fn wide(hw1: u16, hw2: u16) -> [u8; 4] {
        let (a, b) = (hw1.to_le_bytes(), hw2.to_le_bytes());
        [a[0], a[1], b[0], b[1]]
    }

    #[test]
    fn bl_forward_and_backward() {
        // 0x08000100: bl 0x08000200 = f000 f87e (offset 0xfc).
        assert_eq!(
            one(&wide(0xF000, 0xF87E), 0x0800_0100),
            Instruction::Call(0x0800_0200)
        );
        // 0x08000200: bl 0x08000100 = f7ff ff7e (offset -0x104).
        assert_eq!(
            one(&wide(0xF7FF, 0xFF7E), 0x0800_0200),
            Instruction::Call(0x0800_0100)
        );
        // The farthest forward call, 16 MiB: J1 = J2 = 0 with S = 0 sets I1 and I2 (f3ff d7fe).
        assert_eq!(
            one(&wide(0xF3FF, 0xD7FE), 0x0800_0000),
            Instruction::Call(0x0900_0000)
        );
    }

    #[test]
    fn blx_to_arm_is_word_aligned() {
        // 0x1002: blx 0x1100 = f000 e87e (offset 0xfc from Align(0x1006, 4) = 0x1004).
        assert_eq!(
            one(&wide(0xF000, 0xE87E), 0x1002),
            Instruction::CallArm(0x1100)
        );
        // H = 1 is undefined: not a call.
        assert_eq!(one(&wide(0xF000, 0xE87F), 0x1002), Instruction::Other);
    }

    #[test]
    fn wide_branches_and_tail_calls() {
        // 0x08000100: b.w 0x08000200 = f000 b87e.
        assert_eq!(
            one(&wide(0xF000, 0xB87E), 0x0800_0100),
            Instruction::Branch {
                target: 0x0800_0200,
                conditional: false
            }
        );
        // 0x08000200: bne.w 0x08000100 = f47f af7e (cond 0001, offset -0x104).
        assert_eq!(
            one(&wide(0xF47F, 0xAF7E), 0x0800_0200),
            Instruction::Branch {
                target: 0x0800_0100,
                conditional: true
            }
        );
        // cond 111x in that group is another instruction (here msr, f380 8808).
        assert_eq!(one(&wide(0xF380, 0x8808), 0x100), Instruction::Other);
    }

    #[test]
    fn narrow_branches() {
        // 0x100: b.n 0xfc (e7fc: offset -8 from 0x104).
        assert_eq!(
            one(&0xE7FCu16.to_le_bytes(), 0x100),
            Instruction::Branch {
                target: 0xFC,
                conditional: false
            }
        );
        // 0x100: beq.n 0x110 (d006).
        assert_eq!(
            one(&0xD006u16.to_le_bytes(), 0x100),
            Instruction::Branch {
                target: 0x110,
                conditional: true
            }
        );
        // svc 0 (df00) and udf (de00) are not branches.
        assert_eq!(one(&0xDF00u16.to_le_bytes(), 0x100), Instruction::Other);
        assert_eq!(one(&0xDE00u16.to_le_bytes(), 0x100), Instruction::Other);
    }

    #[test]
    fn literal_loads_both_widths() {
        // 0x102: ldr r3, [pc, #8] (4b02): Align(0x106, 4) = 0x104, + 8.
        assert_eq!(
            one(&0x4B02u16.to_le_bytes(), 0x102),
            Instruction::LoadLiteral {
                rt: 3,
                address: 0x10C
            }
        );
        // 0x100: ldr.w r0, [pc, #0x20] (f8df 0020) and ldr.w r9, [pc, #-0x20] (f85f 9020).
        assert_eq!(
            one(&wide(0xF8DF, 0x0020), 0x100),
            Instruction::LoadLiteral {
                rt: 0,
                address: 0x124
            }
        );
        assert_eq!(
            one(&wide(0xF85F, 0x9020), 0x100),
            Instruction::LoadLiteral {
                rt: 9,
                address: 0xE4
            }
        );
    }

    #[test]
    fn register_moves() {
        // mov r0, r9 (4648) and mov r9, r0 (4681).
        assert_eq!(
            one(&0x4648u16.to_le_bytes(), 0),
            Instruction::MoveRegister { rd: 0, rm: 9 }
        );
        assert_eq!(
            one(&0x4681u16.to_le_bytes(), 0),
            Instruction::MoveRegister { rd: 9, rm: 0 }
        );
    }

    #[test]
    fn movw_movt_pairs() {
        // movw r0, #0x1235 (f241 2035); movt r0, #0x0800 (f6c0 0000).
        assert_eq!(
            one(&wide(0xF241, 0x2035), 0),
            Instruction::MoveHalf {
                rd: 0,
                imm: 0x1235,
                top: false
            }
        );
        assert_eq!(
            one(&wide(0xF6C0, 0x0000), 0),
            Instruction::MoveHalf {
                rd: 0,
                imm: 0x0800,
                top: true
            }
        );
        // movw r9, #0xffff (f64f 79ff): i and imm4 set.
        assert_eq!(
            one(&wide(0xF64F, 0x79FF), 0),
            Instruction::MoveHalf {
                rd: 9,
                imm: 0xFFFF,
                top: false
            }
        );
    }

    #[test]
    fn a_linear_walk_steps_over_the_literal_words_loaded_and_ends() {
        // 0x1000 push {r4, lr}; 0x1002 bl; 0x1006 ldr r0, [pc, #4]; 0x1008 pop {r4, pc};
        // 0x100a nop; 0x100c .word 0xf000f000 (the literal: it would decode as a call).
        let mut code = vec![0x10, 0xB5];
        code.extend_from_slice(&wide(0xF7FF, 0xFFFE));
        code.extend_from_slice(&0x4801u16.to_le_bytes());
        code.extend_from_slice(&0xBD10u16.to_le_bytes());
        code.extend_from_slice(&0xBF00u16.to_le_bytes());
        code.extend_from_slice(&[0x00, 0xF0, 0x00, 0xF0]);
        let all: Vec<Decoded> = instructions(&code, 0x1000).collect();
        assert_eq!(all.len(), 5);
        assert_eq!(
            all[2].instruction,
            Instruction::LoadLiteral {
                rt: 0,
                address: 0x100C
            }
        );
        assert!(all.iter().all(|d| d.address < 0x100C));
        // Without the load, the same word is decoded (as the call it looks like).
        code[6..8].copy_from_slice(&0xBF00u16.to_le_bytes());
        let all: Vec<Decoded> = instructions(&code, 0x1000).collect();
        assert_eq!(all.len(), 6);
        assert!(matches!(all[5].instruction, Instruction::Call(_)));
        // A lone trailing byte ends the walk.
        assert_eq!(instructions(&[0x10, 0xB5, 0x00], 0).count(), 1);
        // Anything decodes to something, and the walk ends.
        assert_eq!(instructions(&[0xFF; 64], 0).count(), 16);
    }
}
