//! Seeded random cases: the same seed gives the same cases on every run, so a failure names a
//! case that can be replayed.

/// Marsaglia's xorshift64: tiny, fast and good enough to scramble test inputs.
#[derive(Debug, Clone)]
pub struct Xorshift(u64);

impl Xorshift {
    /// A generator from `seed` (0 is replaced: xorshift would stay at 0 forever).
    pub fn new(seed: u64) -> Self {
        Xorshift(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A byte.
    pub fn byte(&mut self) -> u8 {
        (self.next_u64() >> 56) as u8
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.byte()).collect()
    }
}

/// Runs `case` `count` times, with the case number and a generator seeded for that case; a panic
/// names the case number and seed to replay it with.
pub fn cases(seed: u64, count: u32, mut case: impl FnMut(u32, &mut Xorshift)) {
    for i in 0..count {
        let case_seed = seed ^ (u64::from(i) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = Xorshift::new(case_seed);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(i, &mut rng)));
        if let Err(panic) = outcome {
            eprintln!("fuzz case {i} (seed {case_seed:#x}) failed");
            std::panic::resume_unwind(panic);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_numbers() {
        let a: Vec<u64> = (0..4)
            .scan(Xorshift::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .scan(Xorshift::new(7), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0] != w[1]));
        assert_ne!(Xorshift::new(0).next_u64(), 0);
        assert!((0..100).all(|_| Xorshift::new(3).below(10) < 10));
    }

    #[test]
    fn every_case_runs_with_its_own_seed() {
        let mut firsts = Vec::new();
        cases(1, 5, |_, r| firsts.push(r.next_u64()));
        assert_eq!(firsts.len(), 5);
        firsts.sort_unstable();
        firsts.dedup();
        assert_eq!(firsts.len(), 5);
    }
}
