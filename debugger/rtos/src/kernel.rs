//! [`FreeRtos`]: the kernel found in an ELF, with its layout, port and stack fill resolved once.
//! Reading its tasks is `walk`'s ([`FreeRtos::read_tasks`]); who runs now is `current`'s
//! ([`FreeRtos::running`]).

use memlife_dwarf::Symbols;

use crate::{KernelLayout, Port, RtosError, StackFill};

/// A FreeRTOS kernel found in an ELF, with its layout and port resolved.
#[derive(Debug, Clone)]
pub struct FreeRtos {
    pub(crate) layout: KernelLayout,
    pub(crate) port: Port,
    pub(crate) stack_fill: StackFill,
}

impl FreeRtos {
    /// Finds the kernel in the ELF's DWARF. [`RtosError::NotFound`] when there is none;
    /// another error when it is there but memlife cannot read it (naming what is missing).
    pub fn from_symbols(symbols: &Symbols) -> Result<FreeRtos, RtosError> {
        let layout = KernelLayout::from_symbols(symbols)?;
        let port = Port::detect(symbols, layout.tcb.mpu_settings);
        let stack_fill = configured_fill(symbols, &layout);
        tracing::debug!(?port, ?stack_fill, "FreeRTOS kernel found");
        Ok(FreeRtos {
            layout,
            port,
            stack_fill,
        })
    }

    /// A kernel from a layout and port resolved elsewhere (a test's synthetic kernel, a layout
    /// kept from an earlier load).
    pub fn from_parts(layout: KernelLayout, port: Port, stack_fill: StackFill) -> FreeRtos {
        FreeRtos {
            layout,
            port,
            stack_fill,
        }
    }

    /// Whether the ELF has a FreeRTOS kernel at all (`pxCurrentTCB`), without resolving it.
    pub fn present(symbols: &Symbols) -> bool {
        symbols.has_symbol("pxCurrentTCB") || symbols.has_symbol("pxCurrentTCBs")
    }

    /// The resolved layout.
    pub fn layout(&self) -> &KernelLayout {
        &self.layout
    }

    /// The port.
    pub fn port(&self) -> &Port {
        &self.port
    }

    /// Whether the kernel fills new stacks with 0xa5, as far as the build tells.
    pub fn stack_fill(&self) -> StackFill {
        self.stack_fill
    }
}

/// What the build says about the 0xa5 fill of new stacks: tasks.c fills them when the trace
/// facility, `INCLUDE_uxTaskGetStackHighWaterMark(2)` or stack-overflow checking method 2 is
/// configured; the first two leave marks in the ELF.
fn configured_fill(symbols: &Symbols, layout: &KernelLayout) -> StackFill {
    if layout.tcb.number.is_some() {
        StackFill::Configured("configUSE_TRACE_FACILITY (uxTCBNumber is in the TCB)")
    } else if symbols.has_symbol("uxTaskGetStackHighWaterMark")
        || symbols.has_symbol("uxTaskGetStackHighWaterMark2")
    {
        StackFill::Configured("uxTaskGetStackHighWaterMark is linked")
    } else {
        StackFill::Unknown
    }
}
