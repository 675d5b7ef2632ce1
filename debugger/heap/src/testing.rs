//! Unit-test support: every walk a walker's tests make runs in each read strategy, and the
//! strategies must agree (the same heap, or bulk failing where sparse only read less).

use memlife_core::{Memory, ReadStrategy};

use crate::link_model::{CountingMemory, LinkModel, ReadPlan, WalkStrategy};
use crate::sparse::MAX_SPARSE_ROUND_TRIPS;
use crate::{HeapError, HeapState, HeapWalker, WalkContext};

/// A 1 ms, 500 KB/s probe: `auto` walks sparse on it.
const SLOW: LinkModel = LinkModel {
    rtt_us: 1000.0,
    bytes_per_s: 500_000.0,
};
/// A link where round trips cost far more than bytes: `auto` soon goes on in bulk.
const LATENT: LinkModel = LinkModel {
    rtt_us: 10_000.0,
    bytes_per_s: 1e9,
};

/// Walks `mem` in bulk, sparse, and auto on two links; panics unless they agree; returns the
/// bulk result (what the tests assert on).
pub(crate) fn walk_modes(
    walker: &dyn HeapWalker,
    mem: &mut dyn Memory,
    ctx: WalkContext,
) -> Result<HeapState, HeapError> {
    let plan = |strategy, model| ReadPlan {
        strategy,
        model,
        max_read: 2046,
    };
    let bulk = walker.walk(
        mem,
        WalkContext {
            read: plan(WalkStrategy::Bulk, None),
            ..ctx
        },
    );
    if let Ok(st) = &bulk {
        assert!(matches!(st.read.strategy, None | Some(ReadStrategy::Bulk)));
    }
    for (strategy, model) in [
        (WalkStrategy::Sparse, None),
        (WalkStrategy::Auto, Some(SLOW)),
        (WalkStrategy::Auto, Some(LATENT)),
    ] {
        let mut counted = CountingMemory::new(mem, 2046);
        let other = walker.walk(
            &mut counted,
            WalkContext {
                read: plan(strategy, model),
                ..ctx
            },
        );
        // Bounded: the cap, then one bulk read of the spans, plus the globals' reads.
        assert!(
            counted.round_trips <= MAX_SPARSE_ROUND_TRIPS + 200,
            "{strategy} walk took {} round trips",
            counted.round_trips
        );
        match (&bulk, &other) {
            (Ok(a), Ok(b)) => {
                assert_eq!(
                    a, b,
                    "{strategy} walk ({model:?}) differs from the bulk walk"
                );
                // Equality ignores how memory was read; the Debug text does not lie about it.
                assert_eq!(
                    format!("{:?}", (&a.blocks, &a.anomalies, &a.free_list)),
                    format!("{:?}", (&b.blocks, &b.anomalies, &b.free_list))
                );
            }
            (Err(_), _) => {} // sparse may succeed where bulk read more (unreadable bytes)
            (Ok(_), Err(e)) => panic!("{strategy} walk failed where bulk did not: {e}"),
        }
    }
    bulk
}

/// [`walk_modes`] as a method, so tests read as before.
pub(crate) trait WalkModes {
    /// `self` as a trait object.
    fn as_dyn(&self) -> &dyn HeapWalker;

    /// See [`walk_modes`].
    fn walk_modes(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError>;
}

impl<W: HeapWalker> WalkModes for W {
    fn as_dyn(&self) -> &dyn HeapWalker {
        self
    }

    fn walk_modes(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError> {
        walk_modes(self.as_dyn(), mem, ctx)
    }
}
