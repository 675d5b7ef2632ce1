//! Walking one kernel `List_t`: from `xListEnd.pxNext` item by item until the walk comes back
//! to the list's own end marker, at most `uxNumberOfItems` steps (and never more than
//! [`MAX_LIST_ITEMS`]), never visiting an item twice. Each item is one small read; a null,
//! misaligned or unreadable pointer, a loop, a count that disagrees and an item whose
//! `pxContainer` names another list are anomalies, and the walk keeps what it read before.

use std::collections::HashSet;

use memlife_core::{Memory, TargetError};

use crate::layout::ListLayout;
use crate::read::read_or_none;
use crate::{Anomaly, AnomalyKind};

/// The most items one list walk follows, whatever `uxNumberOfItems` says.
pub const MAX_LIST_ITEMS: u64 = 1024;

/// One item found on a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The item's address.
    pub item: u64,
    /// Its `pvOwner`: for the kernel's task lists, a TCB.
    pub owner: u64,
    /// Its `xItemValue` (the wake tick on the delayed lists).
    pub value: u64,
}

/// Walks the list at `list` whose header bytes (`sizeof(List_t)`) are `header`; `name` says
/// which list in anomalies.
pub(crate) fn walk(
    mem: &mut dyn Memory,
    layout: &ListLayout,
    list: u64,
    header: &[u8],
    name: &str,
    anomalies: &mut Vec<Anomaly>,
) -> Result<Vec<Entry>, TargetError> {
    let mut out = Vec::new();
    let (Some(count), Some(first)) = (layout.count.read(header), layout.first.read(header)) else {
        anomalies.push(Anomaly::new(
            AnomalyKind::BadPointer,
            Some(list),
            format!("{name}: the list header could not be read"),
        ));
        return Ok(out);
    };
    let end = list.saturating_add(layout.end);
    // A list the kernel has not initialised yet (before the first task is created) is all
    // zeros: nothing to walk, nothing wrong.
    if count == 0 && first == 0 {
        return Ok(out);
    }
    let bound = if count > MAX_LIST_ITEMS {
        anomalies.push(Anomaly::new(
            AnomalyKind::TooManyItems,
            Some(list),
            format!(
                "{name}: uxNumberOfItems is {count}; the walk stops after {MAX_LIST_ITEMS} items"
            ),
        ));
        MAX_LIST_ITEMS
    } else {
        count
    };
    let item = &layout.item;
    let item_len = usize::try_from(item.size).unwrap_or(usize::MAX);
    let mut visited = HashSet::new();
    let mut next = first;
    for _ in 0..bound {
        if next == end {
            break;
        }
        let bad = |what: &str| {
            Anomaly::new(
                AnomalyKind::BadPointer,
                Some(next),
                format!("{name}: item {} is {what} ({next:#010x})", out.len()),
            )
        };
        if next == 0 || !next.is_multiple_of(4) {
            anomalies.push(bad(if next == 0 { "null" } else { "misaligned" }));
            return Ok(out);
        }
        if !visited.insert(next) {
            anomalies.push(Anomaly::new(
                AnomalyKind::Cycle,
                Some(next),
                format!(
                    "{name}: the list comes back to item {next:#010x} after {} items",
                    out.len()
                ),
            ));
            return Ok(out);
        }
        let Some(bytes) = read_or_none(mem, next, item_len)? else {
            anomalies.push(bad("unreadable"));
            return Ok(out);
        };
        let owner = item.owner.and_then(|f| f.read(&bytes)).unwrap_or(0);
        if let Some(container) = item.container.and_then(|f| f.read(&bytes))
            && container != list
        {
            anomalies.push(Anomaly::new(
                AnomalyKind::ListMismatch,
                Some(next),
                format!(
                    "{name}: item {next:#010x} (owner {owner:#010x}) says it is on the list at \
                     {container:#010x}"
                ),
            ));
        }
        out.push(Entry {
            item: next,
            owner,
            value: item.value.read(&bytes).unwrap_or(0),
        });
        next = item.next.read(&bytes).unwrap_or(0);
    }
    if next != end && (out.len() as u64) == bound && bound == count {
        anomalies.push(Anomaly::new(
            AnomalyKind::CountMismatch,
            Some(list),
            format!(
                "{name}: uxNumberOfItems is {count} but the list goes on past that (next item \
                 {next:#010x})"
            ),
        ));
    } else if (out.len() as u64) < bound {
        anomalies.push(Anomaly::new(
            AnomalyKind::CountMismatch,
            Some(list),
            format!(
                "{name}: uxNumberOfItems is {count} but the list ends after {} items",
                out.len()
            ),
        ));
    }
    Ok(out)
}
