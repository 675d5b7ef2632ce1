//! Finding TFLM's live objects in a halted target without any breakpoint: the places looked in
//! ([`Container`]s: heap blocks in use and static variables) and the rules an object must pass
//! to be taken for an arena allocator, a `MicroAllocator` or a `MicroInterpreter` (the crate
//! doc states them).

use memlife_dwarf::Symbols;
use serde::Serialize;

use crate::layout::{ArenaClass, Cursors, Tflm, Vtable};
use crate::ram::Ram;

/// A place TFLM objects are looked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Container {
    /// First address.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// What it is.
    #[serde(flatten)]
    pub kind: ContainerKind,
}

/// What a [`Container`] is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ContainerKind {
    /// A heap block in use (`start` is the block as the heap walk lists it, header included).
    HeapBlock,
    /// A static or global variable.
    Static {
        /// Its name.
        name: String,
    },
}

impl Container {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }

    fn holds(&self, start: u64, end: u64) -> bool {
        start >= self.start && end <= self.end() && start <= end
    }

    /// `heap block 0x20001000 (2064 bytes)` or `static tensor_arena (10240 bytes)`.
    pub fn describe(&self) -> String {
        match &self.kind {
            ContainerKind::HeapBlock => {
                format!("heap block {:#010x} ({} bytes)", self.start, self.size)
            }
            ContainerKind::Static { name } => format!("static {name} ({} bytes)", self.size),
        }
    }
}

/// Statics smaller than this cannot hold an arena, an interpreter or an allocator object.
const MIN_STATIC: u64 = 16;

/// The places to look in: the heap blocks in use (`(address, size)` as the heap walk lists
/// them) and every static variable of at least 16 bytes in the image's writable sections,
/// except those that overlap `heap` (the heap's own array, whose free blocks hold stale objects)
/// or a listed heap block.
pub fn containers(
    symbols: &Symbols,
    heap_blocks: &[(u64, u64)],
    heap: Option<(u64, u64)>,
) -> Vec<Container> {
    let mut out: Vec<Container> = heap_blocks
        .iter()
        .filter(|(_, size)| *size > 0)
        .map(|&(start, size)| Container {
            start,
            size,
            kind: ContainerKind::HeapBlock,
        })
        .collect();
    let overlaps = |s: u64, e: u64, (a, l): (u64, u64)| s < a.saturating_add(l) && a < e;
    let ram = symbols.writable_sections();
    for v in symbols.variables() {
        let (Some(start), Some(ty)) = (v.address, v.type_id) else {
            continue;
        };
        let Some(size) = symbols.types().size_of(ty).filter(|s| *s >= MIN_STATIC) else {
            continue;
        };
        let end = start.saturating_add(size);
        let in_ram = ram
            .iter()
            .any(|(_, a, l)| start >= *a && end <= a.saturating_add(*l));
        let on_heap = heap.is_some_and(|h| overlaps(start, end, h))
            || heap_blocks.iter().any(|&b| overlaps(start, end, b));
        if in_ram && !on_heap && !out.iter().any(|c| c.start == start && c.size == size) {
            out.push(Container {
                start,
                size,
                kind: ContainerKind::Static {
                    name: v.name.clone(),
                },
            });
        }
    }
    out.sort_by_key(|c| (c.start, c.size));
    out
}

/// An arena allocator object that passed its class's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub address: u64,
    /// Index of its class in [`Tflm::arenas`].
    pub class: usize,
    pub buffer_head: u64,
    pub buffer_tail: u64,
    /// `head_`/`head_temp_`; `temp_`/`next_temp_`; `tail_`/`tail_temp_` (as the class has).
    pub head: u64,
    pub temp: Option<u64>,
    pub tail: u64,
    /// Index of the container holding it.
    pub container: usize,
}

/// Reads a pointer-sized little-endian word of `bytes` at `off`.
pub(crate) fn word(bytes: &[u8], off: u64, size: u64) -> Option<u64> {
    let off = usize::try_from(off).ok()?;
    let b = bytes.get(off..off.checked_add(usize::try_from(size).ok()?)?)?;
    let mut w = [0u8; 8];
    w.get_mut(..b.len())?.copy_from_slice(b);
    Some(u64::from_le_bytes(w))
}

/// Whether the object in `bytes` has the vtable pointers of `vt`: the first is the vtable's
/// address point (two words in: offset to top, then type info), the others inside the vtable.
pub(crate) fn vptrs_match(bytes: &[u8], vt: &Vtable, ptr: u64) -> bool {
    vt.vptrs.iter().enumerate().all(|(i, &off)| {
        word(bytes, off, ptr).is_some_and(|p| {
            if i == 0 {
                p == vt.address.wrapping_add(2 * ptr)
            } else {
                p > vt.address && p < vt.address.saturating_add(vt.size)
            }
        })
    })
}

/// Arena allocator objects in every container: single-arena allocators and the persistent half
/// of a split pair (the non-persistent half is found through the `MicroAllocator` holding
/// both). At most `max` are kept.
pub(crate) fn arena_objects(
    ram: &Ram<'_>,
    tflm: &Tflm,
    containers: &[Container],
    max: usize,
) -> Vec<Found> {
    let ptr = tflm.ptr_size;
    let mut found = Vec::new();
    for (ci, c) in containers.iter().enumerate() {
        let Some(bytes) = ram.loaded(c.start, c.size) else {
            continue;
        };
        for (k, class) in tflm.arenas.iter().enumerate() {
            if matches!(class.cursors, Cursors::NonPersistent { .. }) || class.size > c.size {
                continue;
            }
            // Objects are pointer-aligned: the container's start is (a heap block's header and
            // a static are).
            let mut off = 0u64;
            while off + class.size <= c.size {
                let obj = bytes.get(off as usize..(off + class.size) as usize);
                if let Some(f) = obj.and_then(|o| validate(o, c.start + off, class, k, ptr, c, ci))
                {
                    found.push(f);
                    if found.len() >= max {
                        return found;
                    }
                }
                off += ptr;
            }
        }
    }
    found
}

/// The rules for one candidate object at `addr` (bytes `obj`) of `class`, in container `c`.
fn validate(
    obj: &[u8],
    addr: u64,
    class: &ArenaClass,
    k: usize,
    ptr: u64,
    c: &Container,
    ci: usize,
) -> Option<Found> {
    if let Some(vt) = &class.vtable
        && !vptrs_match(obj, vt, ptr)
    {
        return None;
    }
    let bh = word(obj, class.buffer_head, ptr)?;
    let bt = word(obj, class.buffer_tail, ptr)?;
    let (head, temp, tail) = match class.cursors {
        Cursors::Single { head, tail, temp } => (
            word(obj, head, ptr)?,
            match temp {
                Some(t) => Some(word(obj, t, ptr)?),
                None => None,
            },
            word(obj, tail, ptr)?,
        ),
        Cursors::Persistent { tail_temp } => (bh, None, word(obj, tail_temp, ptr)?),
        Cursors::NonPersistent { .. } => return None,
    };
    // Cursors in order inside a non-empty arena.
    if !(bh < bt
        && bh <= head
        && head <= temp.unwrap_or(head)
        && temp.unwrap_or(head) <= tail
        && tail <= bt)
    {
        return None;
    }
    // The arena lies in the container that holds the object, and the object is the arena's
    // first persistent allocation: inside the tail, at its top (less alignment).
    let end = addr.checked_add(class.size)?;
    if !c.holds(bh, bt) || addr < tail || end > bt || bt - end >= 16 {
        return None;
    }
    Some(Found {
        address: addr,
        class: k,
        buffer_head: bh,
        buffer_tail: bt,
        head,
        temp,
        tail,
        container: ci,
    })
}

/// Positions in the containers (outside `skip` ranges) of the pointer-sized words whose value
/// is one of `values`, as `(value, address of the word)`; at most `max`.
pub(crate) fn words_equal(
    ram: &Ram<'_>,
    containers: &[Container],
    values: &[u64],
    skip: &[(u64, u64)],
    ptr: u64,
    max: usize,
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if values.is_empty() {
        return out;
    }
    for c in containers {
        let Some(bytes) = ram.loaded(c.start, c.size) else {
            continue;
        };
        let mut off = 0u64;
        while off + ptr <= c.size {
            let at = c.start + off;
            if let Some(w) = word(bytes, off, ptr)
                && values.contains(&w)
                && !skip.iter().any(|&(s, e)| at >= s && at < e)
            {
                out.push((w, at));
                if out.len() >= max {
                    return out;
                }
            }
            off += ptr;
        }
    }
    out
}

/// The container holding `start..end`, if one does.
pub(crate) fn holder(containers: &[Container], start: u64, end: u64) -> Option<usize> {
    containers.iter().position(|c| c.holds(start, end))
}
