//! Asserts: the firmware's own assert handlers, where a breakpoint ends an audit at once with
//! where the firmware asserted, instead of the audit waiting out its timeout while the
//! firmware spins in the handler. The handlers are found by name: `vAssertCalled` (what
//! FreeRTOS's `configASSERT` calls in the official demos and in most applications),
//! `assert_failed` (STM32's `USE_FULL_ASSERT`), newlib's `__assert_func`, and those `[target]
//! halt_on` names.
//!
//! The place comes from the handler's arguments when it takes them (a `char *` file name in the
//! image and a line number: `vAssertCalled(__FILE__, __LINE__)`, `__assert_func(file, line,
//! ...)`), else from its caller's location; on an RTOS firmware the task that asserted is
//! named.

use memlife_core::Memory;
use memlife_core::cortex_m::GDB_XPSR;
use memlife_dwarf::Symbols;
use memlife_rtos::{FreeRtos, Running};

use crate::error::AuditError;
use crate::events::{Ctx, Observer};
use crate::session::Arm;

/// The assert handlers memlife knows by name.
pub const HANDLERS: [&str; 3] = ["vAssertCalled", "assert_failed", "__assert_func"];

/// Longest file name read from an argument.
const MAX_FILE: usize = 256;

/// The breakpoints on the assert handlers.
pub struct Asserts {
    /// (entry address, function) of each handler the ELF has.
    handlers: Vec<(u64, String)>,
    /// The kernel, to name the task that asserted.
    kernel: Option<FreeRtos>,
}

impl std::fmt::Debug for Asserts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.handlers.iter().map(|(_, n)| n))
            .finish()
    }
}

/// The handlers this ELF has among [`HANDLERS`] and `halt_on`: (entry address, function).
pub fn handlers(symbols: &Symbols, halt_on: &[String]) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for name in HANDLERS
        .iter()
        .copied()
        .chain(halt_on.iter().map(String::as_str))
    {
        if let Some(addr) = symbols.function(name).map(|f| f.entry)
            && !out.iter().any(|(a, _)| *a == addr)
        {
            out.push((addr, name.to_string()));
        }
    }
    out
}

impl Asserts {
    /// The observer for this ELF's handlers (`halt_on` added), none when it has none.
    pub fn for_firmware(symbols: &Symbols, halt_on: &[String]) -> Option<Asserts> {
        let handlers = handlers(symbols, halt_on);
        if handlers.is_empty() {
            return None;
        }
        let kernel = FreeRtos::from_symbols(symbols).ok();
        Some(Asserts { handlers, kernel })
    }
}

impl Observer for Asserts {
    fn name(&self) -> &'static str {
        "asserts"
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>) -> Result<(), AuditError> {
        for (i, (addr, _)) in self.handlers.iter().enumerate() {
            ctx.break_at(*addr, u32::try_from(i).unwrap_or(u32::MAX), Arm::Always);
        }
        Ok(())
    }

    fn on_break(&mut self, ctx: &mut Ctx<'_>, code: u32) -> Result<(), AuditError> {
        let Some(regs) = ctx.regs() else {
            return Ok(());
        };
        let handler = usize::try_from(code)
            .ok()
            .and_then(|i| self.handlers.get(i))
            .map_or("?", |(_, n)| n.as_str())
            .to_string();
        let xpsr = ctx
            .register(memlife_core::Register::Numbered(GDB_XPSR))
            .map_or(0, |x| u32::try_from(x & 0xffff_ffff).unwrap_or(0));
        let (mem, symbols) = ctx.memory_and_symbols();
        let stop = HandlerStop {
            handler: &handler,
            args: regs.args,
            lr: regs.lr,
            xpsr,
        };
        Err(AuditError::Asserted(describe(
            mem,
            &symbols,
            self.kernel.as_ref(),
            &stop,
        )))
    }
}

/// A stop at an assert handler's entry.
#[derive(Debug, Clone, Copy)]
pub struct HandlerStop<'a> {
    /// The handler.
    pub handler: &'a str,
    /// r0..r3: its arguments.
    pub args: [u64; 4],
    /// Its return address.
    pub lr: u64,
    /// The core's xPSR (handler mode or thread mode).
    pub xpsr: u32,
}

/// Where the firmware asserted: `rtos/timing.c:123 (in task Check)`, from the handler's
/// arguments, else `timing.c:123 in check_task` from its caller; the task (or ISR) named when
/// a kernel is given.
pub fn describe(
    mem: &mut dyn Memory,
    symbols: &Symbols,
    kernel: Option<&FreeRtos>,
    stop: &HandlerStop<'_>,
) -> String {
    let mut text = match place_from_args(mem, symbols, &stop.args) {
        Some((file, line)) => format!("{file}:{line}"),
        None => caller_place(symbols, stop.lr),
    };
    if stop.handler != "vAssertCalled" {
        text.push_str(&format!(" ({})", stop.handler));
    }
    if let Some(running) = kernel.and_then(|k| k.running(mem, stop.xpsr).ok()) {
        text.push_str(&match running {
            Running::Task { name, .. } => format!(" (in task {name})"),
            Running::Isr(n) => format!(" (in ISR {n})"),
            Running::BeforeScheduler => " (in main, before the scheduler started)".into(),
            Running::Unknown => String::new(),
        });
    }
    text
}

/// The file name and line a handler was given: the first argument that points to a file name
/// (a printable string ending in a source file's extension) and the first other argument that
/// is a line number.
fn place_from_args(
    mem: &mut dyn Memory,
    symbols: &Symbols,
    args: &[u64; 4],
) -> Option<(String, u64)> {
    let (i, file) = args
        .iter()
        .enumerate()
        .find_map(|(i, &a)| file_name(mem, symbols, a).map(|f| (i, f)))?;
    let line = args
        .iter()
        .enumerate()
        .find(|&(j, &a)| j != i && (1..=1_000_000).contains(&a))
        .map(|(_, &a)| a)?;
    Some((file, line))
}

/// The string at `addr` when it looks like a source file's name, read from the image (where
/// `__FILE__` is) or else from the target.
fn file_name(mem: &mut dyn Memory, symbols: &Symbols, addr: u64) -> Option<String> {
    if addr == 0 {
        return None;
    }
    let text = match symbols.rodata_section(addr) {
        Some((start, bytes)) => {
            let from = usize::try_from(addr.checked_sub(start)?).ok()?;
            let rest = bytes.get(from..)?;
            let end = rest.iter().take(MAX_FILE).position(|b| *b == 0)?;
            String::from_utf8(rest.get(..end)?.to_vec()).ok()?
        }
        None => memlife_dwarf::value::read_c_string(mem, addr, MAX_FILE)?,
    };
    let printable = !text.is_empty() && text.chars().all(|c| !c.is_control());
    let source = [".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".rs", ".S", ".s"]
        .iter()
        .any(|ext| text.ends_with(ext));
    (printable && source).then_some(text)
}

/// `timing.c:123 in check_task`: where the handler was called from.
fn caller_place(symbols: &Symbols, lr: u64) -> String {
    let ret = (lr & !1).saturating_sub(2);
    match symbols.locate(ret).into_iter().next() {
        Some(loc) => {
            let function = loc.function.as_deref().unwrap_or("??");
            match (&loc.file, loc.line) {
                (Some(f), Some(l)) => {
                    let file = f.rsplit(['/', '\\']).next().unwrap_or(f);
                    format!("{file}:{l} in {function}")
                }
                _ => function.to_string(),
            }
        }
        None => format!("pc {ret:#010x}"),
    }
}
