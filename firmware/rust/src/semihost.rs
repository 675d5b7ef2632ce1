//! The three semihosting calls an exiting (ITERATIONS) build needs, as in the C firmware's
//! semihost.c: SYS_WRITE0 for its one report line, SYS_EXIT for success and
//! SYS_EXIT_EXTENDED {ApplicationExit, code} for a failure, which QEMU turns into its exit
//! status. Looping builds never call them (no debugger is needed to run those).

const SYS_WRITE0: u32 = 0x04;
const SYS_EXIT: u32 = 0x18;
const SYS_EXIT_EXTENDED: u32 = 0x20;
const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x20026;

/// Exit codes shared with the C firmware (firmware/README.md).
pub const EXIT_OOM: u32 = 2;
pub const EXIT_OUTPUT: u32 = 4;
pub const EXIT_ENGINE: u32 = 5;
pub const EXIT_HEAP: u32 = 6;

fn call(op: u32, arg: usize) -> u32 {
    let mut r0 = op;
    // SAFETY: `bkpt 0xab` is the Arm semihosting trap; the host reads r0/r1 and the block r1
    // points to, which lives for the whole call.
    unsafe {
        core::arch::asm!("bkpt 0xab", inout("r0") r0, in("r1") arg, options(nostack));
    }
    r0
}

/// Writes `s` (which must not contain NUL) to the host's console.
pub fn write(s: &str) {
    // SYS_WRITE0 wants a NUL-terminated string: copy through a small buffer.
    let mut buf = [0u8; 65];
    for chunk in s.as_bytes().chunks(64) {
        buf[..chunk.len()].copy_from_slice(chunk);
        buf[chunk.len()] = 0;
        call(SYS_WRITE0, buf.as_ptr() as usize);
    }
}

/// Writes `v` in decimal.
pub fn write_dec(mut v: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    write(core::str::from_utf8(&buf[i..]).unwrap_or("?"));
}

/// Writes `v` as 0x and eight hex digits.
pub fn write_hex(v: u32) {
    let mut buf = *b"0x00000000";
    for i in 0..8 {
        let d = ((v >> (28 - 4 * i)) & 0xf) as u8;
        buf[2 + i] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
    }
    write(core::str::from_utf8(&buf).unwrap_or("?"));
}

/// Ends the QEMU run with status 0.
pub fn exit_ok() -> ! {
    // On AArch32 SYS_EXIT takes the reason itself in r1, not a block.
    call(SYS_EXIT, ADP_STOPPED_APPLICATION_EXIT as usize);
    loop {
        cortex_m::asm::nop();
    }
}

/// Ends the QEMU run with status `code` (never 0).
pub fn exit_fail(code: u32) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, code.max(1)];
    call(SYS_EXIT_EXTENDED, block.as_ptr() as usize);
    loop {
        cortex_m::asm::nop();
    }
}

/// A message of at most 96 bytes, cut beyond (panic messages for the report line).
pub struct Line {
    buf: [u8; 96],
    len: usize,
}

impl Line {
    pub const fn new() -> Self {
        Line {
            buf: [0; 96],
            len: 0,
        }
    }

    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("?")
    }
}

impl core::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for c in s.chars() {
            let mut tmp = [0u8; 4];
            let bytes = c.encode_utf8(&mut tmp).as_bytes();
            if self.len + bytes.len() > self.buf.len() {
                break;
            }
            self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        }
        Ok(())
    }
}
