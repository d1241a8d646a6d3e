//! `futex`: wait queues for the guest's threads.
//!
//! This file decides what a futex operation does (compare the word, queue
//! the caller, pick whom to wake); the scheduler (`machine::threads`) blocks
//! and resumes threads accordingly. Waiters are woken in the order they
//! started waiting, so the order is the same on every run.
//!
//! Supported: `FUTEX_WAIT`, `FUTEX_WAKE`, `FUTEX_WAIT_BITSET`,
//! `FUTEX_WAKE_BITSET`, `FUTEX_REQUEUE`, `FUTEX_CMP_REQUEUE`,
//! `FUTEX_WAKE_OP`, each with `FUTEX_PRIVATE_FLAG` (every futex is private to
//! the one guest process) and `FUTEX_CLOCK_REALTIME`. Priority-inheritance
//! operations and `futex_waitv` are not emulated (unsupported syscalls).
//!
//! Waiters are queued per futex word, so an operation costs the waiters of
//! the words it names, never every waiting thread of the process.

use std::collections::{BTreeMap, HashMap};

use super::{Errno, GuestMemory, SysResult, SyscallCall};

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_PRIVATE_FLAG: u64 = 128;
const FUTEX_CLOCK_REALTIME: u64 = 256;
/// Every bit set: the bitset of plain `FUTEX_WAIT`/`FUTEX_WAKE`.
const MATCH_ANY: u32 = u32::MAX;
/// `ETIMEDOUT`.
pub const ETIMEDOUT: Errno = Errno(110);

/// When a wait gives up, as the guest asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// After this many nanoseconds (`FUTEX_WAIT`'s relative timeout).
    After(u64),
    /// At this `CLOCK_MONOTONIC` time (`FUTEX_WAIT_BITSET`).
    AtMonotonic(u64),
    /// At this `CLOCK_REALTIME` time (`FUTEX_WAIT_BITSET` with
    /// `FUTEX_CLOCK_REALTIME`).
    AtRealtime(u64),
}

/// What a futex call does to the calling thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexOutcome {
    /// It returns at once with this result.
    Return(SysResult),
    /// It is queued on the word at `address` and blocks until woken (the
    /// call then returns 0) or until the timeout (`ETIMEDOUT`).
    Wait {
        /// The futex word.
        address: u64,
        /// Gives up then, if set.
        timeout: Option<Timeout>,
    },
}

/// One queued waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiter {
    thread: usize,
    bitset: u32,
}

/// When a waiter started waiting: the next waiter gets the next ticket, and
/// a requeued waiter keeps its own, so every queue is in the order its
/// waiters started waiting.
type Ticket = u64;

/// Every waiting thread, queued on its futex word in the order they started
/// waiting, and the threads woken by the last call.
#[derive(Debug, Default)]
pub struct Futexes {
    /// The waiters of each futex word that has any.
    queues: HashMap<u64, BTreeMap<Ticket, Waiter>>,
    /// Where each waiting thread is queued.
    waiting: HashMap<usize, (u64, Ticket)>,
    next_ticket: Ticket,
    woken: Vec<usize>,
    /// Waiters looked at by wakes and requeues, for the tests of their cost.
    #[cfg(test)]
    examined: usize,
}

impl Futexes {
    /// Performs a `futex` call made by thread `me`; `None` for an operation
    /// that is not emulated. Threads woken by it are then in
    /// [`Futexes::take_woken`]; when the outcome is `Wait`, `me` is queued.
    pub fn call(&mut self, call: &mut SyscallCall<'_>, me: usize) -> Option<FutexOutcome> {
        let [address, op, val, timeout, address2, val3] = call.args;
        let mem = &mut *call.mem;
        let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
        let count = |n: u64| n.min(i32::MAX as u64) as usize;
        let outcome = match cmd {
            FUTEX_WAIT | FUTEX_WAIT_BITSET => {
                let bitset = if cmd == FUTEX_WAIT {
                    MATCH_ANY
                } else {
                    val3 as u32
                };
                match self.wait(mem, me, address, val as u32, bitset) {
                    Err(e) => FutexOutcome::Return(Err(e)),
                    Ok(()) => match read_timeout(mem, cmd, op, timeout) {
                        Err(e) => {
                            self.cancel(me);
                            FutexOutcome::Return(Err(e))
                        }
                        Ok(timeout) => FutexOutcome::Wait { address, timeout },
                    },
                }
            }
            FUTEX_WAKE | FUTEX_WAKE_BITSET => {
                let bitset = if cmd == FUTEX_WAKE {
                    MATCH_ANY
                } else {
                    val3 as u32
                };
                if bitset == 0 {
                    FutexOutcome::Return(Err(Errno::EINVAL))
                } else {
                    FutexOutcome::Return(Ok(self.wake(address, count(val), bitset) as u64))
                }
            }
            FUTEX_REQUEUE => FutexOutcome::Return(Ok(self.requeue(
                address,
                count(val),
                address2,
                count(timeout),
            ))),
            FUTEX_CMP_REQUEUE => FutexOutcome::Return(read_word(mem, address).and_then(|word| {
                if word == val3 as u32 {
                    Ok(self.requeue(address, count(val), address2, count(timeout)))
                } else {
                    Err(Errno::EAGAIN)
                }
            })),
            FUTEX_WAKE_OP => {
                FutexOutcome::Return(wake_op(mem, address2, val3 as u32).map(|condition| {
                    let mut woken = self.wake(address, count(val), MATCH_ANY);
                    if condition {
                        woken += self.wake(address2, count(timeout), MATCH_ANY);
                    }
                    woken as u64
                }))
            }
            _ => return None,
        };
        Some(outcome)
    }

    /// Threads woken since the last call to this, in wake order.
    pub fn take_woken(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.woken)
    }

    /// Removes `thread` from its queue (its wait timed out, or it is gone).
    pub fn cancel(&mut self, thread: usize) {
        if let Some((address, ticket)) = self.waiting.remove(&thread) {
            self.leave(address, ticket);
        }
    }

    /// Wakes up to `n` waiters on `address` (the way a thread's exit wakes
    /// `pthread_join` through `CLONE_CHILD_CLEARTID`); returns how many.
    pub fn wake(&mut self, address: u64, n: usize, bitset: u32) -> usize {
        let Some(queue) = self.queues.get(&address) else {
            return 0;
        };
        let mut hits = Vec::new();
        for (&ticket, waiter) in queue {
            if hits.len() == n {
                break;
            }
            #[cfg(test)]
            {
                self.examined += 1;
            }
            if waiter.bitset & bitset != 0 {
                hits.push((ticket, waiter.thread));
            }
        }
        for &(ticket, thread) in &hits {
            self.leave(address, ticket);
            self.waiting.remove(&thread);
            self.woken.push(thread);
        }
        hits.len()
    }

    /// Takes the waiter with `ticket` out of `address`'s queue.
    fn leave(&mut self, address: u64, ticket: Ticket) -> Option<Waiter> {
        let queue = self.queues.get_mut(&address)?;
        let waiter = queue.remove(&ticket);
        if queue.is_empty() {
            self.queues.remove(&address);
        }
        waiter
    }

    /// Queues `me` on `address` when the word still holds `expected`.
    fn wait(
        &mut self,
        mem: &dyn GuestMemory,
        me: usize,
        address: u64,
        expected: u32,
        bitset: u32,
    ) -> Result<(), Errno> {
        if bitset == 0 {
            return Err(Errno::EINVAL);
        }
        if read_word(mem, address)? != expected {
            return Err(Errno::EAGAIN);
        }
        self.cancel(me);
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.queues
            .entry(address)
            .or_default()
            .insert(ticket, Waiter { thread: me, bitset });
        self.waiting.insert(me, (address, ticket));
        Ok(())
    }

    /// Wakes up to `wake` waiters on `from` and moves up to `requeue` of
    /// the rest to `to`; returns woken + moved, as the kernel does.
    fn requeue(&mut self, from: u64, wake: usize, to: u64, requeue: usize) -> u64 {
        let woken = self.wake(from, wake, MATCH_ANY);
        let Some(queue) = self.queues.get(&from) else {
            return woken as u64;
        };
        let moving: Vec<Ticket> = queue.keys().take(requeue).copied().collect();
        #[cfg(test)]
        {
            self.examined += moving.len();
        }
        if from != to {
            for &ticket in &moving {
                if let Some(waiter) = self.leave(from, ticket) {
                    self.queues.entry(to).or_default().insert(ticket, waiter);
                    self.waiting.insert(waiter.thread, (to, ticket));
                }
            }
        }
        (woken + moving.len()) as u64
    }
}

/// The timeout argument of a wait: relative for `FUTEX_WAIT`, absolute for
/// `FUTEX_WAIT_BITSET`; none when the pointer is null.
fn read_timeout(
    mem: &dyn GuestMemory,
    cmd: u64,
    op: u64,
    address: u64,
) -> Result<Option<Timeout>, Errno> {
    if address == 0 {
        return Ok(None);
    }
    let secs = mem.read_u64(address)?;
    let nanos = mem.read_u64(address + 8)?;
    if nanos >= 1_000_000_000 || secs > i64::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    let ns = secs.saturating_mul(1_000_000_000).saturating_add(nanos);
    Ok(Some(if cmd == FUTEX_WAIT {
        Timeout::After(ns)
    } else if op & FUTEX_CLOCK_REALTIME != 0 {
        Timeout::AtRealtime(ns)
    } else {
        Timeout::AtMonotonic(ns)
    }))
}

fn read_word(mem: &dyn GuestMemory, addr: u64) -> Result<u32, Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 4];
    mem.read(addr, &mut bytes)?;
    Ok(u32::from_le_bytes(bytes))
}

/// Applies the `FUTEX_WAKE_OP` operation encoded in `encoded` to `*uaddr2`
/// and returns whether its comparison with the old value holds.
fn wake_op(mem: &mut dyn GuestMemory, uaddr2: u64, encoded: u32) -> Result<bool, Errno> {
    const OPARG_SHIFT: u32 = 8;
    let op = (encoded >> 28) & 0xf;
    let cmp = (encoded >> 24) & 0xf;
    let sign_extend_12 = |v: u32| ((v << 20) as i32 >> 20) as u32;
    let mut oparg = sign_extend_12((encoded >> 12) & 0xfff);
    let cmparg = sign_extend_12(encoded & 0xfff);
    if op & OPARG_SHIFT != 0 {
        oparg = 1u32.checked_shl(oparg).unwrap_or(0);
    }
    let old = read_word(mem, uaddr2)?;
    let new = match op & !OPARG_SHIFT {
        0 => oparg,
        1 => old.wrapping_add(oparg),
        2 => old | oparg,
        3 => old & !oparg,
        4 => old ^ oparg,
        _ => return Err(Errno::ENOSYS),
    };
    let condition = match cmp {
        0 => old == cmparg,
        1 => old != cmparg,
        2 => (old as i32) < cmparg as i32,
        3 => (old as i32) <= cmparg as i32,
        4 => (old as i32) > cmparg as i32,
        5 => (old as i32) >= cmparg as i32,
        _ => return Err(Errno::ENOSYS),
    };
    mem.write(uaddr2, &new.to_le_bytes())?;
    Ok(condition)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::numbers::SYS_FUTEX;
    use crate::syscalls::test_memory::VecMemory;

    const WORD: u64 = 0x1000;
    const OTHER: u64 = 0x1004;

    fn futex(
        f: &mut Futexes,
        mem: &mut VecMemory,
        me: usize,
        args: [u64; 6],
    ) -> Option<FutexOutcome> {
        f.call(
            &mut SyscallCall {
                number: SYS_FUTEX,
                args,
                mem,
            },
            me,
        )
    }

    fn memory(word: u32, other: u32) -> VecMemory {
        let mut mem = VecMemory::new(WORD, 0x100);
        mem.put(WORD, &word.to_le_bytes());
        mem.put(OTHER, &other.to_le_bytes());
        mem
    }

    fn wait_on(address: u64) -> Option<FutexOutcome> {
        Some(FutexOutcome::Wait {
            address,
            timeout: None,
        })
    }

    #[test]
    fn waiters_are_woken_in_the_order_they_waited() {
        let mut f = Futexes::default();
        let mut mem = memory(1, 0);
        for thread in [3, 1, 2] {
            assert_eq!(
                futex(
                    &mut f,
                    &mut mem,
                    thread,
                    [WORD, FUTEX_WAIT | 128, 1, 0, 0, 0]
                ),
                wait_on(WORD)
            );
        }
        let wake_two = [WORD, FUTEX_WAKE | 128, 2, 0, 0, 0];
        assert_eq!(
            futex(&mut f, &mut mem, 0, wake_two),
            Some(FutexOutcome::Return(Ok(2)))
        );
        assert_eq!(f.take_woken(), vec![3, 1]);
        assert_eq!(
            futex(&mut f, &mut mem, 0, wake_two),
            Some(FutexOutcome::Return(Ok(1)))
        );
        assert_eq!(f.take_woken(), vec![2]);
    }

    #[test]
    fn a_wake_looks_only_at_the_waiters_of_its_word() {
        let mut f = Futexes::default();
        let threads = 20_000u64;
        let mut mem = VecMemory::new(WORD, threads as usize * 4);
        for thread in 0..threads {
            let word = WORD + thread * 4;
            assert_eq!(
                futex(
                    &mut f,
                    &mut mem,
                    thread as usize,
                    [word, FUTEX_WAIT, 0, 0, 0, 0]
                ),
                wait_on(word)
            );
        }
        for thread in (0..threads).rev() {
            let wake = [WORD + thread * 4, FUTEX_WAKE, 1, 0, 0, 0];
            assert_eq!(
                futex(&mut f, &mut mem, 0, wake),
                Some(FutexOutcome::Return(Ok(1)))
            );
            assert_eq!(f.take_woken(), vec![thread as usize]);
        }
        assert_eq!(
            f.examined, threads as usize,
            "each wake looked at one waiter"
        );
        assert!(f.queues.is_empty() && f.waiting.is_empty());
    }

    #[test]
    fn a_changed_word_or_a_bad_address_returns_at_once() {
        let mut f = Futexes::default();
        let mut mem = memory(2, 0);
        assert_eq!(
            futex(&mut f, &mut mem, 1, [WORD, FUTEX_WAIT, 1, 0, 0, 0]),
            Some(FutexOutcome::Return(Err(Errno::EAGAIN)))
        );
        assert_eq!(
            futex(&mut f, &mut mem, 1, [WORD + 1, FUTEX_WAIT, 2, 0, 0, 0]),
            Some(FutexOutcome::Return(Err(Errno::EINVAL)))
        );
        assert_eq!(
            futex(&mut f, &mut mem, 1, [0xdead_0000, FUTEX_WAIT, 2, 0, 0, 0]),
            Some(FutexOutcome::Return(Err(Errno::EFAULT)))
        );
        assert!(f.queues.is_empty() && f.waiting.is_empty());
    }

    #[test]
    fn timeouts_are_relative_for_wait_and_absolute_for_wait_bitset() {
        let mut f = Futexes::default();
        let mut mem = memory(0, 0);
        mem.put(0x1010, &2u64.to_le_bytes());
        mem.put(0x1018, &5u64.to_le_bytes());
        assert_eq!(
            futex(&mut f, &mut mem, 1, [WORD, FUTEX_WAIT, 0, 0x1010, 0, 0]),
            Some(FutexOutcome::Wait {
                address: WORD,
                timeout: Some(Timeout::After(2_000_000_005))
            })
        );
        assert_eq!(
            futex(
                &mut f,
                &mut mem,
                2,
                [WORD, FUTEX_WAIT_BITSET | 256, 0, 0x1010, 0, 1]
            ),
            Some(FutexOutcome::Wait {
                address: WORD,
                timeout: Some(Timeout::AtRealtime(2_000_000_005))
            })
        );
        f.cancel(1);
        // Bitsets: a wake for bit 2 misses the waiter on bit 1.
        assert_eq!(
            futex(&mut f, &mut mem, 0, [WORD, FUTEX_WAKE_BITSET, 9, 0, 0, 2]),
            Some(FutexOutcome::Return(Ok(0)))
        );
        assert_eq!(
            futex(&mut f, &mut mem, 0, [WORD, FUTEX_WAKE_BITSET, 9, 0, 0, 1]),
            Some(FutexOutcome::Return(Ok(1)))
        );
        assert_eq!(f.take_woken(), vec![2]);
    }

    #[test]
    fn wake_op_updates_the_second_word_and_wakes_by_its_condition() {
        let mut f = Futexes::default();
        let mut mem = memory(0, 5);
        futex(&mut f, &mut mem, 1, [WORD, FUTEX_WAIT, 0, 0, 0, 0]);
        futex(&mut f, &mut mem, 2, [OTHER, FUTEX_WAIT, 5, 0, 0, 0]);
        // FUTEX_OP(FUTEX_OP_ADD, 3, FUTEX_OP_CMP_EQ, 5): old 5 == 5 holds.
        let add_three = (1u64 << 28) | (3 << 12) | 5;
        assert_eq!(
            futex(
                &mut f,
                &mut mem,
                0,
                [WORD, FUTEX_WAKE_OP, 1, 1, OTHER, add_three]
            ),
            Some(FutexOutcome::Return(Ok(2)))
        );
        assert_eq!(mem.get(OTHER, 4), 8u32.to_le_bytes());
        assert_eq!(f.take_woken(), vec![1, 2]);
        // FUTEX_OP(FUTEX_OP_SET | FUTEX_OP_OPARG_SHIFT, 4, ...): 1 << 4
        let set_bit = (8u64 << 28) | (4 << 12);
        futex(
            &mut f,
            &mut mem,
            0,
            [WORD, FUTEX_WAKE_OP, 1, 1, OTHER, set_bit],
        );
        assert_eq!(mem.get(OTHER, 4), 16u32.to_le_bytes());
    }

    #[test]
    fn cmp_requeue_checks_the_word_and_moves_waiters() {
        let mut f = Futexes::default();
        let mut mem = memory(7, 0);
        for thread in 1..=3 {
            futex(&mut f, &mut mem, thread, [WORD, FUTEX_WAIT, 7, 0, 0, 0]);
        }
        assert_eq!(
            futex(
                &mut f,
                &mut mem,
                0,
                [WORD, FUTEX_CMP_REQUEUE, 1, 1, OTHER, 8]
            ),
            Some(FutexOutcome::Return(Err(Errno::EAGAIN)))
        );
        assert_eq!(
            futex(
                &mut f,
                &mut mem,
                0,
                [WORD, FUTEX_CMP_REQUEUE, 1, 1, OTHER, 7]
            ),
            Some(FutexOutcome::Return(Ok(2)))
        );
        assert_eq!(f.take_woken(), vec![1]);
        assert_eq!(f.wake(OTHER, 9, MATCH_ANY), 1);
        assert_eq!(f.take_woken(), vec![2]);
        assert_eq!(f.wake(WORD, 9, MATCH_ANY), 1);
        assert_eq!(f.take_woken(), vec![3]);
    }
}
