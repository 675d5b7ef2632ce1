//! Where the arena observer breaks: TFLM's functions that bound a build and move the arena's
//! cursors, found by their names in the ELF's symbol table, for either generation
//! ([`Hooks::of`]).
//!
//! The names differ by generation and by namespace: TFLM of 2020 and current TFLM until
//! 2026-08 declare their classes in `tflite`, tflite-micro of 2026-10 in `tflite::micro`; every
//! name is looked up under both ([`NAMESPACES`]). Where a name has overloads, the one the
//! observer reads the arguments of is chosen by its parameter list.
//!
//! | role | 2020 | current (one arena) |
//! |---|---|---|
//! | construct | `MicroInterpreter::MicroInterpreter` | the overload taking the arena (`unsigned char*`), not the one taking a `MicroAllocator*` |
//! | tail | `SimpleMemoryAllocator::AllocateFromTail` | `SingleArenaBufferAllocator::AllocatePersistentBuffer`, and its non-virtual thunk (the entry of calls through `IPersistentBufferAllocator*`, `this` at that subobject) |
//! | temporaries | – | `SingleArenaBufferAllocator::AllocateTemp` |
//! | head | – | `SingleArenaBufferAllocator::{AllocateResizableBuffer, ResizeBuffer, DeallocateResizableBuffer, ReserveNonPersistentOverlayMemory}` |
//! | operator loops | – | `MicroInterpreterGraph::{InitSubgraphs, PrepareSubgraphs}` |
//! | plan, build, inference, release | `GreedyMemoryPlanner::GetMaximumMemorySize`, `MicroInterpreter::{AllocateTensors, Invoke, ~MicroInterpreter}` | the same |
//!
//! 2020's `AllocateFromTail` is a real call at every site but one (the arena allocator's own
//! placement in `CreateInPlaceSimpleMemoryAllocator`, inlined); current TFLM's
//! `SingleArenaBufferAllocator::Create` calls `AllocatePersistentBuffer` on a copy on the stack
//! before placing it. Either way the placement is seen as a tail move between stops
//! (`super::build`).
//!
//! The thunk: GCC may emit it as an adjustment and a jump into the function (a call then meets
//! both breakpoints, with the same stack pointer and return address: the observer counts it
//! once) or, as in tflite-micro's x86-64 wheel, as a copy of the function's body adjusted to
//! the subobject (a breakpoint on the function alone would miss every `MicroAllocator`
//! allocation).

use memlife_dwarf::{FunctionLookup, Symbols};
use memlife_tflm::Generation;

/// The namespaces TFLM declares its classes in, oldest first.
pub const NAMESPACES: [&str; 2] = ["tflite::", "tflite::micro::"];

/// The entry addresses of the functions the observer breaks on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooks {
    /// `MicroInterpreter::MicroInterpreter` (this, model, resolver, arena, ...): the arena as
    /// handed over, and the persistent allocations the construction makes.
    pub construct: u64,
    /// `MicroInterpreter::~MicroInterpreter`: the interpreter (and its arena) is gone.
    pub destroy: Option<u64>,
    /// `MicroInterpreter::AllocateTensors`.
    pub allocate_tensors: u64,
    /// `MicroInterpreter::Invoke`.
    pub invoke: Option<u64>,
    /// The persistent allocation from the tail (this, size, alignment): 2020's
    /// `SimpleMemoryAllocator::AllocateFromTail`, current's
    /// `SingleArenaBufferAllocator::AllocatePersistentBuffer`.
    pub allocate_from_tail: u64,
    /// `GreedyMemoryPlanner::GetMaximumMemorySize` (this): the plan while its arrays exist.
    pub plan_size: Option<u64>,
    /// Current TFLM's other stops; `None` for 2020.
    pub current: Option<CurrentHooks>,
}

/// Current TFLM's stops besides the tail (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CurrentHooks {
    /// `SingleArenaBufferAllocator::AllocateTemp` (this, size, alignment): a temporary above
    /// the head; its return shows `temp_`'s high water.
    pub allocate_temp: Option<u64>,
    /// The functions that move the head (this, ...); their returns show `head_`.
    pub head: Vec<u64>,
    /// `MicroInterpreterGraph::InitSubgraphs` (this = the interpreter's `graph_`).
    pub init_ops: Option<u64>,
    /// `MicroInterpreterGraph::PrepareSubgraphs`.
    pub prepare_ops: Option<u64>,
    /// The non-virtual thunk of `AllocatePersistentBuffer` (this = the
    /// `IPersistentBufferAllocator` subobject): its entry and how far below it the object
    /// starts.
    pub tail_thunk: Option<(u64, u64)>,
}

/// The non-virtual thunk of `Class::method` (`_ZThn<k>_N6tflite[5micro]<class><method>E…`, the
/// Itanium name: `this` less `k`) in either namespace: its entry and `k`.
pub fn thunk(symbols: &Symbols, class: &str, method: &str) -> Option<(u64, u64)> {
    let scoped = format!("{}{class}{}{method}E", class.len(), method.len());
    let prefixes = ["N6tflite", "N6tflite5micro"];
    symbols
        .elf_symbols()
        .iter()
        .filter(|s| s.kind == memlife_dwarf::SymbolKind::Function)
        .find_map(|s| {
            let rest = s.name.strip_prefix("_ZThn")?;
            let (k, name) = rest.split_once('_')?;
            let k: u64 = k.parse().ok()?;
            prefixes
                .iter()
                .any(|p| name.strip_prefix(p).is_some_and(|t| t.starts_with(&scoped)))
                .then_some((s.address & !1, k))
        })
}

/// The head's functions of `SingleArenaBufferAllocator`.
const HEAD_FUNCTIONS: [&str; 4] = [
    "AllocateResizableBuffer",
    "ResizeBuffer",
    "DeallocateResizableBuffer",
    "ReserveNonPersistentOverlayMemory",
];

/// The entry of `Class::function` in either namespace. A name with several functions is
/// narrowed to entries: a compiler's `[clone .cold]` part of a function is not one (GCC splits
/// `AllocateTensors`' unlikely paths out so), and among overloads `pick` chooses (`None`: none
/// are wanted).
pub fn find(
    symbols: &Symbols,
    qualified: &str,
    pick: Option<&dyn Fn(&str) -> bool>,
) -> Option<u64> {
    find_named(symbols, qualified, pick).map(|(_, entry)| entry)
}

/// [`find`], with the name found (`tflite::micro::MicroInterpreter::AllocateTensors`).
pub fn find_named(
    symbols: &Symbols,
    qualified: &str,
    pick: Option<&dyn Fn(&str) -> bool>,
) -> Option<(String, u64)> {
    NAMESPACES.iter().find_map(|ns| {
        let name = format!("{ns}{qualified}");
        let entry = match symbols.function_lookup(&name) {
            FunctionLookup::Found(_) => symbols.function(&name).map(|f| f.entry),
            FunctionLookup::Ambiguous(names) => {
                let wanted = |n: &str| !n.contains(" [clone .") && pick.is_none_or(|p| p(n));
                // Aliases (complete and base constructors) share an entry: one function.
                let mut entries: Vec<u64> = names
                    .iter()
                    .filter(|n| wanted(n))
                    .filter_map(|n| symbols.function(n).map(|f| f.entry))
                    .collect();
                entries.sort_unstable();
                entries.dedup();
                match entries[..] {
                    [one] => Some(one),
                    _ => {
                        tracing::debug!("`{name}`: {} functions fit", entries.len());
                        None
                    }
                }
            }
            FunctionLookup::Missing => None,
        };
        entry.map(|e| (name, e))
    })
}

/// The constructor overload that takes the arena (`uint8_t* tensor_arena, size_t size`), not
/// the one that takes a `MicroAllocator*`.
fn takes_the_arena(name: &str) -> bool {
    name.contains("unsigned char*") && !name.contains("MicroAllocator*")
}

impl Hooks {
    /// The functions of this ELF's TFLM of `generation`; `None` when one the observer cannot
    /// do without is missing (the constructor, `AllocateTensors`, the tail allocation).
    pub fn of(symbols: &Symbols, generation: Generation) -> Option<Hooks> {
        let f = |name: &str| find(symbols, name, None);
        let construct = find(
            symbols,
            "MicroInterpreter::MicroInterpreter",
            Some(&takes_the_arena),
        )?;
        let (allocate_from_tail, current) = match generation {
            Generation::Tflm2020 => (f("SimpleMemoryAllocator::AllocateFromTail")?, None),
            Generation::Current => {
                let single = |m: &str| f(&format!("SingleArenaBufferAllocator::{m}"));
                let current = CurrentHooks {
                    allocate_temp: single("AllocateTemp"),
                    head: HEAD_FUNCTIONS.iter().filter_map(|m| single(m)).collect(),
                    init_ops: f("MicroInterpreterGraph::InitSubgraphs"),
                    prepare_ops: f("MicroInterpreterGraph::PrepareSubgraphs"),
                    tail_thunk: thunk(
                        symbols,
                        "SingleArenaBufferAllocator",
                        "AllocatePersistentBuffer",
                    ),
                };
                (single("AllocatePersistentBuffer")?, Some(current))
            }
        };
        Some(Hooks {
            construct,
            destroy: f("MicroInterpreter::~MicroInterpreter"),
            allocate_tensors: f("MicroInterpreter::AllocateTensors")?,
            invoke: f("MicroInterpreter::Invoke"),
            allocate_from_tail,
            plan_size: f("GreedyMemoryPlanner::GetMaximumMemorySize"),
            current,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// Real current TFLM: tflite-micro's x86-64 runtime (wheel 0.dev20261023182759), fetched
    /// by `make -C firmware tflm-current-symbols` (part of `make -C firmware`, which `make test`
    /// runs first). Missing, the test fails: it is the one check against real current TFLM.
    fn real_current_tflm() -> Symbols {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../firmware/build/tflm-current/_runtime.so");
        assert!(
            path.is_file(),
            "{} is missing: run `make -C firmware tflm-current-symbols` (pip fetches the pinned tflite-micro wheel)",
            path.display()
        );
        Symbols::load(&path).unwrap()
    }

    /// The entry of the function whose full demangled name is `name`.
    fn entry(symbols: &Symbols, name: &str) -> u64 {
        symbols
            .function(name)
            .unwrap_or_else(|| panic!("{name} not in the symbol table"))
            .entry
    }

    #[test]
    fn every_hook_resolves_in_real_current_tflm_in_namespace_tflite_micro() {
        let s = real_current_tflm();
        assert!(
            !s.has_dwarf(),
            "the wheel's runtime has no DWARF: symbols only"
        );
        let h = Hooks::of(&s, Generation::Current).expect("current TFLM's hooks");
        const NS: &str = "tflite::micro::";
        let full = |n: &str| entry(&s, &format!("{NS}{n}"));
        // The constructor overload that takes the arena, not the one taking a MicroAllocator*.
        assert_eq!(
            h.construct,
            full(
                "MicroInterpreter::MicroInterpreter(tflite::Model const*, tflite::micro::MicroOpResolver const&, unsigned char*, unsigned long, tflite::micro::MicroResourceVariables*, tflite::micro::MicroProfilerInterface*, bool)"
            )
        );
        assert_ne!(
            h.construct,
            full(
                "MicroInterpreter::MicroInterpreter(tflite::Model const*, tflite::micro::MicroOpResolver const&, tflite::micro::MicroAllocator*, tflite::micro::MicroResourceVariables*, tflite::micro::MicroProfilerInterface*)"
            )
        );
        // The allocation itself, not the non-virtual thunk the interface calls land on first.
        assert_eq!(
            h.allocate_from_tail,
            full(
                "SingleArenaBufferAllocator::AllocatePersistentBuffer(unsigned long, unsigned long)"
            )
        );
        assert_ne!(
            h.allocate_from_tail,
            // non-virtual thunk to tflite::micro::SingleArenaBufferAllocator::
            // AllocatePersistentBuffer(unsigned long, unsigned long)
            entry(
                &s,
                "_ZThn8_N6tflite5micro26SingleArenaBufferAllocator24AllocatePersistentBufferEmm"
            )
        );
        assert_eq!(
            h.allocate_tensors,
            full("MicroInterpreter::AllocateTensors()")
        );
        assert_eq!(h.invoke, Some(full("MicroInterpreter::Invoke()")));
        assert_eq!(
            h.destroy,
            Some(full("MicroInterpreter::~MicroInterpreter()"))
        );
        assert_eq!(
            h.plan_size,
            Some(full("GreedyMemoryPlanner::GetMaximumMemorySize()"))
        );
        let c = h.current.expect("current TFLM's own stops");
        assert_eq!(
            c.allocate_temp,
            Some(full(
                "SingleArenaBufferAllocator::AllocateTemp(unsigned long, unsigned long)"
            ))
        );
        let head: Vec<u64> = [
            "AllocateResizableBuffer(unsigned long, unsigned long)",
            "ResizeBuffer(unsigned char*, unsigned long, unsigned long)",
            "DeallocateResizableBuffer(unsigned char*)",
            "ReserveNonPersistentOverlayMemory(unsigned long, unsigned long)",
        ]
        .iter()
        .map(|m| full(&format!("SingleArenaBufferAllocator::{m}")))
        .collect();
        assert_eq!(c.head, head);
        assert_eq!(
            c.init_ops,
            Some(full("MicroInterpreterGraph::InitSubgraphs()"))
        );
        assert_eq!(
            c.prepare_ops,
            Some(full("MicroInterpreterGraph::PrepareSubgraphs()"))
        );
        // The thunk's body is a copy of the function's here (GCC, x86-64): calls through
        // IPersistentBufferAllocator* never reach the function, so the thunk is a stop too.
        assert_eq!(
            c.tail_thunk,
            Some((
                entry(
                    &s,
                    "_ZThn8_N6tflite5micro26SingleArenaBufferAllocator24AllocatePersistentBufferEmm"
                ),
                8
            ))
        );
        // 2020's tail function is not there: the generation decides which is looked for.
        assert_eq!(Hooks::of(&s, Generation::Tflm2020), None);
    }

    #[test]
    fn the_2020_firmwares_hooks_resolve_in_namespace_tflite() {
        // firmware/tflm (TFLM of 2020, `make -C firmware`): the same lookups find the names in
        // `tflite`, and the current generation's are not there.
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build/tflm-healthy.elf");
        assert!(
            path.is_file(),
            "{} is missing: run `make -C firmware`",
            path.display()
        );
        let s = Symbols::load(&path).unwrap();
        let h = Hooks::of(&s, Generation::Tflm2020).expect("2020's hooks");
        let full = |n: &str| entry(&s, &format!("tflite::{n}"));
        assert_eq!(h.construct, full("MicroInterpreter::MicroInterpreter"));
        assert_eq!(
            h.allocate_from_tail,
            full("SimpleMemoryAllocator::AllocateFromTail")
        );
        assert_eq!(
            h.allocate_tensors,
            full("MicroInterpreter::AllocateTensors")
        );
        assert_eq!(h.current, None);
        assert_eq!(Hooks::of(&s, Generation::Current), None);
    }

    #[test]
    fn current_hooks_resolve_in_both_namespaces_on_the_model_firmware() {
        // firmware/tflm-current (our model of current TFLM) built with its classes in
        // `tflite::micro` and in `tflite` (`make -C firmware`).
        for (elf, ns) in [
            ("tflm-current.elf", "tflite::micro::"),
            ("tflm-current-ns-tflite.elf", "tflite::"),
        ] {
            let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../firmware/build")
                .join(elf);
            assert!(
                path.is_file(),
                "{} is missing: run `make -C firmware`",
                path.display()
            );
            let s = Symbols::load(&path).unwrap();
            let h = Hooks::of(&s, Generation::Current).expect("current TFLM's hooks");
            let full = |n: &str| entry(&s, &format!("{ns}{n}"));
            assert_eq!(
                h.construct,
                full("MicroInterpreter::MicroInterpreter"),
                "{elf}"
            );
            assert_eq!(
                h.allocate_from_tail,
                full("SingleArenaBufferAllocator::AllocatePersistentBuffer"),
                "{elf}"
            );
            let c = h.current.unwrap();
            assert_eq!(
                c.init_ops,
                Some(full("MicroInterpreterGraph::InitSubgraphs")),
                "{elf}"
            );
            assert_eq!(c.head.len(), 4, "{elf}");
            // ARM: the IPersistentBufferAllocator subobject 4 bytes in.
            assert_eq!(c.tail_thunk.map(|(_, k)| k), Some(4), "{elf}");
        }
    }
}
