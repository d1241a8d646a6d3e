//! Time: `clock_gettime`, `gettimeofday`, `time`, `nanosleep`,
//! `clock_nanosleep`, `clock_getres`, `times` — all from the virtual clock —
//! and the timers that run on it (`timers`).

use super::numbers::*;
use super::timers::Timers;
use super::{Errno, SysResult, SyscallCall};
use crate::clock::VirtualClock;

const CLOCK_REALTIME: u64 = 0;
const CLOCK_PROCESS_CPUTIME_ID: u64 = 2;
const CLOCK_THREAD_CPUTIME_ID: u64 = 3;
const CLOCK_REALTIME_COARSE: u64 = 5;
const CLOCK_TAI: u64 = 11;
const TIMER_ABSTIME: u64 = 1;

/// The time family: owns the virtual clock.
#[derive(Debug, Default)]
pub struct Time {
    /// Guest time.
    pub clock: VirtualClock,
    /// The process's timers.
    pub timers: Timers,
}

impl Time {
    /// Handles a time syscall; `instructions` gives the count so far (asked
    /// only by the calls that read the clock: it makes emuprof wait for its
    /// call-tree thread).
    pub fn handle(
        &mut self,
        call: &mut SyscallCall,
        instructions: impl FnOnce() -> u64,
    ) -> Option<SysResult> {
        let a = call.args;
        let reads_clock = matches!(
            call.number,
            SYS_CLOCK_GETTIME
                | SYS_GETTIMEOFDAY
                | SYS_TIME
                | SYS_CLOCK_NANOSLEEP
                | SYS_TIMES
                | SYS_GETRUSAGE
                | SYS_TIMER_CREATE
                | SYS_TIMER_SETTIME
                | SYS_TIMER_GETTIME
                | SYS_TIMER_GETOVERRUN
                | SYS_TIMER_DELETE
                | SYS_ALARM
                | SYS_SETITIMER
                | SYS_GETITIMER
        );
        let instructions = if reads_clock { instructions() } else { 0 };
        if let Some(result) = self.timers.handle(call, &self.clock, instructions) {
            return Some(result);
        }
        Some(match call.number {
            SYS_CLOCK_GETTIME => self
                .clock_ns(a[0], instructions)
                .and_then(|ns| write_timespec(call, a[1], ns)),
            SYS_CLOCK_GETRES => {
                if a[1] != 0 {
                    write_timespec(call, a[1], 1)
                } else {
                    Ok(0)
                }
            }
            SYS_GETTIMEOFDAY => {
                let ns = self.clock.realtime_ns(instructions);
                if a[0] != 0 {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
                    b[8..].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
                    if let Err(e) = call.mem.write(a[0], &b) {
                        return Some(Err(e.into()));
                    }
                }
                if a[1] != 0 {
                    if let Err(e) = call.mem.write(a[1], &[0u8; 8]) {
                        return Some(Err(e.into()));
                    }
                }
                Ok(0)
            }
            SYS_TIME => {
                let secs = self.clock.realtime_ns(instructions) / 1_000_000_000;
                if a[0] != 0 {
                    if let Err(e) = call.mem.write_u64(a[0], secs) {
                        return Some(Err(e.into()));
                    }
                }
                Ok(secs)
            }
            SYS_NANOSLEEP | SYS_CLOCK_NANOSLEEP => {
                self.sleep_request(call, instructions).map(|ns| {
                    self.clock.sleep(ns);
                    0
                })
            }
            SYS_TIMES => {
                // struct tms: utime, stime, cutime, cstime in clock ticks.
                let ticks = self.clock.cpu_ns(instructions) / 10_000_000;
                if a[0] != 0 {
                    let mut b = [0u8; 32];
                    b[..8].copy_from_slice(&ticks.to_le_bytes());
                    if let Err(e) = call.mem.write(a[0], &b) {
                        return Some(Err(e.into()));
                    }
                }
                Ok(self.clock.monotonic_ns(instructions) / 10_000_000)
            }
            SYS_GETRUSAGE => {
                // struct rusage: ru_utime (timeval) then ru_stime, then 14
                // longs; user time is the virtual CPU time, the rest zero.
                let ns = self.clock.cpu_ns(instructions);
                let mut b = [0u8; 144];
                b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
                b[8..16].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
                match call.mem.write(a[1], &b) {
                    Ok(()) => Ok(0),
                    Err(e) => Err(e.into()),
                }
            }
            _ => return None,
        })
    }

    /// How long a `nanosleep`/`clock_nanosleep` call asks to sleep, in
    /// nanoseconds from now (`instructions` executed so far).
    pub fn sleep_request(&self, call: &SyscallCall, instructions: u64) -> Result<u64, Errno> {
        let a = call.args;
        if call.number == SYS_NANOSLEEP {
            return read_timespec(call, a[0]);
        }
        let ns = read_timespec(call, a[2])?;
        Ok(if a[1] & TIMER_ABSTIME != 0 {
            ns.saturating_sub(self.clock_ns(a[0], instructions)?)
        } else {
            ns
        })
    }

    fn clock_ns(&self, clock: u64, instructions: u64) -> Result<u64, Errno> {
        Ok(match clock {
            CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_TAI => {
                self.clock.realtime_ns(instructions)
            }
            CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => self.clock.cpu_ns(instructions),
            0..=11 => self.clock.monotonic_ns(instructions),
            _ => return Err(Errno::EINVAL),
        })
    }
}

fn write_timespec(call: &mut SyscallCall, addr: u64, ns: u64) -> SysResult {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    b[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    call.mem.write(addr, &b)?;
    Ok(0)
}

fn read_timespec(call: &SyscallCall, addr: u64) -> Result<u64, Errno> {
    let secs = call.mem.read_u64(addr)?;
    let nanos = call.mem.read_u64(addr + 8)?;
    if nanos >= 1_000_000_000 || secs > i64::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    Ok(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}
