//! Which FreeRTOS port the firmware was built with, as far as its saved contexts go: with or
//! without the FPU context (docs/rtos.md, "Which port"). From the ELF and DWARF, in this
//! order:
//!
//! 1. not an ARM image, an MPU port (`xMPUSettings` in the TCB), or a port whose context
//!    switch is in a `portasm.c` (`vStartFirstTask`: the ARMv8-M ports, and ARM_CM0 in
//!    V11.2.0, which save `EXC_RETURN` first and, on ARMv8-M, PSPLIM): no layout, tasks are listed
//!    without their saved registers;
//! 2. `vPortEnableVFP` in the symbol table: the ARM_CM4F and ARM_CM7 ports, which save
//!    `EXC_RETURN` and, when the task used the FPU, s16..s31;
//! 3. the path of the compile unit that defines the port's `uxCriticalNesting` (DWARF), when
//!    it names the port's folder (`portable/GCC/ARM_CM4F/port.c`);
//! 4. otherwise the ARM_CM3 layout.
//!
//! A wrong guess does not go unnoticed: every decoded frame is checked (an `EXC_RETURN` where
//! the FPU ports keep it, the Thumb bit in the stacked xPSR), and a frame that fails is an
//! anomaly.

use memlife_dwarf::{Machine, Symbols};

use crate::frame::ContextLayout;

/// The port as detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// The saved-context layout; `None` when memlife does not decode this port's contexts.
    pub layout: Option<ContextLayout>,
    /// The port's folder name (`ARM_CM4F`), when the compile unit's path gives it.
    pub name: Option<String>,
    /// How it was decided, in words.
    pub evidence: String,
}

/// Port folders whose contexts have the FPU layout, and those with the plain one.
const FPU_PORTS: &[&str] = &["ARM_CM4F", "ARM_CM7"];
const PLAIN_PORTS: &[&str] = &["ARM_CM3"];

impl Port {
    /// Detects the port from the ELF's symbols and DWARF (see the module doc).
    pub fn detect(symbols: &Symbols, tcb_has_mpu_settings: bool) -> Port {
        let name = port_folder(symbols);
        let unsupported = |evidence: String| Port {
            layout: None,
            name: name.clone(),
            evidence,
        };
        if symbols.machine() != Machine::Arm {
            return unsupported(format!(
                "{} image: memlife decodes the saved contexts of Cortex-M ports only",
                symbols.machine()
            ));
        }
        if tcb_has_mpu_settings {
            return unsupported(
                "MPU port (xMPUSettings in the TCB): its saved context is not decoded".into(),
            );
        }
        if symbols.elf_symbol("vStartFirstTask").is_some() {
            return unsupported(
                "a port with portasm.c (vStartFirstTask: ARMv8-M, or ARM_CM0 in V11.2.0): its \
                 saved context is not decoded"
                    .into(),
            );
        }
        if symbols.elf_symbol("vPortEnableVFP").is_some() {
            return Port {
                layout: Some(ContextLayout::Fpu),
                name,
                evidence: "vPortEnableVFP is in the symbol table (ARM_CM4F/ARM_CM7 port: \
                           EXC_RETURN and the FPU context are saved)"
                    .into(),
            };
        }
        match name.as_deref() {
            Some(folder) if FPU_PORTS.contains(&folder) => Port {
                layout: Some(ContextLayout::Fpu),
                evidence: format!("port.c's compile unit is in {folder}"),
                name,
            },
            Some(folder) if PLAIN_PORTS.contains(&folder) => Port {
                layout: Some(ContextLayout::NoFpu),
                evidence: format!("port.c's compile unit is in {folder}"),
                name,
            },
            _ => Port {
                layout: Some(ContextLayout::NoFpu),
                name,
                evidence: "no vPortEnableVFP in the symbol table: a port without FPU context \
                           (ARM_CM3 layout)"
                    .into(),
            },
        }
    }

    /// Whether the port's contexts carry `EXC_RETURN` and the FPU registers.
    pub fn saves_fpu_context(&self) -> Option<bool> {
        self.layout.map(|l| l == ContextLayout::Fpu)
    }
}

/// The `ARM_CMx` folder in the path of the compile unit that defines the port's
/// `uxCriticalNesting` (a file static of every Cortex-M port.c; ARM_CM7's is in
/// `ARM_CM7/r0p1/`).
fn port_folder(symbols: &Symbols) -> Option<String> {
    symbols.variables_named("uxCriticalNesting").find_map(|v| {
        let mut parts = v.cu.rsplit(['/', '\\']);
        if parts.next()? != "port.c" {
            return None;
        }
        parts
            .take(2)
            .find(|p| p.starts_with("ARM_CM"))
            .map(str::to_string)
    })
}
