//! Timers that send a signal: POSIX timers (`timer_create`,
//! `timer_settime`, `timer_gettime`, `timer_getoverrun`, `timer_delete`)
//! and the process's real-time interval timer (`alarm`, `setitimer`,
//! `getitimer` with `ITIMER_REAL`).
//!
//! Every timer runs on the virtual clock: its expiry is a monotonic virtual
//! time, and it fires at the first switch point at or after that time
//! (`machine::timer_signals`), so the signal arrives after the same guest
//! work on every run. While every thread waits, the clock jumps to the
//! earliest expiry as it does for a sleep. This file keeps the timers and
//! answers the calls; the machine fires them.

use super::numbers::*;
use super::{Errno, SysResult, SyscallCall};
use crate::clock::VirtualClock;

const NANOS: u64 = 1_000_000_000;
const SIGALRM: u64 = 14;
const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_BOOTTIME: u64 = 7;
const CLOCK_REALTIME_ALARM: u64 = 8;
const CLOCK_BOOTTIME_ALARM: u64 = 9;
const TIMER_ABSTIME: u64 = 1;
const SIGEV_SIGNAL: i32 = 0;
const SIGEV_NONE: i32 = 1;
const SIGEV_THREAD_ID: i32 = 4;
const ITIMER_REAL: u64 = 0;
/// Most POSIX timers one process may hold (a guest that leaks timers gets
/// `EAGAIN`, as under a `RLIMIT_SIGPENDING` limit).
const MAX_TIMERS: usize = 1024;

/// Whether timer clock `clock` is `CLOCK_REALTIME` (absolute times are
/// wall-clock times) rather than a monotonic one; `EINVAL` for a clock a
/// timer cannot use.
pub(crate) fn is_realtime(clock: u64) -> Result<bool, Errno> {
    match clock {
        CLOCK_REALTIME | CLOCK_REALTIME_ALARM => Ok(true),
        CLOCK_MONOTONIC | CLOCK_BOOTTIME | CLOCK_BOOTTIME_ALARM => Ok(false),
        _ => Err(Errno::EINVAL),
    }
}

/// Where a timer's signal goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The process (`SIGEV_SIGNAL`).
    Process,
    /// One thread, by id (`SIGEV_THREAD_ID`).
    Thread(u64),
    /// Nobody (`SIGEV_NONE`): the timer only counts down.
    Nobody,
}

/// One armed or disarmed timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Timer {
    /// Whether its clock is `CLOCK_REALTIME` (absolute times are then
    /// wall-clock times).
    realtime: bool,
    signal: u64,
    target: Target,
    /// Monotonic virtual time of the next expiry; `None` when disarmed.
    expiry: Option<u64>,
    /// Re-armed this far after each expiry (0: once).
    interval: u64,
}

/// A timer that has expired: its signal and where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    /// The signal number.
    pub signal: u64,
    /// Where it goes.
    pub target: Target,
}

/// The process's timers.
#[derive(Debug, Default, Clone)]
pub struct Timers {
    /// POSIX timers by id; deleted ones are `None`.
    posix: Vec<Option<Timer>>,
    /// `ITIMER_REAL`, which `alarm` sets too.
    real: Option<Timer>,
}

impl Timers {
    /// What a program started by `execve` keeps: the interval timer, not
    /// the POSIX timers.
    pub fn for_new_program(&self) -> Timers {
        Timers {
            posix: Vec::new(),
            real: self.real,
        }
    }

    /// The earliest expiry of an armed timer (monotonic virtual time).
    pub fn earliest(&self) -> Option<u64> {
        self.all().filter_map(|t| t.expiry).min()
    }

    /// Takes the timers that have expired at `now`, re-arming those with an
    /// interval; in a fixed order (the interval timer, then POSIX timers by
    /// id). A timer whose interval passed several times fires once.
    pub fn take_expired(&mut self, now: u64) -> Vec<Expired> {
        let mut fired = Vec::new();
        for timer in self.real.iter_mut().chain(self.posix.iter_mut().flatten()) {
            let Some(expiry) = timer.expiry.filter(|&e| e <= now) else {
                continue;
            };
            timer.expiry = match timer.interval {
                0 => None,
                step => Some(expiry + (now - expiry) / step * step + step),
            };
            if timer.target != Target::Nobody {
                fired.push(Expired {
                    signal: timer.signal,
                    target: timer.target,
                });
            }
        }
        fired
    }

    fn all(&self) -> impl Iterator<Item = &Timer> {
        self.real.iter().chain(self.posix.iter().flatten())
    }

    /// Handles a timer syscall at virtual time `clock` after
    /// `instructions`; `None` for other numbers.
    pub fn handle(
        &mut self,
        call: &mut SyscallCall,
        clock: &VirtualClock,
        instructions: u64,
    ) -> Option<SysResult> {
        let a = call.args;
        let now = clock.monotonic_ns(instructions);
        Some(match call.number {
            SYS_TIMER_CREATE => self.create(call, a[0], a[1], a[2]),
            SYS_TIMER_SETTIME => self.set_posix(call, clock, now, a),
            SYS_TIMER_GETTIME => self
                .posix_timer(a[0])
                .and_then(|t| write_spec(call, a[1], remaining(t, now), 1)),
            SYS_TIMER_GETOVERRUN => self.posix_timer(a[0]).map(|_| 0),
            SYS_TIMER_DELETE => self.posix_timer(a[0]).map(|_| {
                self.posix[a[0] as usize] = None;
                0
            }),
            SYS_ALARM => {
                let seconds = a[0] as u32;
                let old = self.real.map_or(0, |t| remaining(t, now).1);
                self.real = Some(Timer {
                    expiry: (seconds != 0).then(|| now + u64::from(seconds) * NANOS),
                    ..real_timer()
                });
                // Whole seconds left, rounded up, at least 1 if armed.
                Ok(old.div_ceil(NANOS))
            }
            SYS_SETITIMER => self.set_real(call, now, a),
            SYS_GETITIMER if a[0] != ITIMER_REAL => Err(Errno::EINVAL),
            SYS_GETITIMER => write_spec(
                call,
                a[1],
                self.real.map_or((0, 0), |t| remaining(t, now)),
                1000,
            ),
            _ => return None,
        })
    }

    fn create(&mut self, call: &mut SyscallCall, clock: u64, event: u64, id_at: u64) -> SysResult {
        let realtime = is_realtime(clock)?;
        let (signal, target) = if event == 0 {
            (SIGALRM, Target::Process)
        } else {
            // struct sigevent: value (8), signo (4), notify (4), tid (4).
            let mut raw = [0u8; 20];
            call.mem.read(event, &mut raw)?;
            let int =
                |at: usize| i32::from_le_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]]);
            let target = match int(12) {
                SIGEV_SIGNAL => Target::Process,
                SIGEV_NONE => Target::Nobody,
                SIGEV_THREAD_ID => Target::Thread(int(16) as u64),
                _ => return Err(Errno::EINVAL),
            };
            let signal = int(8) as u64;
            if target != Target::Nobody && !(1..=64).contains(&signal) {
                return Err(Errno::EINVAL);
            }
            (signal, target)
        };
        let timer = Timer {
            realtime,
            signal,
            target,
            expiry: None,
            interval: 0,
        };
        let id = match self.posix.iter().position(Option::is_none) {
            Some(free) => free,
            None if self.posix.len() < MAX_TIMERS => {
                self.posix.push(None);
                self.posix.len() - 1
            }
            None => return Err(Errno::EAGAIN),
        };
        call.mem.write(id_at, &(id as u32).to_le_bytes())?;
        self.posix[id] = Some(timer);
        Ok(0)
    }

    fn posix_timer(&self, id: u64) -> Result<Timer, Errno> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.posix.get(i).copied().flatten())
            .ok_or(Errno::EINVAL)
    }

    /// `timer_settime(id, flags, new, old)`.
    fn set_posix(
        &mut self,
        call: &mut SyscallCall,
        clock: &VirtualClock,
        now: u64,
        a: [u64; 6],
    ) -> SysResult {
        let timer = self.posix_timer(a[0])?;
        let (interval, value) = read_spec(call, a[2], 1)?;
        if a[3] != 0 {
            write_spec(call, a[3], remaining(timer, now), 1)?;
        }
        let expiry = if value == 0 {
            None
        } else if a[1] & TIMER_ABSTIME != 0 {
            let base = if timer.realtime { clock.start_ns() } else { 0 };
            Some(value.saturating_sub(base).max(now))
        } else {
            Some(now.saturating_add(value))
        };
        self.posix[a[0] as usize] = Some(Timer {
            expiry,
            interval,
            ..timer
        });
        Ok(0)
    }

    /// `setitimer(which, new, old)` of `ITIMER_REAL` (timevals).
    fn set_real(&mut self, call: &mut SyscallCall, now: u64, a: [u64; 6]) -> SysResult {
        if a[0] != ITIMER_REAL {
            return Err(Errno::EINVAL);
        }
        let (interval, value) = if a[1] == 0 {
            (0, 0)
        } else {
            read_spec(call, a[1], 1000)?
        };
        if a[2] != 0 {
            let old = self.real.map_or((0, 0), |t| remaining(t, now));
            write_spec(call, a[2], old, 1000)?;
        }
        self.real = Some(Timer {
            expiry: (value != 0).then(|| now.saturating_add(value)),
            interval,
            ..real_timer()
        });
        Ok(0)
    }
}

/// The interval timer `alarm` and `setitimer` set: `SIGALRM` to the
/// process.
fn real_timer() -> Timer {
    Timer {
        realtime: true,
        signal: SIGALRM,
        target: Target::Process,
        expiry: None,
        interval: 0,
    }
}

/// `(interval, time left)` of `timer` at `now`, in nanoseconds.
fn remaining(timer: Timer, now: u64) -> (u64, u64) {
    let left = timer.expiry.map_or(0, |e| e.saturating_sub(now).max(1));
    (timer.interval, left)
}

/// Reads a `struct itimerspec` (`unit` 1: nanoseconds) or `struct
/// itimerval` (`unit` 1000: microseconds): `(interval, value)` in
/// nanoseconds.
fn read_spec(call: &SyscallCall, at: u64, unit: u64) -> Result<(u64, u64), Errno> {
    let mut parts = [0u64; 2];
    for (i, part) in parts.iter_mut().enumerate() {
        let base = at.wrapping_add(16 * i as u64);
        let secs = call.mem.read_u64(base)?;
        let fraction = call.mem.read_u64(base.wrapping_add(8))?;
        if fraction >= NANOS / unit || secs > i64::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        *part = secs.saturating_mul(NANOS).saturating_add(fraction * unit);
    }
    Ok((parts[0], parts[1]))
}

/// Writes `(interval, value)` as a `struct itimerspec` (`unit` 1) or
/// `struct itimerval` (`unit` 1000).
fn write_spec(
    call: &mut SyscallCall,
    at: u64,
    (interval, value): (u64, u64),
    unit: u64,
) -> SysResult {
    let mut raw = [0u8; 32];
    for (i, ns) in [interval, value].into_iter().enumerate() {
        raw[16 * i..16 * i + 8].copy_from_slice(&(ns / NANOS).to_le_bytes());
        raw[16 * i + 8..16 * i + 16].copy_from_slice(&((ns % NANOS) / unit).to_le_bytes());
    }
    call.mem.write(at, &raw)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_memory::VecMemory;

    const BASE: u64 = 0x1000;

    fn call(
        timers: &mut Timers,
        mem: &mut VecMemory,
        now: u64,
        number: u64,
        args: &[u64],
    ) -> SysResult {
        let mut full = [0u64; 6];
        full[..args.len()].copy_from_slice(args);
        let clock = VirtualClock::default();
        timers
            .handle(
                &mut SyscallCall {
                    number,
                    args: full,
                    mem,
                },
                &clock,
                now,
            )
            .expect("a timer call")
    }

    fn spec(mem: &mut VecMemory, at: u64, interval_ns: u64, value_ns: u64) -> u64 {
        for (i, ns) in [interval_ns, value_ns].into_iter().enumerate() {
            mem.put(at + 16 * i as u64, &(ns / NANOS).to_le_bytes());
            mem.put(at + 16 * i as u64 + 8, &(ns % NANOS).to_le_bytes());
        }
        at
    }

    #[test]
    fn a_posix_timer_fires_once_at_its_expiry() {
        let mut t = Timers::default();
        let mut mem = VecMemory::new(BASE, 0x1000);
        assert_eq!(
            call(&mut t, &mut mem, 0, SYS_TIMER_CREATE, &[0, 0, BASE]),
            Ok(0)
        );
        assert_eq!(mem.bytes[..4], 0u32.to_le_bytes(), "the first id is 0");
        let new = spec(&mut mem, BASE + 0x100, 0, 500_000_000);
        assert_eq!(
            call(&mut t, &mut mem, 1000, SYS_TIMER_SETTIME, &[0, 0, new, 0]),
            Ok(0)
        );
        assert_eq!(t.earliest(), Some(500_001_000));
        assert!(t.take_expired(500_000_999).is_empty());
        let fired = t.take_expired(600_000_000);
        assert_eq!(
            fired,
            [Expired {
                signal: SIGALRM,
                target: Target::Process
            }]
        );
        assert_eq!(t.earliest(), None, "a one-shot timer is spent");
        assert_eq!(call(&mut t, &mut mem, 0, SYS_TIMER_DELETE, &[0]), Ok(0));
        assert_eq!(
            call(&mut t, &mut mem, 0, SYS_TIMER_DELETE, &[0]),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn an_interval_timer_rearms_past_now() {
        let mut t = Timers::default();
        let mut mem = VecMemory::new(BASE, 0x1000);
        // struct itimerval: 100 µs interval, 1 ms value.
        for (at, value) in [
            (BASE, 0u64),
            (BASE + 8, 100),
            (BASE + 16, 0),
            (BASE + 24, 1000),
        ] {
            mem.put(at, &value.to_le_bytes());
        }
        assert_eq!(
            call(&mut t, &mut mem, 0, SYS_SETITIMER, &[ITIMER_REAL, BASE, 0]),
            Ok(0)
        );
        assert_eq!(t.take_expired(1_350_000).len(), 1, "late: fires once");
        assert_eq!(t.earliest(), Some(1_400_000));
    }

    #[test]
    fn alarm_answers_the_seconds_left_of_the_previous_one() {
        let mut t = Timers::default();
        let mut mem = VecMemory::new(BASE, 0x1000);
        assert_eq!(call(&mut t, &mut mem, 0, SYS_ALARM, &[5]), Ok(0));
        assert_eq!(call(&mut t, &mut mem, NANOS / 2, SYS_ALARM, &[0]), Ok(5));
        assert_eq!(t.earliest(), None, "alarm(0) cancels");
    }
}
