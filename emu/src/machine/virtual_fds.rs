//! The machine's side of timerfds and signalfds
//! (`syscalls::files::virtual_fds`): before a file call of a process that
//! made one, the file family gets the exact virtual time (its timers expire)
//! and the pending signals (its signalfds become readable or not); a `read`
//! of a signalfd takes the signals here, where they are kept.

use unicorn_engine::Unicorn;

use super::state::MachineState;
use crate::memory::GuestView;
use crate::syscalls::files::virtual_fds::CallClock;
use crate::syscalls::numbers::SYS_READ;
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// Size of `struct signalfd_siginfo`.
const SIGINFO_SIZE: usize = 128;

/// Gives the file family the virtual time and pending signals of the call
/// about to run (only for a process that made a timerfd or signalfd: the
/// exact time waits for the call-tree builder).
pub(super) fn before_file_call(st: &mut MachineState) {
    if !st.sys.files.has_virtual_fds() {
        return;
    }
    let instructions = st.feed.sync().instructions;
    let clock = &st.sys.time.clock;
    st.sys.files.set_call_clock(CallClock {
        monotonic_ns: clock.monotonic_ns(instructions),
        start_ns: clock.start_ns(),
    });
    refresh_signalfds(st);
}

/// Makes the process's signalfds readable exactly while a signal of their
/// mask is pending.
pub(super) fn refresh_signalfds(st: &MachineState) {
    if st.sys.files.has_virtual_fds() {
        st.sys.files.refresh_signalfds(pending_signals(st));
    }
}

/// The signals pending for any thread of the process.
fn pending_signals(st: &MachineState) -> u64 {
    let running = st.threads.running;
    st.threads
        .threads
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != running)
        .fold(st.sys.signals.running_thread().pending(), |all, (_, t)| {
            all | t.signals.pending()
        })
}

/// `read` of a signalfd: one `struct signalfd_siginfo` per pending signal
/// of its mask that fits, lowest first, the calling thread's before the
/// other threads'; with none pending, `EAGAIN` for a non-blocking fd, else
/// the thread waits in the guest until one is (`WOULD_BLOCK`). `None` for
/// any other call.
pub(super) fn read_signalfd(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<SysResult> {
    if number != SYS_READ {
        return None;
    }
    let (mask, waits) = st.sys.files.signalfd_of(args[0] as i32)?;
    let room = args[2] as usize / SIGINFO_SIZE;
    if room == 0 {
        return Some(Err(Errno::EINVAL));
    }
    let mut records = Vec::new();
    while records.len() < room * SIGINFO_SIZE {
        let Some(sig) = take_pending(st, mask) else {
            break;
        };
        let mut record = [0u8; SIGINFO_SIZE];
        record[..4].copy_from_slice(&(sig as u32).to_le_bytes());
        records.extend_from_slice(&record);
    }
    refresh_signalfds(st);
    if records.is_empty() {
        return Some(Err(if waits {
            Errno::WOULD_BLOCK
        } else {
            Errno::EAGAIN
        }));
    }
    let mut view = GuestView {
        uc,
        space: &st.space,
    };
    Some(
        view.write(args[1], &records)
            .map(|()| records.len() as u64)
            .map_err(Errno::from),
    )
}

/// Takes the lowest pending signal of `set`: the running thread's, else
/// the first other thread's that has one.
fn take_pending(st: &mut MachineState, set: u64) -> Option<u64> {
    if let Some(sig) = st.sys.signals.take_pending_in(set) {
        return Some(sig);
    }
    let running = st.threads.running;
    st.threads
        .threads
        .iter_mut()
        .enumerate()
        .filter(|&(i, _)| i != running)
        .find_map(|(_, t)| t.signals.take_pending_in(set))
}
