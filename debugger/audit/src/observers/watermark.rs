//! The watermark method: the allocator's own low-water mark (heap_4's
//! `xMinimumEverFreeBytesRemaining`), reset to the free bytes at a phase's entry and read back
//! at its return, gives the phase's exact peak without tracing. The reset writes target RAM, so
//! the value the allocator would hold had memlife not reset it is put back at the phase's end
//! (and on the way out when a phase is interrupted).

use memlife_heap::{HeapWalker, LowWaterMark};

use crate::error::AuditError;
use crate::events::AuditSession;

/// The allocator's low-water mark as memlife reset it at a phase entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Armed {
    /// Address of the minimum-ever counter.
    min_addr: u64,
    /// Its value before memlife reset it, restored at the phase's end.
    original_min: u32,
}

/// The watermark method's state: on for the watermark method only.
#[derive(Debug, Default)]
pub struct Watermark {
    /// The method is the watermark.
    on: bool,
    /// The mark reset at the open phase's entry.
    armed: Option<Armed>,
}

/// The allocator's free-bytes and minimum-ever counters, when it keeps one pair for the heap.
fn counters(walker: &dyn HeapWalker) -> Option<(u64, u64)> {
    match walker.low_water_mark() {
        LowWaterMark::Counters { free, minimum } => Some((free, minimum)),
        _ => None,
    }
}

impl Watermark {
    /// The watermark method's state when `on`, after checking that this allocator and target
    /// allow it.
    pub fn new(on: bool, session: &mut AuditSession) -> Result<Self, AuditError> {
        if on {
            if counters(session.walker()).is_none() {
                let why = match session.walker().low_water_mark() {
                    LowWaterMark::PerHeap { counter } => format!(
                        "keeps one per heap ({counter}), and their minima need not coincide"
                    ),
                    _ => "keeps none".to_string(),
                };
                return Err(AuditError::Config(format!(
                    "the watermark method needs the allocator's low-water mark; {} {why} (use trace or sample)",
                    session.walker().name()
                )));
            }
            if session.target().memory_write().is_none() {
                return Err(AuditError::Config(
                    "the watermark method writes target RAM; this target is read-only".into(),
                ));
            }
        }
        Ok(Watermark { on, armed: None })
    }

    /// At a phase's entry: resets the low-water mark to the free bytes now, so that at the
    /// return it shows the phase's own minimum.
    pub fn phase_entered(&mut self, session: &mut AuditSession) -> Result<(), AuditError> {
        if !self.on {
            return Ok(());
        }
        let (free_addr, min_addr) =
            counters(session.walker()).ok_or_else(|| AuditError::Config("no watermark".into()))?;
        let mem = session.memory();
        let free = mem.read_u32(free_addr)?;
        let original_min = mem.read_u32(min_addr)?;
        if let Some(w) = session.target().memory_write() {
            w.write(min_addr, &free.to_le_bytes())?;
        }
        self.armed = Some(Armed {
            min_addr,
            original_min,
        });
        Ok(())
    }

    /// At the phase's return: the peak the mark shows (`heap_size` minus the minimum free),
    /// with the allocator's own value put back; `None` when no mark was reset.
    pub fn phase_returned(
        &mut self,
        session: &mut AuditSession,
        heap_size: u64,
    ) -> Result<Option<u64>, AuditError> {
        let Some(armed) = self.armed.take() else {
            return Ok(None);
        };
        let observed = session.memory().read_u32(armed.min_addr)?;
        restore(session, armed, Some(observed))?;
        Ok(Some(heap_size.saturating_sub(u64::from(observed))))
    }

    /// A phase interrupted by an error: the allocator's value is put back (failures ignored:
    /// this is on the way out).
    pub fn restore_on_exit(&mut self, session: &mut AuditSession) {
        if let Some(armed) = self.armed.take() {
            let _ = restore(session, armed, None);
        }
    }

    /// The phase was abandoned (the target is being reset): nothing to put back.
    pub fn abandon(&mut self) {
        self.armed = None;
    }
}

/// Puts back the value the allocator would hold had memlife not reset it.
fn restore(
    session: &mut AuditSession,
    armed: Armed,
    observed: Option<u32>,
) -> Result<(), AuditError> {
    let value = observed.map_or(armed.original_min, |o| o.min(armed.original_min));
    if let Some(w) = session.target().memory_write() {
        w.write(armed.min_addr, &value.to_le_bytes())?;
    }
    Ok(())
}
