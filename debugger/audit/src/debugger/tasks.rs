//! What the task observer knows, as scripts read it: whether the firmware has tasks, a heap
//! walk told apart by task, and which of a walk's blocks are leak candidates at all (not a
//! listed task's TCB or stack, and inside the lifecycle's scope when its roles are limited to
//! a task or a caller).

use std::collections::BTreeSet;

use memlife_heap::HeapState;

use super::facade::Debugger;
use crate::error::AuditError;
use crate::observers::TaskObserver;
use crate::observers::tasks::{ByTask, by_task};

impl Debugger {
    /// Whether the firmware's tasks are known (a FreeRTOS kernel memlife reads).
    pub fn has_tasks(&self) -> bool {
        self.observer::<TaskObserver>()
            .is_some_and(TaskObserver::has_kernel)
    }

    /// `state` (a walk of this stop) by task: traced blocks by the task that allocated them,
    /// the others by the task whose TCB or stack they hold. `None` without tasks.
    pub fn heap_by_task(&mut self, state: &HeapState) -> Result<Option<ByTask>, AuditError> {
        let Some(tasks) = self.extensions.find::<TaskObserver>() else {
            return Ok(None);
        };
        let Some(kernel) = tasks.kernel() else {
            return Ok(None);
        };
        let blocks = kernel.task_blocks(self.session.memory(), state)?;
        Ok(Some(by_task(state, Some(tasks.book()), &blocks)))
    }

    /// The blocks of `state` that hold the TCB or the stack of a task the kernel lists now:
    /// never leaks. Empty without tasks.
    pub fn listed_task_blocks(&mut self, state: &HeapState) -> Result<BTreeSet<u64>, AuditError> {
        let Some(kernel) = self
            .extensions
            .find::<TaskObserver>()
            .and_then(TaskObserver::kernel)
        else {
            return Ok(BTreeSet::new());
        };
        Ok(kernel
            .task_blocks(self.session.memory(), state)?
            .into_iter()
            .map(|b| b.block.addr)
            .collect())
    }

    /// The task that allocated the live block at `addr` of `size` bytes, when traced.
    pub fn block_task(&self, addr: u64, size: u64) -> Option<&str> {
        self.observer::<TaskObserver>()?
            .book()
            .owner(addr, size)
            .map(|o| o.task.as_str())
    }

    /// Whether the block at `addr` of `size` bytes, allocated by event `seq` (when traced), is
    /// within the lifecycle's scope: with roles limited to tasks, allocated by one of them;
    /// with roles limited to callers, allocated while such a phase was open. Without scopes,
    /// every block is.
    pub fn in_leak_scope(&self, addr: u64, size: u64, seq: Option<u64>) -> bool {
        let config = &self.settings.config;
        if config.scopes.is_empty() {
            return true;
        }
        let task = self.block_task(addr, size);
        let phase = seq.and_then(|s| {
            let events = self.trace.events();
            let i = events.binary_search_by_key(&s, |e| e.seq).ok()?;
            events.get(i)?.phase.clone()
        });
        config.scopes.iter().any(|(role, scope)| {
            let by_task = scope.task.as_deref().is_some_and(|t| task == Some(t));
            let by_caller = scope.caller.is_some()
                && phase.as_deref() == config.phases.get(role).map(String::as_str);
            by_task || by_caller
        })
    }
}
