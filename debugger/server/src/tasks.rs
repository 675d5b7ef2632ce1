//! `monitor tasks`: every FreeRTOS task as `memlife tasks` prints it (memlife-rtos's table),
//! with the heap blocks that hold their TCBs and stacks when the heap can be walked. Memory is
//! read as it is (the task-exit return address is not hidden here).

use memlife_core::cortex_m::CoreRegisters;
use memlife_rtos::FreeRtos;

use crate::bridge::Bridge;
use crate::error::{Context, Result, ServeError};

impl Bridge {
    /// `monitor tasks`.
    pub(crate) fn tasks_table(&mut self) -> Result<String> {
        self.ensure_halted().context("halting the target")?;
        let kernel = match &self.threads {
            Some(t) => t.kernel.clone(),
            None => FreeRtos::from_symbols(&self.symbols).map_err(|source| ServeError::Rtos {
                context: "no FreeRTOS tasks to read".into(),
                source,
            })?,
        };
        // Without the core's registers the saved contexts are still read.
        let core = CoreRegisters::read(self.target.as_mut()).ok();
        let mut snap = kernel
            .read_tasks(self.target.as_memory(), core.as_ref())
            .map_err(|source| ServeError::Rtos {
                context: "reading the FreeRTOS tasks".into(),
                source,
            })?;
        // A firmware whose heap memlife cannot walk (static tasks only) still gets its tasks.
        let heap = self.walk();
        if let Ok(h) = &heap {
            snap.attribute_heap(&h.state);
        }
        snap.annotate(&self.symbols);
        let mut text = memlife_rtos::render::text(&snap);
        if let Err(e) = &heap {
            text.push_str(&format!("\nheap not walked: {}\n", crate::error::chain(e)));
        }
        Ok(text)
    }
}
