//! The firmware's call graph, read from the ELF's code: who calls whom (`BL`, and a `B` out of
//! the function: a tail call), which calls sit inside a loop (between a backward branch and
//! its target), and which function's address a call passes as its first argument (`r0` holds
//! a function's address with the Thumb bit, loaded from a literal word or a `MOVW`/`MOVT` pair,
//! maybe into another register before a loop and moved into `r0` for the call: the task entry
//! passed to `xTaskCreate`).
//!
//! Only Thumb code (every Cortex-M) is decoded; for other processors there is no graph and init
//! guesses from names alone. A call or pointer counts only when it lands on the first
//! instruction of a function the symbol table knows, which drops what a linear decode of data
//! inside code (a jump table) may make up. Calls through a register (a function pointer, a
//! virtual call) are not seen.

use std::collections::HashMap;

use memlife_core::cortex_m::decode::{Instruction, instructions};
use memlife_dwarf::{Machine, SymbolKind, Symbols, demangle_name};

/// One function: every symbol at one address (C++ emits its constructors and destructors as
/// aliases) is one node.
#[derive(Debug, Clone)]
pub struct Function {
    /// First instruction (Thumb bit clear).
    pub entry: u64,
    /// Size in bytes.
    pub size: u64,
    /// Its name as users write it (demangled).
    pub name: String,
    /// File-static.
    pub local: bool,
}

/// A call from one function to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The calling instruction's address.
    pub at: u64,
    /// The function called (an index into [`CallGraph::functions`]).
    pub callee: usize,
    /// The function whose address the call passes in `r0`, when the caller put one there
    /// from a constant.
    pub first_arg: Option<usize>,
}

/// What the code of one function says.
#[derive(Debug, Clone, Default)]
struct Body {
    calls: Vec<Call>,
    /// `(first, last)` address of each loop: a backward branch's target and the branch.
    loops: Vec<(u64, u64)>,
}

/// The call graph of a Thumb image (of any other image: its functions, without calls).
#[derive(Debug, Clone)]
pub struct CallGraph {
    functions: Vec<Function>,
    decoded: bool,
    bodies: Vec<Body>,
    callers: Vec<Vec<usize>>,
    by_entry: HashMap<u64, usize>,
}

impl CallGraph {
    /// Reads the graph from the image's code; for code that is not Thumb, only the functions.
    pub fn build(symbols: &Symbols) -> CallGraph {
        let functions = functions(symbols);
        let by_entry: HashMap<u64, usize> = functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.entry, i))
            .collect();
        let decoded = symbols.machine() == Machine::Arm;
        let bodies: Vec<Body> = if decoded {
            functions
                .iter()
                .map(|f| body(symbols, f, &by_entry))
                .collect()
        } else {
            vec![Body::default(); functions.len()]
        };
        let mut callers = vec![Vec::new(); functions.len()];
        for (i, b) in bodies.iter().enumerate() {
            for c in &b.calls {
                if let Some(list) = callers.get_mut(c.callee)
                    && !list.contains(&i)
                {
                    list.push(i);
                }
            }
        }
        CallGraph {
            functions,
            decoded,
            bodies,
            callers,
            by_entry,
        }
    }

    /// Whether the code was decoded (Thumb code): calls, loops and pointers are known.
    pub fn decoded(&self) -> bool {
        self.decoded
    }

    /// Every function, by index.
    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// The function at index `i`.
    pub fn function(&self, i: usize) -> Option<&Function> {
        self.functions.get(i)
    }

    /// The function whose first instruction is at `entry` (Thumb bit ignored).
    pub fn at(&self, entry: u64) -> Option<usize> {
        self.by_entry.get(&(entry & !1)).copied()
    }

    /// The functions named `name` (demangled, parameters ignored when `name` has none).
    pub fn named(&self, name: &str) -> Vec<usize> {
        let plain = !name.contains('(');
        self.functions
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.name == name
                    || (plain && memlife_dwarf::demangle::without_params(&f.name) == name)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The calls `i` makes, in address order.
    pub fn calls(&self, i: usize) -> &[Call] {
        self.bodies.get(i).map_or(&[], |b| b.calls.as_slice())
    }

    /// The functions that call `i`.
    pub fn callers(&self, i: usize) -> &[usize] {
        self.callers.get(i).map_or(&[], Vec::as_slice)
    }

    /// Whether `i` has a loop.
    pub fn has_loop(&self, i: usize) -> bool {
        self.bodies.get(i).is_some_and(|b| !b.loops.is_empty())
    }

    /// Whether the instruction at `at` in `i` lies inside one of its loops.
    pub fn in_loop(&self, i: usize, at: u64) -> bool {
        self.bodies.get(i).is_some_and(|b| {
            b.loops
                .iter()
                .any(|&(first, last)| first <= at && at <= last)
        })
    }
}

/// One node per address, from the symbol table's sized functions.
fn functions(symbols: &Symbols) -> Vec<Function> {
    let mut out: Vec<Function> = Vec::new();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for s in symbols.elf_symbols() {
        if s.kind != SymbolKind::Function || s.size == 0 {
            continue;
        }
        let entry = s.address & !1;
        let name = demangle_name(&s.name).unwrap_or_else(|| s.name.clone());
        match seen.get(&entry) {
            // An alias: keep the global name over a local one.
            Some(&i) => {
                if let Some(f) = out.get_mut(i)
                    && f.local
                    && !s.local
                {
                    f.name = name;
                    f.local = false;
                }
            }
            None => {
                seen.insert(entry, out.len());
                out.push(Function {
                    entry,
                    size: s.size,
                    name,
                    local: s.local,
                });
            }
        }
    }
    out
}

/// Decodes one function's code.
fn body(symbols: &Symbols, f: &Function, by_entry: &HashMap<u64, usize>) -> Body {
    let mut b = Body::default();
    let (Ok(len), Ok(base)) = (usize::try_from(f.size), u32::try_from(f.entry)) else {
        return b;
    };
    let Some(code) = symbols.code(f.entry, len) else {
        return b;
    };
    let end = f.entry.saturating_add(f.size);
    let inside = |a: u64| f.entry <= a && a < end;
    let function_at = |a: u64| by_entry.get(&a).copied();
    // The functions whose addresses the registers hold, from constants (a literal word, a
    // MOVW/MOVT pair) and moves between registers; the low half a MOVW left, for its MOVT.
    // Instructions that write a register otherwise are not decoded: a guess, which the
    // first-argument rule of task entries (and "nothing calls it") narrows.
    let mut regs: [Option<usize>; 16] = [None; 16];
    let mut low: [Option<u16>; 16] = [None; 16];
    let set = |regs: &mut [Option<usize>; 16], r: u8, v: Option<usize>| {
        if let Some(slot) = regs.get_mut(usize::from(r)) {
            *slot = v;
        }
    };
    let call = |b: &mut Body, at: u64, callee: usize, regs: &mut [Option<usize>; 16]| {
        b.calls.push(Call {
            at,
            callee,
            first_arg: regs[0],
        });
        // The callee may change the argument and scratch registers (AAPCS: r0-r3, r12, lr).
        for r in [0, 1, 2, 3, 12, 14] {
            regs[r] = None;
        }
    };
    for d in instructions(code, base) {
        let at = u64::from(d.address);
        match d.instruction {
            Instruction::Call(t) | Instruction::CallArm(t) => match function_at(u64::from(t)) {
                Some(callee) => call(&mut b, at, callee, &mut regs),
                None => regs = [None; 16],
            },
            Instruction::Branch { target, .. } => {
                let t = u64::from(target);
                if inside(t) {
                    if t <= at {
                        b.loops.push((t, at));
                    }
                } else if let Some(callee) = function_at(t) {
                    // A branch to another function's first instruction: a tail call.
                    call(&mut b, at, callee, &mut regs);
                }
            }
            Instruction::LoadLiteral { rt, address } => {
                let word = symbols
                    .code(u64::from(address), 4)
                    .or_else(|| symbols.rodata(u64::from(address), 4))
                    .and_then(|w| <[u8; 4]>::try_from(w).ok())
                    .map(u32::from_le_bytes);
                set(
                    &mut regs,
                    rt,
                    word.and_then(|w| thumb_function(w, &function_at)),
                );
            }
            Instruction::MoveRegister { rd, rm } => {
                let v = regs.get(usize::from(rm)).copied().flatten();
                set(&mut regs, rd, v);
            }
            Instruction::MoveHalf { rd, imm, top } => {
                let slot = low.get_mut(usize::from(rd));
                let v = match (top, slot) {
                    (false, Some(s)) => {
                        *s = Some(imm);
                        None
                    }
                    (true, Some(s)) => s.take().and_then(|l| {
                        thumb_function(u32::from(imm) << 16 | u32::from(l), &function_at)
                    }),
                    _ => None,
                };
                set(&mut regs, rd, v);
            }
            Instruction::Other => {}
        }
    }
    b
}

/// The function whose address (with the Thumb bit) `word` is.
fn thumb_function(word: u32, function_at: &impl Fn(u64) -> Option<usize>) -> Option<usize> {
    if word & 1 == 0 {
        return None;
    }
    function_at(u64::from(word & !1))
}

#[cfg(test)]
pub mod testing {
    //! Call graphs written by hand, for the tests of what reads them.
    use super::*;

    /// A function of a hand-written graph: its name, and its calls as `(at, callee, first_arg)`.
    pub struct Spec<'a> {
        pub name: &'a str,
        pub calls: Vec<(u64, usize, Option<usize>)>,
        /// `(first, last)` of each loop.
        pub loops: Vec<(u64, u64)>,
    }

    /// A decoded graph of `specs`; function `i` starts at `0x1000 * (i + 1)`.
    pub fn graph(specs: Vec<Spec<'_>>) -> CallGraph {
        let functions: Vec<Function> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| Function {
                entry: 0x1000 * (i as u64 + 1),
                size: 0x100,
                name: s.name.to_string(),
                local: false,
            })
            .collect();
        let bodies: Vec<Body> = specs
            .iter()
            .map(|s| Body {
                calls: s
                    .calls
                    .iter()
                    .map(|&(at, callee, first_arg)| Call {
                        at,
                        callee,
                        first_arg,
                    })
                    .collect(),
                loops: s.loops.clone(),
            })
            .collect();
        let mut callers = vec![Vec::new(); functions.len()];
        for (i, b) in bodies.iter().enumerate() {
            for c in &b.calls {
                if !callers[c.callee].contains(&i) {
                    callers[c.callee].push(i);
                }
            }
        }
        let by_entry = functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.entry, i))
            .collect();
        CallGraph {
            functions,
            decoded: true,
            bodies,
            callers,
            by_entry,
        }
    }
}
