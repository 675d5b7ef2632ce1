//! Allocation sites and the backtraces they come from. A backtrace at every allocation is read
//! from one stack window fetched together with the block's header (`crate::unwind`); the site
//! is its first frame outside the allocator and the configured wrappers.

use memlife_dwarf::Symbols;

use crate::events::AuditSession;
use crate::model::Site;
use crate::session::Regs;
use crate::unwind;

/// How allocation sites are found.
#[derive(Debug, Clone)]
pub struct Sites {
    /// Functions a site looks past (the allocator's and the configured wrappers).
    skip: Vec<String>,
    /// The initial stack pointer from the linker script, bounding stack reads.
    stack_top: Option<u64>,
    /// Frames kept past the allocator's (`[trace] backtrace`).
    depth: usize,
}

impl Sites {
    /// Sites looking past `skip`, backtraces `depth` frames deep (at least one), stack reads
    /// bounded by `stack_top`.
    pub fn new(skip: Vec<String>, stack_top: Option<u64>, depth: usize) -> Self {
        Sites {
            skip,
            stack_top,
            depth: depth.max(1),
        }
    }

    /// The site of a backtrace (see [`site_of`]).
    pub fn site_of(&self, symbols: &Symbols, backtrace: &[u64]) -> Site {
        site_of(symbols, &self.skip, backtrace)
    }

    /// Return addresses of the call chain at a stop inside the allocator (frame 0 is the
    /// allocator), from the stack window read with `extra` ranges in one request; what was
    /// read stays in the stop's cache.
    pub fn backtrace(
        &self,
        session: &mut AuditSession,
        regs: &Regs,
        extra: &[(u64, usize)],
    ) -> Vec<u64> {
        let fallback = vec![regs.pc, regs.return_address()];
        let Some(core) = unwind::registers(session.target()) else {
            return fallback;
        };
        // Never past the top of the stack: a read beyond RAM fails and costs retries.
        let window = self
            .stack_top
            .filter(|top| *top > regs.sp)
            .map_or(unwind::STACK_WINDOW, |top| {
                unwind::STACK_WINDOW.min((top - regs.sp) as usize)
            });
        let mut ranges = vec![(regs.sp, window)];
        ranges.extend_from_slice(extra);
        let depth = self.depth;
        let mut frames = session.read_at_stop(&ranges, |mem, symbols| {
            unwind::backtrace(symbols, &core, mem, depth + 1)
        });
        if frames.len() < 2 {
            frames = fallback;
        }
        frames.truncate(depth + 1);
        frames
    }
}

/// The allocation site of a backtrace: the first frame (inlined ones included) outside the
/// functions in `skip`, and the chain of callers from there. Frame 0 is the allocator's own pc;
/// the others are return addresses, looked up at the call instruction before them.
pub fn site_of(symbols: &Symbols, skip: &[String], backtrace: &[u64]) -> Site {
    let mut site = Site::default();
    for &ret in backtrace.iter().skip(1) {
        for loc in symbols.locate(ret.saturating_sub(2)) {
            let name = loc.function.clone().unwrap_or_else(|| "??".into());
            // C++'s `operator new`/`delete` and Rust's `alloc`/`core` machinery (Box::new,
            // RawVec growth, inlined into the caller) wrap malloc/free: the site is their caller.
            if skip.contains(&name) || memlife_dwarf::demangle::is_allocation_glue(&name) {
                continue;
            }
            let file = loc
                .file
                .as_ref()
                .map(|f| f.rsplit('/').next().unwrap_or(f).to_string());
            site.chain.push(match (&file, loc.line) {
                (Some(f), Some(l)) => format!("{name} ({f}:{l})"),
                _ => name.clone(),
            });
            if site.function.is_none() {
                site.function = Some(name);
                site.file = file;
                site.line = loc.line;
            }
        }
    }
    site
}
