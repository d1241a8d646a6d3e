//! `futex` for a guest with exactly one thread.
//!
//! With one thread nobody else can change a futex word or be waiting on one,
//! so every operation has a fixed answer, the one the kernel would give:
//!
//! - `FUTEX_WAKE`, `FUTEX_WAKE_BITSET`, `FUTEX_REQUEUE`: nobody is woken (0).
//!   glibc's `pthread_once`, `call_once` and lock releases always wake.
//! - `FUTEX_CMP_REQUEUE`: `EAGAIN` when `*uaddr != val3`, else 0.
//! - `FUTEX_WAKE_OP`: the operation is applied to `*uaddr2` (the kernel does
//!   that even with no waiters); nobody is woken (0).
//! - `FUTEX_WAIT`, `FUTEX_WAIT_BITSET`: `EAGAIN` when `*uaddr != val` (the
//!   word changed); with a timeout, `ETIMEDOUT` (nobody can wake it). Without
//!   a timeout the wait could never end, natively a hang: that is left
//!   unsupported, so the run stops and names the call instead of hanging.
//! - Priority-inheritance operations are not emulated (unsupported).

use super::numbers::SYS_FUTEX;
use super::{Errno, GuestMemory, SysResult, SyscallCall};

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
/// `FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME`: do not change the answer.
const FUTEX_MODIFIERS: u64 = 128 | 256;
const ETIMEDOUT: Errno = Errno(110);

/// Handles `futex`; `None` for other numbers and for operations that cannot
/// be answered with one thread (see the module doc).
pub fn handle(call: &mut SyscallCall<'_>) -> Option<SysResult> {
    if call.number != SYS_FUTEX {
        return None;
    }
    let [uaddr, op, val, timeout, uaddr2, val3] = call.args;
    let mem = &mut *call.mem;
    Some(match op & !FUTEX_MODIFIERS {
        FUTEX_WAKE | FUTEX_WAKE_BITSET | FUTEX_REQUEUE => Ok(0),
        FUTEX_CMP_REQUEUE => read_word(mem, uaddr).and_then(|word| {
            if word == val3 as u32 {
                Ok(0)
            } else {
                Err(Errno::EAGAIN)
            }
        }),
        FUTEX_WAKE_OP => wake_op(mem, uaddr2, val3 as u32).map(|()| 0),
        FUTEX_WAIT | FUTEX_WAIT_BITSET => match read_word(mem, uaddr) {
            Err(e) => Err(e),
            Ok(word) if word != val as u32 => Err(Errno::EAGAIN),
            Ok(_) if timeout != 0 => Err(ETIMEDOUT),
            Ok(_) => return None,
        },
        _ => return None,
    })
}

fn read_word(mem: &dyn GuestMemory, addr: u64) -> Result<u32, Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 4];
    mem.read(addr, &mut bytes)?;
    Ok(u32::from_le_bytes(bytes))
}

/// Applies the `FUTEX_WAKE_OP` operation encoded in `encoded` to `*uaddr2`.
fn wake_op(mem: &mut dyn GuestMemory, uaddr2: u64, encoded: u32) -> Result<(), Errno> {
    const OPARG_SHIFT: u32 = 8;
    let op = (encoded >> 28) & 0xf;
    let raw_arg = (encoded >> 12) & 0xfff;
    // The 12-bit argument is sign-extended, as the kernel does.
    let mut oparg = ((raw_arg << 20) as i32 >> 20) as u32;
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
    mem.write(uaddr2, &new.to_le_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::test_memory::VecMemory;

    const WORD: u64 = 0x1000;
    const OTHER: u64 = 0x1004;

    fn futex(mem: &mut VecMemory, args: [u64; 6]) -> Option<SysResult> {
        handle(&mut SyscallCall {
            number: SYS_FUTEX,
            args,
            mem,
        })
    }

    fn memory(word: u32, other: u32) -> VecMemory {
        let mut mem = VecMemory::new(WORD, 0x100);
        mem.put(WORD, &word.to_le_bytes());
        mem.put(OTHER, &other.to_le_bytes());
        mem
    }

    #[test]
    fn wakes_find_nobody_waiting() {
        let mut mem = memory(1, 0);
        assert_eq!(
            futex(&mut mem, [WORD, FUTEX_WAKE | 128, i32::MAX as u64, 0, 0, 0]),
            Some(Ok(0))
        );
        assert_eq!(
            futex(&mut mem, [WORD, FUTEX_WAKE_BITSET, 1, 0, 0, u64::MAX]),
            Some(Ok(0))
        );
    }

    #[test]
    fn waits_end_at_once_or_are_left_unsupported() {
        let mut mem = memory(2, 0);
        assert_eq!(
            futex(&mut mem, [WORD, FUTEX_WAIT | 128, 1, 0, 0, 0]),
            Some(Err(Errno::EAGAIN))
        );
        assert_eq!(
            futex(&mut mem, [WORD, FUTEX_WAIT_BITSET, 2, OTHER, 0, 0]),
            Some(Err(ETIMEDOUT))
        );
        assert_eq!(futex(&mut mem, [WORD, FUTEX_WAIT, 2, 0, 0, 0]), None);
        assert_eq!(
            futex(&mut mem, [WORD + 1, FUTEX_WAIT, 2, 0, 0, 0]),
            Some(Err(Errno::EINVAL))
        );
        assert_eq!(
            futex(&mut mem, [0xdead_0000, FUTEX_WAIT, 2, 0, 0, 0]),
            Some(Err(Errno::EFAULT))
        );
    }

    #[test]
    fn wake_op_updates_the_second_word() {
        let mut mem = memory(0, 5);
        // FUTEX_OP(FUTEX_OP_ADD, 3, FUTEX_OP_CMP_EQ, 0)
        let add_three = (1u64 << 28) | (3 << 12);
        assert_eq!(
            futex(&mut mem, [WORD, FUTEX_WAKE_OP, 1, 1, OTHER, add_three]),
            Some(Ok(0))
        );
        assert_eq!(mem.get(OTHER, 4), 8u32.to_le_bytes());
        // FUTEX_OP(FUTEX_OP_SET | FUTEX_OP_OPARG_SHIFT, 4, ...): 1 << 4
        let set_bit = (8u64 << 28) | (4 << 12);
        futex(&mut mem, [WORD, FUTEX_WAKE_OP, 1, 1, OTHER, set_bit]);
        assert_eq!(mem.get(OTHER, 4), 16u32.to_le_bytes());
    }

    #[test]
    fn cmp_requeue_checks_the_word() {
        let mut mem = memory(7, 0);
        assert_eq!(
            futex(&mut mem, [WORD, FUTEX_CMP_REQUEUE, 1, 1, OTHER, 7]),
            Some(Ok(0))
        );
        assert_eq!(
            futex(&mut mem, [WORD, FUTEX_CMP_REQUEUE, 1, 1, OTHER, 8]),
            Some(Err(Errno::EAGAIN))
        );
    }
}
