//! The kernel's layout, resolved once from DWARF: where its globals are, and where each member
//! of `TCB_t`, `List_t`, `ListItem_t` and `MiniListItem_t` sits and how wide it is.
//!
//! Members are found by name, never at fixed offsets: configuration options add and remove TCB
//! members (`pxEndOfStack`, `uxTCBNumber`, `uxBasePriority`, `ucStaticallyAllocated`,
//! `ucNotifyState`, `xMPUSettings`...), list items carry integrity words with
//! `configUSE_LIST_DATA_INTEGRITY_CHECK_BYTES`, and `xListEnd` is a full `ListItem_t` when
//! `configUSE_MINI_LIST_ITEM` is 0. The types are reached from the globals themselves
//! (`pxCurrentTCB` points to `TCB_t`, `pxReadyTasksLists` is an array of `List_t`, a TCB's
//! `xStateListItem` is a `ListItem_t`), so their typedef names do not matter either.

use memlife_dwarf::{Symbols, Type, TypeId, TypeTable};

use crate::RtosError;

/// The compile unit that defines the kernel's file statics (`xDelayedTaskList1` is a static
/// of tasks.c; another file may have a static of the same name).
pub(crate) const TASKS_CU: &[&str] = &["tasks.c"];

/// A member's place in its struct: byte offset and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Bytes from the start of the struct.
    pub offset: u64,
    /// Width in bytes.
    pub size: u64,
}

impl Field {
    /// The little-endian unsigned value of this field in `bytes` (the whole struct), or `None`
    /// when the bytes are short or the width is not 1, 2, 4 or 8.
    pub fn read(&self, bytes: &[u8]) -> Option<u64> {
        read_uint(bytes, self.offset, self.size)
    }

    /// The field's bytes in `bytes` (the whole struct).
    pub fn bytes<'a>(&self, bytes: &'a [u8]) -> Option<&'a [u8]> {
        let start = usize::try_from(self.offset).ok()?;
        let end = start.checked_add(usize::try_from(self.size).ok()?)?;
        bytes.get(start..end)
    }

    /// The same field inside a struct that sits `base` bytes into another.
    pub fn within(self, base: u64) -> Field {
        Field {
            offset: base.saturating_add(self.offset),
            size: self.size,
        }
    }
}

/// The little-endian unsigned integer of `size` bytes (1, 2, 4 or 8) at `offset` of `bytes`.
pub(crate) fn read_uint(bytes: &[u8], offset: u64, size: u64) -> Option<u64> {
    if !matches!(size, 1 | 2 | 4 | 8) {
        return None;
    }
    let start = usize::try_from(offset).ok()?;
    let b = bytes.get(start..start.checked_add(size as usize)?)?;
    let mut v = [0u8; 8];
    v[..b.len()].copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

/// A global: its address and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Global {
    /// Address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
}

impl Global {
    /// `(addr, len)` as a read range.
    pub(crate) fn range(&self) -> (u64, u64) {
        (self.addr, self.size)
    }
}

/// `ListItem_t` (or, for a list's end marker, `MiniListItem_t`, which has no owner or
/// container).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemLayout {
    /// `xItemValue` (a task's wake tick on the delayed lists, its inverted priority on event
    /// lists).
    pub value: Field,
    /// `pxNext`.
    pub next: Field,
    /// `pxPrevious`.
    pub previous: Field,
    /// `pvOwner`: the TCB, for a task's items.
    pub owner: Option<Field>,
    /// `pxContainer` (`pvContainer` before V10.1): the list the item is on, NULL when on none.
    pub container: Option<Field>,
    /// `sizeof(ListItem_t)`.
    pub size: u64,
}

/// `List_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLayout {
    /// `sizeof(List_t)`.
    pub size: u64,
    /// `uxNumberOfItems`.
    pub count: Field,
    /// Offset of `xListEnd`, the end marker: an empty list's marker points to itself.
    pub end: u64,
    /// `xListEnd.pxNext`, from the start of the list: the first item.
    pub first: Field,
    /// The items a list links (`ListItem_t`).
    pub item: ItemLayout,
}

/// `TCB_t` (`tskTCB`, `struct tskTaskControlBlock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcbLayout {
    /// `sizeof(TCB_t)`.
    pub size: u64,
    /// `pxTopOfStack`: the saved stack pointer (the lowest word of the saved context).
    pub top_of_stack: Field,
    /// Offset of `xStateListItem` (ready, delayed, suspended or termination list).
    pub state_item: u64,
    /// Offset of `xEventListItem` (an event list, or the pending-ready list).
    pub event_item: u64,
    /// `uxPriority`.
    pub priority: Field,
    /// `pxStack`: the lowest address of the stack.
    pub stack: Field,
    /// `pcTaskName[configMAX_TASK_NAME_LEN]`.
    pub name: Field,
    /// `pxEndOfStack` (the highest valid stack word), with `configRECORD_STACK_HIGH_ADDRESS`.
    pub end_of_stack: Option<Field>,
    /// `uxTCBNumber`, with `configUSE_TRACE_FACILITY`.
    pub number: Option<Field>,
    /// `uxBasePriority`, with `configUSE_MUTEXES`.
    pub base_priority: Option<Field>,
    /// `ucStaticallyAllocated`, when static and dynamic creation are both built in.
    pub allocation: Option<Field>,
    /// `ucNotifyState[]`, with `configUSE_TASK_NOTIFICATIONS` (the whole array).
    pub notify_state: Option<Field>,
    /// `xMPUSettings`: an MPU port, whose saved context memlife does not decode.
    pub mpu_settings: bool,
    /// `sizeof(StackType_t)`: the unit of stack depths and of the high-water mark.
    pub stack_word: u64,
}

/// Every address, offset and width a task read needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelLayout {
    /// `pxCurrentTCB`.
    pub current_tcb: Global,
    /// `pxReadyTasksLists[configMAX_PRIORITIES]`.
    pub ready_lists: Global,
    /// `configMAX_PRIORITIES`: the array's length.
    pub priorities: u64,
    /// `xDelayedTaskList1` and `xDelayedTaskList2`.
    pub delayed: [Global; 2],
    /// `xPendingReadyList`: tasks readied while the scheduler was suspended (through their
    /// event list item).
    pub pending_ready: Global,
    /// `xTasksWaitingTermination` (with `INCLUDE_vTaskDelete`): deleted tasks the idle task
    /// has not freed yet.
    pub termination: Option<Global>,
    /// `xSuspendedTaskList` (with `INCLUDE_vTaskSuspend`).
    pub suspended: Option<Global>,
    /// `uxCurrentNumberOfTasks`.
    pub task_count: Option<Global>,
    /// `xSchedulerRunning`.
    pub scheduler_running: Option<Global>,
    /// `uxSchedulerSuspended`.
    pub scheduler_suspended: Option<Global>,
    /// `xTickCount`.
    pub tick_count: Option<Global>,
    /// `List_t`.
    pub list: ListLayout,
    /// `TCB_t`.
    pub tcb: TcbLayout,
}

impl KernelLayout {
    /// Resolves the layout from DWARF. [`RtosError::NotFound`] when the ELF has no
    /// `pxCurrentTCB`; a missing member or list is an error naming it.
    pub fn from_symbols(symbols: &Symbols) -> Result<KernelLayout, RtosError> {
        let types = symbols.types();
        if symbols.variable("pxCurrentTCBs", TASKS_CU).is_some() {
            return Err(smp());
        }
        let (current_tcb, current_ty) =
            global(symbols, "pxCurrentTCB").ok_or(RtosError::NotFound)?;
        let tcb_struct = match current_ty.and_then(|t| types.resolve(t)) {
            Some((_, Type::Pointer { target, .. })) => target.and_then(|t| struct_id(types, t)),
            Some((_, Type::Array { .. })) => return Err(smp()),
            _ => None,
        }
        .ok_or_else(|| {
            RtosError::Unsupported(
                "the FreeRTOS kernel's `pxCurrentTCB` is not a pointer to a struct in DWARF".into(),
            )
        })?;
        let (ready_lists, ready_ty) = require(symbols, "pxReadyTasksLists")?;
        let (priorities, list_struct) = match ready_ty.and_then(|t| types.resolve(t)) {
            Some((_, Type::Array { element, dims })) => (
                dims.first().copied().flatten(),
                element.and_then(|e| struct_id(types, e)),
            ),
            _ => (None, None),
        };
        let (Some(priorities), Some(list_struct)) = (priorities.filter(|p| *p > 0), list_struct)
        else {
            return Err(RtosError::Unsupported(
                "the FreeRTOS kernel's `pxReadyTasksLists` is not an array of lists in DWARF"
                    .into(),
            ));
        };
        let tcb = tcb_layout(types, tcb_struct)?;
        let item_struct = types
            .member(tcb_struct, "xStateListItem")
            .and_then(|m| m.type_id)
            .and_then(|t| struct_id(types, t))
            .ok_or(RtosError::MissingMember {
                ty: "TCB_t",
                member: "xStateListItem",
            })?;
        let list = list_layout(types, list_struct, item_struct)?;
        let optional = |name| global(symbols, name).map(|(g, _)| g);
        Ok(KernelLayout {
            current_tcb,
            ready_lists,
            priorities,
            delayed: [
                require(symbols, "xDelayedTaskList1")?.0,
                require(symbols, "xDelayedTaskList2")?.0,
            ],
            pending_ready: require(symbols, "xPendingReadyList")?.0,
            termination: optional("xTasksWaitingTermination"),
            suspended: optional("xSuspendedTaskList"),
            task_count: optional("uxCurrentNumberOfTasks"),
            scheduler_running: optional("xSchedulerRunning"),
            scheduler_suspended: optional("uxSchedulerSuspended"),
            tick_count: optional("xTickCount"),
            list,
            tcb,
        })
    }

    /// The address of ready list `priority`.
    pub fn ready_list(&self, priority: u64) -> u64 {
        self.ready_lists
            .addr
            .saturating_add(priority.saturating_mul(self.list.size))
    }

    /// The kernel's globals as read ranges (one bulk read: they sit together in tasks.c's
    /// `.bss`).
    pub(crate) fn global_ranges(&self) -> Vec<(u64, u64)> {
        let mut out = vec![
            self.current_tcb.range(),
            self.ready_lists.range(),
            self.delayed[0].range(),
            self.delayed[1].range(),
            self.pending_ready.range(),
        ];
        out.extend(
            [
                self.termination,
                self.suspended,
                self.task_count,
                self.scheduler_running,
                self.scheduler_suspended,
                self.tick_count,
            ]
            .into_iter()
            .flatten()
            .map(|g| g.range()),
        );
        out
    }
}

fn smp() -> RtosError {
    RtosError::Unsupported(
        "this FreeRTOS kernel is built for several cores (pxCurrentTCBs); memlife reads \
         single-core kernels only"
            .into(),
    )
}

/// A kernel global from tasks.c, with its type.
fn global(symbols: &Symbols, name: &'static str) -> Option<(Global, Option<TypeId>)> {
    let v = symbols.variable(name, TASKS_CU)?;
    let addr = v.address?;
    let size = v
        .type_id
        .and_then(|t| symbols.types().size_of(t))
        .filter(|s| *s > 0)?;
    Some((Global { addr, size }, v.type_id))
}

fn require(symbols: &Symbols, name: &'static str) -> Result<(Global, Option<TypeId>), RtosError> {
    global(symbols, name).ok_or(RtosError::MissingSymbol {
        symbol: name,
        hint: " (is tasks.c built with -g?)",
    })
}

/// The struct a type is, through typedefs and qualifiers.
fn struct_id(types: &TypeTable, id: TypeId) -> Option<TypeId> {
    match types.resolve(id)? {
        (sid, Type::Struct { .. }) => Some(sid),
        _ => None,
    }
}

/// A member's offset and width.
fn field(types: &TypeTable, sid: TypeId, name: &str) -> Option<Field> {
    let m = types.member(sid, name)?;
    let size = types.size_of(m.type_id?)?;
    Some(Field {
        offset: m.offset,
        size,
    })
}

fn member(
    types: &TypeTable,
    sid: TypeId,
    ty: &'static str,
    name: &'static str,
) -> Result<Field, RtosError> {
    field(types, sid, name).ok_or(RtosError::MissingMember { ty, member: name })
}

fn tcb_layout(types: &TypeTable, sid: TypeId) -> Result<TcbLayout, RtosError> {
    let t = "TCB_t";
    let size = types.size_of(sid).ok_or(RtosError::MissingMember {
        ty: t,
        member: "pxTopOfStack",
    })?;
    let stack_word = types
        .member(sid, "pxStack")
        .and_then(|m| m.type_id)
        .and_then(|id| match types.resolve(id) {
            Some((_, Type::Pointer { target, .. })) => types.size_of((*target)?),
            _ => None,
        })
        .filter(|w| matches!(w, 1 | 2 | 4 | 8))
        .unwrap_or(4);
    let offset = |name: &'static str| {
        types
            .member(sid, name)
            .map(|m| m.offset)
            .ok_or(RtosError::MissingMember {
                ty: t,
                member: name,
            })
    };
    Ok(TcbLayout {
        size,
        top_of_stack: member(types, sid, t, "pxTopOfStack")?,
        state_item: offset("xStateListItem")?,
        event_item: offset("xEventListItem")?,
        priority: member(types, sid, t, "uxPriority")?,
        stack: member(types, sid, t, "pxStack")?,
        name: member(types, sid, t, "pcTaskName")?,
        end_of_stack: field(types, sid, "pxEndOfStack"),
        number: field(types, sid, "uxTCBNumber"),
        base_priority: field(types, sid, "uxBasePriority"),
        allocation: field(types, sid, "ucStaticallyAllocated"),
        notify_state: field(types, sid, "ucNotifyState"),
        mpu_settings: types.member(sid, "xMPUSettings").is_some(),
        stack_word,
    })
}

fn list_layout(
    types: &TypeTable,
    list_sid: TypeId,
    item_sid: TypeId,
) -> Result<ListLayout, RtosError> {
    let l = "List_t";
    let size = types.size_of(list_sid).ok_or(RtosError::MissingMember {
        ty: l,
        member: "xListEnd",
    })?;
    let end_member = types
        .member(list_sid, "xListEnd")
        .ok_or(RtosError::MissingMember {
            ty: l,
            member: "xListEnd",
        })?;
    let end_sid =
        end_member
            .type_id
            .and_then(|t| struct_id(types, t))
            .ok_or(RtosError::MissingMember {
                ty: "MiniListItem_t",
                member: "pxNext",
            })?;
    let first = member(types, end_sid, "MiniListItem_t", "pxNext")?.within(end_member.offset);
    let it = "ListItem_t";
    let item = ItemLayout {
        value: member(types, item_sid, it, "xItemValue")?,
        next: member(types, item_sid, it, "pxNext")?,
        previous: member(types, item_sid, it, "pxPrevious")?,
        owner: field(types, item_sid, "pvOwner"),
        container: field(types, item_sid, "pxContainer")
            .or_else(|| field(types, item_sid, "pvContainer")),
        size: types.size_of(item_sid).ok_or(RtosError::MissingMember {
            ty: it,
            member: "pxNext",
        })?,
    };
    if item.owner.is_none() {
        return Err(RtosError::MissingMember {
            ty: it,
            member: "pvOwner",
        });
    }
    Ok(ListLayout {
        size,
        count: member(types, list_sid, l, "uxNumberOfItems")?,
        end: end_member.offset,
        first,
        item,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_little_endian_words_of_their_width() {
        let bytes = [0x78, 0x56, 0x34, 0x12, 0xff];
        let f = |offset, size| Field { offset, size };
        assert_eq!(f(0, 4).read(&bytes), Some(0x1234_5678));
        assert_eq!(f(4, 1).read(&bytes), Some(0xff));
        assert_eq!(f(0, 2).read(&bytes), Some(0x5678));
        assert_eq!(f(2, 4).read(&bytes), None, "short");
        assert_eq!(f(0, 3).read(&bytes), None, "no such width");
        assert_eq!(f(u64::MAX, 4).read(&bytes), None);
        assert_eq!(f(u64::MAX - 1, 4).within(8).offset, u64::MAX);
        assert_eq!(f(1, 2).bytes(&bytes), Some(&bytes[1..3]));
    }
}
