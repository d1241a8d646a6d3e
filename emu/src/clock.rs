//! The virtual clock: guest time advances with the instruction count, never
//! with the host's clock, so programs that read the time still run the same
//! instructions on every run.
//!
//! One instruction takes one virtual nanosecond (a 1 GHz machine that retires
//! one instruction per cycle). Sleeping advances the clock without executing
//! anything. `CLOCK_REALTIME` starts at the run's clock start, by default
//! [`DEFAULT_START_SECONDS`].
//!
//! The default start lies after the time of the files a host holds today:
//! programs compare the times of files (written by the host kernel, in host
//! time) with the clock, and a file "from the future" makes `make` warn of
//! clock skew and `ls` print years. A fixed start keeps runs the same on
//! every host; `--clock-start` sets another.

/// Default wall-clock time at the first instruction: 2030-01-01T00:00:00Z.
pub const DEFAULT_START_SECONDS: u64 = 1_893_456_000;

/// Guest time, in nanoseconds, as a function of the instruction count.
#[derive(Debug, Clone)]
pub struct VirtualClock {
    slept_ns: u64,
    /// `CLOCK_REALTIME` at the first instruction, in seconds.
    start_seconds: u64,
}

impl Default for VirtualClock {
    fn default() -> Self {
        VirtualClock::starting_at(DEFAULT_START_SECONDS)
    }
}

impl VirtualClock {
    /// A clock whose wall-clock time at the first instruction is
    /// `start_seconds` since the Unix epoch.
    pub fn starting_at(start_seconds: u64) -> VirtualClock {
        VirtualClock {
            slept_ns: 0,
            start_seconds,
        }
    }

    /// The same start, with no time passed (a `fork` child's clock, before
    /// it is moved to the parent's time).
    pub fn restarted(&self) -> VirtualClock {
        VirtualClock::starting_at(self.start_seconds)
    }

    /// `CLOCK_REALTIME` at the first instruction, in nanoseconds.
    pub fn start_ns(&self) -> u64 {
        self.start_seconds.saturating_mul(1_000_000_000)
    }

    /// Nanoseconds since the program started (monotonic clocks).
    pub fn monotonic_ns(&self, instructions: u64) -> u64 {
        instructions.saturating_add(self.slept_ns)
    }

    /// Nanoseconds since the Unix epoch (`CLOCK_REALTIME`).
    pub fn realtime_ns(&self, instructions: u64) -> u64 {
        self.start_ns()
            .saturating_add(self.monotonic_ns(instructions))
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
        assert_eq!(
            c.realtime_ns(0),
            DEFAULT_START_SECONDS * 1_000_000_000 + 5_000
        );
        assert_eq!(VirtualClock::starting_at(3).realtime_ns(7), 3_000_000_007);
        assert_eq!(c.cpu_ns(1000), 1000);
    }
}
