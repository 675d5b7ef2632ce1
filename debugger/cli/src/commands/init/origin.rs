//! Whose code a function is: the firmware's own application, or one of the libraries and
//! frameworks it links. `memlife init` proposes only application functions for a lifecycle
//! role: a framework's `Init`, `Prepare` or `Invoke` runs inside the application's phases, and
//! taking one for a phase folds a whole run into one "cycle" or breaks on every operator.
//!
//! The rules, first match wins:
//!
//! 1. **Namespace** (the demangled name's first scope): `tflite` is TensorFlow Lite Micro;
//!    `flatbuffers`, `gemmlowp`, `ruy`, `Eigen` the libraries it ships with; `std`,
//!    `__gnu_cxx`, `__cxxabiv1` the C++ library; Rust's `core`, `alloc`, `std` and
//!    `compiler_builtins` its standard crates.
//! 2. **Source file** (DWARF: the file of the function's first line), by path components, so
//!    that a project folder named `stm32-demo` is not a HAL: `tensorflow/lite/`, `tflite-micro`
//!    (TFLM), `flatbuffers`, `gemmlowp`, `ruy`, `kissfft`/`kiss_fft*` (KISS FFT), `CMSIS*`
//!    (CMSIS core, DSP and NN), vendor HALs (`Drivers/STM32*`, `stm32*_hal*`/`stm32*_ll_*`,
//!    `system_*`/`startup_*` files, `nrfx`, `esp-idf`, NXP's `fsl_*`), the FreeRTOS kernel
//!    (`tasks.c`, `queue.c`, `list.c`, `timers.c`, `event_groups.c`, `stream_buffer.c`,
//!    `croutine.c`, `port.c`, `mpu_wrappers.c` under a folder named FreeRTOS, anything under
//!    `portable/`, and `heap_1.c` .. `heap_5.c`), newlib and picolibc, libgcc, libstdc++
//!    (also its headers under `include/c++`), the Rust toolchain (`/rustc/`), packages from a
//!    cargo registry or git checkout (`.cargo/registry`, `.cargo/git`), and anything under
//!    `/usr/`.
//! 3. **Names**: FreeRTOS trace hooks (`xTrace*`, `vTrace*`, `prvTrace*`); when the image holds
//!    the FreeRTOS kernel, its API naming (`x`, `v`, `ux`, `pv`, `prv`, `pc`, `px`, `ul`, `uc`
//!    and a capital: `vTaskDelay`, `pvPortMalloc`, `prvIdleTask`), which the kernel's hooks
//!    and ports share; STM32 HAL and LL (`HAL_*`, `LL_*`), CMSIS (`SystemInit`,
//!    `SystemCoreClockUpdate`, `NVIC_*`, `__NVIC_*`); the startup code and exception handlers
//!    (`*_Handler`, `*_IRQHandler`, `*Handler` in FreeRTOS ports, `Reset_Handler`), which never
//!    return to a caller.
//!
//! Everything else is the application, this repository's own `tinyml::` interpreter included.

use std::fmt;

/// A library or framework a firmware links, as init names it in its comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Framework {
    /// TensorFlow Lite Micro.
    Tflm,
    /// FlatBuffers (TFLM's model format).
    Flatbuffers,
    /// gemmlowp, ruy, Eigen: the math libraries TFLM's kernels use.
    MathLibrary,
    /// KISS FFT (TFLM's audio front end).
    KissFft,
    /// CMSIS core, CMSIS-DSP, CMSIS-NN.
    Cmsis,
    /// A vendor's HAL or SDK (STM32Cube, nrfx, ESP-IDF, NXP MCUXpresso).
    VendorHal,
    /// The FreeRTOS kernel and its port.
    RtosKernel,
    /// An RTOS trace recorder's hooks.
    RtosTrace,
    /// Startup code and exception handlers.
    Startup,
    /// The C library (newlib, picolibc).
    CLibrary,
    /// The compiler's runtime (libgcc).
    CompilerRuntime,
    /// The C++ standard library.
    CxxLibrary,
    /// Rust's standard crates.
    RustStd,
    /// A package from a cargo registry or git checkout.
    RegistryPackage,
    /// Files under `/usr/` (the toolchain's headers and libraries).
    System,
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Framework::Tflm => "TensorFlow Lite Micro",
            Framework::Flatbuffers => "FlatBuffers",
            Framework::MathLibrary => "gemmlowp/ruy/Eigen",
            Framework::KissFft => "KISS FFT",
            Framework::Cmsis => "CMSIS",
            Framework::VendorHal => "a vendor HAL",
            Framework::RtosKernel => "the FreeRTOS kernel",
            Framework::RtosTrace => "RTOS trace hooks",
            Framework::Startup => "startup code and exception handlers",
            Framework::CLibrary => "the C library",
            Framework::CompilerRuntime => "the compiler's runtime",
            Framework::CxxLibrary => "the C++ library",
            Framework::RustStd => "Rust's standard library",
            Framework::RegistryPackage => "packages from the cargo registry",
            Framework::System => "files under /usr",
        })
    }
}

/// Whose code a function is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The firmware's own.
    Application,
    /// A library's or framework's, and the rule that said so.
    Framework(Framework, &'static str),
}

/// Classifies functions by the rules in the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Classifier {
    /// The image holds the FreeRTOS kernel: its API naming marks kernel code.
    pub freertos: bool,
}

impl Classifier {
    /// The origin of the function `name` (demangled) whose first line is in `file`.
    pub fn origin(&self, name: &str, file: &str) -> Origin {
        if let Some(o) = by_namespace(name) {
            return o;
        }
        if let Some(o) = by_file(file) {
            return o;
        }
        self.by_name(name).unwrap_or(Origin::Application)
    }

    fn by_name(&self, name: &str) -> Option<Origin> {
        if name.contains("::") {
            return None;
        }
        let base = dwarf_base(name);
        if ["xTrace", "vTrace", "prvTrace"]
            .iter()
            .any(|p| capital_after(base, p))
        {
            return Some(Origin::Framework(
                Framework::RtosTrace,
                "a trace hook's name",
            ));
        }
        if base.ends_with("Handler") || base == "Reset_Handler" {
            return Some(Origin::Framework(
                Framework::Startup,
                "an exception handler's name",
            ));
        }
        if self.freertos
            && ["x", "v", "ux", "pv", "prv", "pc", "px", "ul", "uc"]
                .iter()
                .any(|p| capital_after(base, p))
        {
            return Some(Origin::Framework(
                Framework::RtosKernel,
                "FreeRTOS API naming",
            ));
        }
        if base.starts_with("HAL_") || base.starts_with("LL_") {
            return Some(Origin::Framework(Framework::VendorHal, "a HAL name"));
        }
        if matches!(base, "SystemInit" | "SystemCoreClockUpdate")
            || base.starts_with("NVIC_")
            || base.starts_with("__NVIC_")
        {
            return Some(Origin::Framework(Framework::Cmsis, "a CMSIS name"));
        }
        None
    }
}

/// `name` without its parameter list.
fn dwarf_base(name: &str) -> &str {
    memlife_dwarf::demangle::without_params(name)
}

/// Whether `name` is `prefix` followed by a capital letter (`vTaskDelay` for `v`).
fn capital_after(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_uppercase())
}

/// Rule 1: the first scope of a qualified name.
fn by_namespace(name: &str) -> Option<Origin> {
    let base = dwarf_base(name);
    let base = base.strip_prefix('<').unwrap_or(base);
    let (first, _) = base.split_once("::")?;
    let framework = match first {
        "tflite" | "tflite_micro" => Framework::Tflm,
        "flatbuffers" => Framework::Flatbuffers,
        "gemmlowp" | "ruy" | "Eigen" => Framework::MathLibrary,
        "std" | "__gnu_cxx" | "__cxxabiv1" | "__gnu_debug" => Framework::CxxLibrary,
        "core" | "alloc" | "compiler_builtins" | "panic_halt" | "panic_abort" => Framework::RustStd,
        _ => return None,
    };
    Some(Origin::Framework(framework, "its namespace"))
}

/// FreeRTOS's kernel sources by file name (with a FreeRTOS folder on the path).
const FREERTOS_FILES: &[&str] = &[
    "tasks.c",
    "queue.c",
    "list.c",
    "timers.c",
    "event_groups.c",
    "stream_buffer.c",
    "croutine.c",
    "port.c",
    "mpu_wrappers.c",
];

/// Rule 2: the source file's path components.
fn by_file(file: &str) -> Option<Origin> {
    let lower = file.replace('\\', "/").to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('/').filter(|p| !p.is_empty()).collect();
    let name = parts.last().copied().unwrap_or("");
    let dirs = &parts[..parts.len().saturating_sub(1)];
    let has_dir = |d: &str| dirs.contains(&d);
    let has_seq = |a: &str, b: &str| {
        dirs.windows(2)
            .any(|w| matches!(w, [x, y] if *x == a && *y == b))
    };
    let framework = if has_seq("tensorflow", "lite") || dirs.iter().any(|d| d.starts_with("tflite"))
    {
        Framework::Tflm
    } else if dirs.iter().any(|d| d.starts_with("flatbuffers")) {
        Framework::Flatbuffers
    } else if dirs
        .iter()
        .any(|d| d.starts_with("gemmlowp") || *d == "ruy" || d.starts_with("eigen"))
    {
        Framework::MathLibrary
    } else if dirs
        .iter()
        .any(|d| d.starts_with("kissfft") || d.starts_with("kiss_fft"))
        || name.starts_with("kiss_fft")
    {
        Framework::KissFft
    } else if dirs.iter().any(|d| d.starts_with("cmsis")) {
        Framework::Cmsis
    } else if is_vendor_hal(dirs, name) {
        Framework::VendorHal
    } else if is_freertos_kernel(dirs, name) {
        Framework::RtosKernel
    } else if has_dir("newlib") || has_dir("picolibc") || has_dir("libgloss") {
        Framework::CLibrary
    } else if has_dir("libgcc") || has_seq("gcc", "config") || has_dir("compiler-rt") {
        Framework::CompilerRuntime
    } else if dirs
        .iter()
        .any(|d| d.starts_with("libstdc++") || *d == "libsupc++")
        || has_seq("include", "c++")
    {
        Framework::CxxLibrary
    } else if lower.starts_with("/rustc/") {
        Framework::RustStd
    } else if has_seq(".cargo", "registry")
        || has_seq(".cargo", "git")
        || has_seq("registry", "src")
    {
        Framework::RegistryPackage
    } else if lower.starts_with("/usr/") {
        Framework::System
    } else {
        return None;
    };
    Some(Origin::Framework(framework, "its source file"))
}

fn is_vendor_hal(dirs: &[&str], name: &str) -> bool {
    let stm32_driver = dirs
        .windows(2)
        .any(|w| matches!(w, [d, s] if *d == "drivers" && s.starts_with("stm32")));
    let stm32_file = name.starts_with("stm32") && (name.contains("_hal") || name.contains("_ll_"));
    let startup =
        (name.starts_with("system_") || name.starts_with("startup_")) && name.contains("stm32");
    stm32_driver
        || stm32_file
        || startup
        || dirs.contains(&"nrfx")
        || dirs.iter().any(|d| d.starts_with("esp-idf"))
        || dirs.iter().any(|d| d.starts_with("mcux"))
        || name.starts_with("fsl_")
}

fn is_freertos_kernel(dirs: &[&str], name: &str) -> bool {
    let in_freertos = dirs.iter().any(|d| d.contains("freertos"));
    let heap_n = name
        .strip_prefix("heap_")
        .and_then(|r| r.strip_suffix(".c"))
        .is_some_and(|n| matches!(n, "1" | "2" | "3" | "4" | "5"));
    heap_n || dirs.contains(&"portable") || (in_freertos && FREERTOS_FILES.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framework(c: &Classifier, name: &str, file: &str) -> Option<Framework> {
        match c.origin(name, file) {
            Origin::Application => None,
            Origin::Framework(f, _) => Some(f),
        }
    }

    const REGISTRY: &str = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f";

    #[test]
    fn tflm_by_namespace_and_by_file() {
        let c = Classifier::default();
        // The function the TFLM firmware had taken for load, and the 2020 layout's.
        assert_eq!(
            framework(
                &c,
                "tflite::MicroInterpreterGraph::InitSubgraphs()",
                "tflite-micro/tensorflow/lite/micro/micro_interpreter_graph.cc"
            ),
            Some(Framework::Tflm)
        );
        assert_eq!(
            framework(
                &c,
                "tflite::MicroAllocator::InitGraphAndContextTensorData()",
                &format!(
                    "{REGISTRY}/tfmicro-0.1.0/submodules/tensorflow/tensorflow/lite/micro/micro_allocator.cc"
                )
            ),
            Some(Framework::Tflm)
        );
        // A C function of TFLM (no namespace) by its file.
        assert_eq!(
            framework(
                &c,
                "TfLiteIntArrayCreate",
                "third_party/tensorflow/lite/c/common.c"
            ),
            Some(Framework::Tflm)
        );
        assert_eq!(
            framework(
                &c,
                "flatbuffers::Verifier::VerifyVectorOrString(unsigned char const*, unsigned int, unsigned int*) const",
                "app/main.cc"
            ),
            Some(Framework::Flatbuffers)
        );
        assert_eq!(
            framework(&c, "kiss_fft_stride", "third_party/kissfft/kiss_fft.c"),
            Some(Framework::KissFft)
        );
        assert_eq!(
            framework(
                &c,
                "arm_convolve_s8",
                "CMSIS-NN/Source/ConvolutionFunctions/arm_convolve_s8.c"
            ),
            Some(Framework::Cmsis)
        );
    }

    #[test]
    fn the_application_including_its_own_interpreter_and_tflm_callers() {
        let c = Classifier { freertos: true };
        for (name, file) in [
            (
                "app::LoadModel(app::ModelSpec const&)",
                "tflm/app/lifecycle.cpp",
            ),
            (
                "fw::ReadModelImage()",
                "/home/me/stm32-demo/src/model_io.cc",
            ),
            (
                "tinyml::Model::Open(tinyml::ModelImage const&)",
                "cpp/tinyml/model.cpp",
            ),
            ("model_load", "src/engine.c"),
            ("infer_task", "rtos/task_infer.c"),
            // A file named like a kernel file, outside any FreeRTOS folder.
            ("queue_push", "app/queue.c"),
            (
                "memlife_fw::engine::graph_build",
                "firmware/rust/src/engine.rs",
            ),
        ] {
            assert_eq!(
                c.origin(name, file),
                Origin::Application,
                "{name} in {file}"
            );
        }
    }

    #[test]
    fn the_freertos_kernel_its_port_its_naming_and_trace_hooks() {
        let rtos = Classifier { freertos: true };
        assert_eq!(
            framework(&rtos, "vTaskSwitchContext", "build/FreeRTOS-Kernel/tasks.c"),
            Some(Framework::RtosKernel)
        );
        assert_eq!(
            framework(
                &rtos,
                "vPortSetupTimerInterrupt",
                "FreeRTOS/Source/portable/GCC/ARM_CM3/port.c"
            ),
            Some(Framework::RtosKernel)
        );
        assert_eq!(
            framework(&rtos, "pvPortMalloc", "Source/portable/MemMang/heap_4.c"),
            Some(Framework::RtosKernel)
        );
        // The demo's own file, FreeRTOS naming.
        assert_eq!(
            framework(
                &rtos,
                "prvSetupHardware",
                "Demo/CORTEX_MPS2_QEMU_IAR_GCC/main.c"
            ),
            Some(Framework::RtosKernel)
        );
        // A trace hook, in the application's file, with or without the kernel.
        for c in [rtos, Classifier::default()] {
            assert_eq!(
                framework(&c, "xTraceTaskSwitch", "rtos/app.c"),
                Some(Framework::RtosTrace)
            );
            assert_eq!(
                framework(&c, "vTraceStoreISRBegin", "TraceRecorder/trcKernelPort.c"),
                Some(Framework::RtosTrace)
            );
        }
        // Without the kernel, a name that merely looks like its API is the application's.
        assert_eq!(
            framework(&Classifier::default(), "vDecode", "src/codec.c"),
            None
        );
        assert_eq!(
            framework(&rtos, "SysTick_Handler", "src/startup.c"),
            Some(Framework::Startup)
        );
    }

    #[test]
    fn c_and_cxx_libraries_hals_and_registries() {
        let c = Classifier::default();
        for (name, file, want) in [
            (
                "memset",
                "../../../../../../../../newlib/libc/string/memset.c",
                Framework::CLibrary,
            ),
            (
                "__udivmoddi4",
                "../../../../../../libgcc/libgcc2.c",
                Framework::CompilerRuntime,
            ),
            (
                "std::__throw_bad_alloc()",
                "libstdc++-v3/src/c++11/functexcept.cc",
                Framework::CxxLibrary,
            ),
            (
                "operator new(unsigned int)",
                "/build/gcc/libstdc++-v3/libsupc++/new_op.cc",
                Framework::CxxLibrary,
            ),
            (
                "HAL_Init",
                "Drivers/STM32F4xx_HAL_Driver/Src/stm32f4xx_hal.c",
                Framework::VendorHal,
            ),
            ("HAL_UART_Transmit", "Core/Src/uart.c", Framework::VendorHal),
            (
                "SystemInit",
                "Core/Src/system_stm32f4xx.c",
                Framework::VendorHal,
            ),
            ("SystemInit", "src/system.c", Framework::Cmsis),
            (
                "embedded_alloc::Heap::init",
                &format!("{REGISTRY}/embedded-alloc-0.6.0/src/lib.rs"),
                Framework::RegistryPackage,
            ),
            (
                "core::fmt::write",
                "/rustc/abc/library/core/src/fmt/mod.rs",
                Framework::RustStd,
            ),
            (
                "some_init",
                "/usr/lib/gcc/arm-none-eabi/13/include/x.h",
                Framework::System,
            ),
        ] {
            assert_eq!(framework(&c, name, file), Some(want), "{name} in {file}");
        }
    }
}
