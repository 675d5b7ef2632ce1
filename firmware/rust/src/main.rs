//! memlife's Rust demo firmware: the C firmware's model lifecycle (load, build, run, switch,
//! release) in Rust, on embedded-alloc's `LlffHeap` (feature `llff`) or `TlsfHeap` (feature
//! `tlsf`), for QEMU's `netduinoplus2`. See ../README.md ("Rust firmware").
//!
//! Without ITERATIONS (environment variable `FW_ITERATIONS` at build time) it loops forever
//! and makes no semihosting call: a debugger observes it. With ITERATIONS=N it runs N
//! lifecycles, checks the outputs and the heap as the C firmware does, prints one line and exits
//! through semihosting (status 0, or the C firmware's failure codes).
#![no_std]
#![no_main]

extern crate alloc;

mod engine;
mod heap;
mod model;
mod semihost;

use cortex_m_rt::{ExceptionFrame, entry, exception};
use engine::Engine;

include!(concat!(env!("OUT_DIR"), "/iterations.rs"));

#[cfg(not(any(feature = "llff", feature = "tlsf")))]
compile_error!("build with feature `llff` or `tlsf`");
#[cfg(all(feature = "llff", feature = "tlsf"))]
compile_error!("features `llff` and `tlsf` exclude each other");
#[cfg(not(any(
    feature = "healthy",
    feature = "leak-on-switch",
    feature = "fragmentation",
    feature = "load-peak"
)))]
compile_error!(
    "build with one scenario feature: healthy, leak-on-switch, fragmentation, load-peak"
);

const ALLOC_NAME: &str = if cfg!(feature = "llff") {
    "rust-llff"
} else {
    "rust-tlsf"
};
const SCENARIO_NAME: &str = if cfg!(feature = "leak-on-switch") {
    "leak-on-switch"
} else if cfg!(feature = "fragmentation") {
    "fragmentation"
} else if cfg!(feature = "load-peak") {
    "load-peak"
} else {
    "healthy"
};

/// Free bytes after each of the first four releases; read by a debugger too.
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static mut g_free_after_release: [u32; 4] = [0; 4];

/// Ends the run: exit code `code` in an ITERATIONS build, parked in a loop otherwise.
#[inline(never)]
fn fw_fail(why: &str, code: u32) -> ! {
    if ITERATIONS.is_some() {
        semihost::write(SCENARIO_NAME);
        semihost::write("/");
        semihost::write(ALLOC_NAME);
        semihost::write(": FAILED: ");
        semihost::write(why);
        semihost::write("\n");
        semihost::exit_fail(code);
    }
    fw_halted()
}

/// Where a looping build parks on failure.
#[inline(never)]
fn fw_halted() -> ! {
    loop {
        cortex_m::asm::nop();
    }
}

#[entry]
fn main() -> ! {
    heap::init();
    let free_start = heap::free_bytes() as u32;
    let (mut prev_free, mut leak_step) = (free_start, 0u32);
    let (mut crc_a0, mut crc_b0) = (0u32, 0u32);
    let mut free_after = [0u32; 4];
    let mut engine = Engine::default();

    let mut it: u32 = 0;
    while ITERATIONS.is_none_or(|n| it < n) {
        let e = &mut engine;
        if engine::model_load(e, &model::WAKE_WORD).is_err() {
            fw_fail("model_load", semihost::EXIT_ENGINE);
        }
        if engine::graph_build(e).is_err() {
            fw_fail("graph_build", semihost::EXIT_ENGINE);
        }
        if engine::inference_run(e).is_err() {
            fw_fail("inference_run (A)", semihost::EXIT_ENGINE);
        }
        let crc_a = e.output_crc;
        if engine::model_switch(e, &model::COMMAND_WORD).is_err() {
            fw_fail("model_switch", semihost::EXIT_ENGINE);
        }
        if engine::inference_run(e).is_err() {
            fw_fail("inference_run (B)", semihost::EXIT_ENGINE);
        }
        let crc_b = e.output_crc;
        // The allocator's own figures right before the call: nothing allocates in between.
        heap::firmware_view_capture();
        if heap::firmware_view_captures() != it + 1 {
            fw_fail("view captures != iteration", semihost::EXIT_HEAP);
        }
        if engine::model_release(e).is_err() {
            fw_fail("model_release", semihost::EXIT_ENGINE);
        }

        // Same input, same weights: any difference is memory corruption.
        if it == 0 {
            (crc_a0, crc_b0) = (crc_a, crc_b);
            if crc_a == crc_b {
                fw_fail("models give identical output", semihost::EXIT_OUTPUT);
            }
        } else if crc_a != crc_a0 || crc_b != crc_b0 {
            fw_fail(
                "wrong inference output (CRC differs from iteration 1)",
                semihost::EXIT_OUTPUT,
            );
        }

        let free = heap::free_bytes() as u32;
        if it < 4 {
            free_after[it as usize] = free;
            let published = &raw mut g_free_after_release;
            // SAFETY: single-threaded; only main writes it.
            unsafe { published.write(free_after) };
        }
        if ITERATIONS.is_some() {
            if cfg!(feature = "leak-on-switch") {
                // The bug must show as the same drop on every switch. TLSF's `free()` is the sum
                // of its free blocks less an 8-byte header each: where the leaked blocks land
                // changes how many free blocks there are, so its drop may move by a header or
                // two (816-832 B here).
                let step = prev_free.saturating_sub(free);
                let slack = if cfg!(feature = "tlsf") { 16 } else { 0 };
                if step == 0 || (it > 0 && step.abs_diff(leak_step) > slack) {
                    fw_fail("leak is not constant per switch", semihost::EXIT_HEAP);
                }
                leak_step = step;
            } else if cfg!(feature = "fragmentation") {
                if it > 0 && free != free_after[0] {
                    fw_fail("free after release not constant", semihost::EXIT_HEAP);
                }
            } else if free != free_start {
                fw_fail(
                    "heap not back to baseline after model_release",
                    semihost::EXIT_HEAP,
                );
            }
        }
        prev_free = free;
        it = it.wrapping_add(1);
    }

    semihost::write(SCENARIO_NAME);
    semihost::write("/");
    semihost::write(ALLOC_NAME);
    semihost::write(": ");
    semihost::write_dec(it);
    semihost::write(" lifecycles ok, output crc ");
    semihost::write_hex(crc_a0);
    semihost::write("/");
    semihost::write_hex(crc_b0);
    semihost::write(", free after release ");
    semihost::write_dec(heap::free_bytes() as u32);
    if cfg!(feature = "leak-on-switch") {
        semihost::write(" (leak per switch ");
        semihost::write_dec(leak_step);
        semihost::write(")");
    }
    semihost::write("\n");
    semihost::exit_ok()
}

/// A panic ends the run; an allocation failure (which stable Rust reports as a panic,
/// "memory allocation of N bytes failed") with exit code 2, the C firmware's `fw_oom`.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    use core::fmt::Write;
    let mut text = semihost::Line::new();
    let _ = write!(text, "{}", info.message());
    if text.as_str().starts_with("memory allocation of") {
        fw_fail(text.as_str(), semihost::EXIT_OOM)
    }
    fw_fail(text.as_str(), semihost::EXIT_ENGINE)
}

#[exception]
unsafe fn HardFault(_: &ExceptionFrame) -> ! {
    fw_fail("HardFault", 3)
}
