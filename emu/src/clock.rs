//! The virtual clock: guest time advances with the instruction count, never
//! with the host's clock, so programs that read the time still run the same
//! instructions on every run.
//!
//! One instruction takes one virtual nanosecond (a 1 GHz machine that retires
//! one instruction per cycle). Sleeping advances the clock without executing
//! anything. `CLOCK_REALTIME` starts at [`EPOCH_SECONDS`].

/// Wall-clock time at the first instruction: 2024-01-01T00:00:00Z.
pub const EPOCH_SECONDS: u64 = 1_704_067_200;

/// Guest time, in nanoseconds, as a function of the instruction count.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    slept_ns: u64,
}

impl VirtualClock {
    /// Nanoseconds since the program started (monotonic clocks).
    pub fn monotonic_ns(&self, instructions: u64) -> u64 {
        instructions.saturating_add(self.slept_ns)
    }

    /// Nanoseconds since the Unix epoch (`CLOCK_REALTIME`).
    pub fn realtime_ns(&self, instructions: u64) -> u64 {
        (EPOCH_SECONDS * 1_000_000_000).saturating_add(self.monotonic_ns(instructions))
    }

    /// CPU time used by the process: the instructions themselves.
    pub fn cpu_ns(&self, instructions: u64) -> u64 {
        instructions
    }

    /// Value of the time-stamp counter (`rdtsc`): one tick per nanosecond.
    pub fn tsc(&self, instructions: u64) -> u64 {
        self.monotonic_ns(instructions)
    }

    /// Lets `ns` nanoseconds pass without running anything.
    pub fn sleep(&mut self, ns: u64) {
        self.slept_ns = self.slept_ns.saturating_add(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_follows_instructions_and_sleeps() {
        let mut c = VirtualClock::default();
        assert_eq!(c.monotonic_ns(1000), 1000);
        c.sleep(5_000);
        assert_eq!(c.monotonic_ns(1000), 6000);
        assert_eq!(c.realtime_ns(0), EPOCH_SECONDS * 1_000_000_000 + 5_000);
        assert_eq!(c.cpu_ns(1000), 1000);
    }
}
