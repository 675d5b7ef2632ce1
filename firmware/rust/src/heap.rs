//! The global allocator: embedded-alloc's `LlffHeap` (feature `llff`, linked_list_allocator)
//! or `TlsfHeap` (feature `tlsf`, rlsf), over a 96 KiB pool as the C firmware's heaps, and
//! `g_firmware_view`: the allocator's own figures right before each `model_release`.

#[cfg(feature = "llff")]
use embedded_alloc::LlffHeap as Heap;
#[cfg(feature = "tlsf")]
use embedded_alloc::TlsfHeap as Heap;

/// The pool's size: the C firmware's `configTOTAL_HEAP_SIZE`.
pub const HEAP_SIZE: usize = 98304;

#[global_allocator]
static HEAP: Heap = Heap::empty();

/// What the allocator's own API says; `captures` first, as the C firmware's view (see
/// ../../src/firmware_view.h): at the Nth stop at `model_release`'s entry, `captures == N` and
/// the other fields are what `HEAP.used()` / `HEAP.free()` return at that moment.
#[repr(C)]
pub struct FirmwareView {
    pub captures: u32,
    pub used: usize,
    pub free: usize,
}

#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static mut g_firmware_view: FirmwareView = FirmwareView {
    captures: 0,
    used: 0,
    free: 0,
};

/// Gives the allocator its pool; call once, before anything allocates.
#[cfg(feature = "llff")]
pub fn init() {
    // The crate's own macro, as its users write it: a `static mut HEAP_MEM` byte array.
    // SAFETY: called once, first thing in main.
    unsafe {
        embedded_alloc::init!(HEAP, HEAP_SIZE);
    }
}

/// Gives the allocator its pool; call once, before anything allocates.
#[cfg(feature = "tlsf")]
pub fn init() {
    /// 16-aligned: embedded-alloc 0.7.0's `TlsfHeap::free()` walks past rlsf's sentinel (and
    /// panics) when the pool's start and size do not fall on 16-byte granules.
    #[repr(C, align(16))]
    struct Pool([core::mem::MaybeUninit<u8>; HEAP_SIZE]);
    static mut HEAP_MEM: Pool = Pool([core::mem::MaybeUninit::uninit(); HEAP_SIZE]);
    // SAFETY: called once, first thing in main; the pool is used by nothing else.
    unsafe {
        HEAP.init(&raw mut HEAP_MEM as usize, HEAP_SIZE);
    }
}

/// Free bytes as the allocator counts them.
pub fn free_bytes() -> usize {
    HEAP.free()
}

/// Used bytes as the allocator counts them. embedded-alloc 0.7.0's `TlsfHeap::used()` borrows
/// its RefCell twice and always panics ("already borrowed"), so for TLSF this is its own
/// definition, pool size minus `free()`, computed here.
pub fn used_bytes() -> usize {
    #[cfg(feature = "llff")]
    {
        HEAP.used()
    }
    #[cfg(feature = "tlsf")]
    {
        HEAP_SIZE - HEAP.free()
    }
}

/// Fills `g_firmware_view` and counts the capture.
#[inline(never)]
pub fn firmware_view_capture() {
    let (used, free) = (used_bytes(), free_bytes());
    // SAFETY: single-threaded firmware; nothing else touches the view.
    unsafe {
        let view = &raw mut g_firmware_view;
        (*view).used = used;
        (*view).free = free;
        (*view).captures += 1;
    }
}

/// Captures so far.
pub fn firmware_view_captures() -> u32 {
    let view = &raw const g_firmware_view;
    // SAFETY: as above.
    unsafe { (*view).captures }
}
