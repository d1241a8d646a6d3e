//! Guest threads on the one emulated CPU: `clone` of a thread, thread
//! `exit`, futex waits and sleeps that block, and the switch from one thread
//! to the next, which happens between two `emu_start` calls (a hook asks for
//! it with [`request_switch`]). [`scheduler`] decides who runs.
//!
//! Each thread's registers (segment bases, x87/SSE state included) are
//! Unicorn's context, saved and restored whole; its signal mask, pending
//! signals, alternate stack and signal-handler contexts are swapped in and
//! out of the machine state with it. The call-tree thread hears of every
//! spawn and switch through the feed, in guest execution order.

pub mod fd_waits;
pub mod scheduler;
mod timer_signals;

use unicorn_engine::{RegisterX86, Unicorn};

use super::state::MachineState;
use super::stop::{BlockedThread, StopReason};
use crate::memory::GuestView;
use crate::syscalls::files::select::FdSets;
use crate::syscalls::futex::{FutexOutcome, Timeout, ETIMEDOUT};
use crate::syscalls::numbers::SYS_CLONE3;
use crate::syscalls::{Errno, GuestMemory, SysResult, SyscallCall};
pub use scheduler::{Next, RunState, Scheduler, Wait, DEFAULT_QUANTUM};

use super::processes::ProcessClone;

const CLONE_VM: u64 = 0x100;
const CLONE_FILES: u64 = 0x400;
const CLONE_VFORK: u64 = 0x4000;
const CLONE_SIGHAND: u64 = 0x800;
const CLONE_THREAD: u64 = 0x1_0000;
const CLONE_SETTLS: u64 = 0x8_0000;
const CLONE_PARENT_SETTID: u64 = 0x10_0000;
const CLONE_CHILD_CLEARTID: u64 = 0x20_0000;
const CLONE_CHILD_SETTID: u64 = 0x100_0000;
/// The flags that make a thread rather than a process.
const THREAD_FLAGS: u64 = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD;
/// `sizeof(struct clone_args)` of its first version.
const CLONE_ARGS_SIZE_VER0: u64 = 64;
/// Length of the `syscall` instruction.
const SYSCALL_LENGTH: u64 = 2;

/// A `clone` or `clone3` request, whichever the guest used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CloneRequest {
    flags: u64,
    /// The new thread's stack pointer (0: the caller's).
    stack_pointer: u64,
    parent_tid: u64,
    child_tid: u64,
    tls: u64,
}

impl CloneRequest {
    fn read(number: u64, args: [u64; 6], mem: &dyn GuestMemory) -> Result<CloneRequest, Errno> {
        if number != SYS_CLONE3 {
            // x86-64 argument order: flags, stack, parent_tid, child_tid, tls.
            return Ok(CloneRequest {
                flags: args[0],
                stack_pointer: args[1],
                parent_tid: args[2],
                child_tid: args[3],
                tls: args[4],
            });
        }
        if args[1] < CLONE_ARGS_SIZE_VER0 {
            return Err(Errno::EINVAL);
        }
        let field = |i: u64| mem.read_u64(args[0] + 8 * i);
        let (stack, stack_size) = (field(5)?, field(6)?);
        Ok(CloneRequest {
            flags: field(0)?,
            stack_pointer: if stack == 0 { 0 } else { stack + stack_size },
            parent_tid: field(3)?,
            child_tid: field(2)?,
            tls: field(7)?,
        })
    }
}

/// `clone`/`clone3` of a thread: the new thread starts just past the
/// `syscall` with the caller's registers but `rax = 0`, its own stack and,
/// with `CLONE_SETTLS`, its own FS base; it runs when the scheduler picks
/// it. `None` when the flags ask for a new process, which is not emulated.
pub fn clone(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Option<SysResult> {
    let request = {
        let view = GuestView {
            uc,
            space: &st.space,
        };
        match CloneRequest::read(number, args, &view) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        }
    };
    if request.flags & THREAD_FLAGS == THREAD_FLAGS {
        return Some(spawn(uc, st, request));
    }
    let process = ProcessClone {
        vfork: request.flags & CLONE_VFORK != 0,
        stack_pointer: request.stack_pointer,
        tls: (request.flags & CLONE_SETTLS != 0).then_some(request.tls),
        parent_tid: (request.flags & CLONE_PARENT_SETTID != 0).then_some(request.parent_tid),
        child_tid: (request.flags & CLONE_CHILD_SETTID != 0).then_some(request.child_tid),
    };
    // Sharing the address space without CLONE_VFORK (or sharing file or
    // signal tables between processes) cannot be given by a copy.
    let shares = request.flags & (CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_FILES);
    if shares != 0 && !(shares == CLONE_VM && process.vfork) {
        return None;
    }
    Some(super::processes::fork(uc, st, process))
}

fn spawn(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, request: CloneRequest) -> SysResult {
    st.table.borrow().room_for(false)?;
    let fail = |_| Errno::ENOMEM;
    let parent = uc.context_init().map_err(fail)?;
    let pc = uc.pc_read().map_err(fail)?;
    let sp = if request.stack_pointer != 0 {
        request.stack_pointer
    } else {
        uc.reg_read(RegisterX86::RSP).map_err(fail)?
    };
    let mut child_registers = vec![
        (RegisterX86::RIP, pc + SYSCALL_LENGTH),
        (RegisterX86::RAX, 0),
        (RegisterX86::RSP, sp),
    ];
    if request.flags & CLONE_SETTLS != 0 {
        child_registers.push((RegisterX86::FS_BASE, request.tls));
    }
    for (reg, value) in child_registers {
        uc.reg_write(reg, value).map_err(fail)?;
    }
    let child = uc.context_init().map_err(fail);
    uc.context_restore(&parent).map_err(fail)?;
    let child = child?;

    let signals = st.sys.signals.running_thread().for_new_thread();
    let tid = st.table.borrow_mut().next_id();
    st.table.borrow_mut().count_thread(st.pid, 1);
    let index = st.threads.add(tid, signals);
    let thread = &mut st.threads.threads[index];
    thread.context = Some(child);
    if request.flags & CLONE_CHILD_CLEARTID != 0 {
        thread.clear_child_tid = request.child_tid;
    }
    let mut view = GuestView {
        uc,
        space: &st.space,
    };
    for (flag, address) in [
        (CLONE_PARENT_SETTID, request.parent_tid),
        (CLONE_CHILD_SETTID, request.child_tid),
    ] {
        if request.flags & flag != 0 {
            view.write(address, &(tid as u32).to_le_bytes())?;
        }
    }
    st.feed.spawn_thread(sp);
    if let Some(slot) = &st.handles.snapshots {
        slot.thread_started(index, tid);
    }
    Ok(tid)
}

/// `exit` of one thread: with `CLONE_CHILD_CLEARTID` its tid word is zeroed
/// and one waiter woken (that is how `pthread_join` learns of it); the last
/// thread's exit ends the process with its status.
pub fn exit_thread(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, status: u64) {
    if st.threads.live() <= 1 {
        st.stop = Some(StopReason::Exited(status as i32));
        return;
    }
    let running = st.threads.running;
    st.table.borrow_mut().count_thread(st.pid, -1);
    let thread = st.threads.current();
    thread.state = RunState::Exited;
    let clear = std::mem::take(&mut thread.clear_child_tid);
    if clear != 0 {
        let mut view = GuestView {
            uc,
            space: &st.space,
        };
        // A bad address is the guest's problem; Linux ignores it too.
        if view.write(clear, &0u32.to_le_bytes()).is_ok() {
            st.sys.futexes.wake(clear, 1, u32::MAX);
        }
    }
    st.sys.futexes.cancel(running);
    if let Some(slot) = &st.handles.snapshots {
        slot.thread_exited(running);
    }
    wake_futex_waiters(st);
    request_switch(st);
}

/// `futex` by the running thread: returns at once, or blocks it (the result
/// then comes when it is woken). `None` for operations not emulated.
pub fn futex(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, args: [u64; 6]) -> Option<SysResult> {
    let running = st.threads.running;
    let outcome = {
        let mut view = GuestView {
            uc,
            space: &st.space,
        };
        let mut call = SyscallCall {
            number: crate::syscalls::numbers::SYS_FUTEX,
            args,
            mem: &mut view,
        };
        st.sys.futexes.call(&mut call, running)?
    };
    wake_futex_waiters(st);
    if let Some(word) = shared_word_woken(st, args) {
        st.table
            .borrow_mut()
            .shared_futex_wakes
            .push((st.pid, word));
    }
    match outcome {
        FutexOutcome::Return(result) => Some(result),
        FutexOutcome::Wait { address, timeout } => {
            let deadline = timeout.map(|t| deadline_of(st, t));
            block(st, Wait::Futex(address), deadline, ETIMEDOUT.to_rax());
            Some(Ok(0))
        }
    }
}

/// The guest-physical address of the futex word a wake operation names,
/// when it lies in memory shared between processes (whose threads in other
/// processes may wait on it).
fn shared_word_woken(st: &MachineState, args: [u64; 6]) -> Option<u64> {
    const FUTEX_WAKE: u64 = 1;
    const FUTEX_REQUEUE: u64 = 3;
    const FUTEX_CMP_REQUEUE: u64 = 4;
    const FUTEX_WAKE_OP: u64 = 5;
    const FUTEX_WAKE_BITSET: u64 = 10;
    let wakes = matches!(
        args[1] & 0x7f,
        FUTEX_WAKE | FUTEX_REQUEUE | FUTEX_CMP_REQUEUE | FUTEX_WAKE_OP | FUTEX_WAKE_BITSET
    );
    wakes.then(|| st.space.shared_physical(args[0])).flatten()
}

/// Wakes the threads waiting on a futex word at one of `words`
/// (guest-physical addresses in memory shared between processes) that
/// another process woke: each returns 0, as after a wake-up (a waiter
/// checks its word again, so waking more than were asked is harmless).
pub fn wake_shared_futex_waiters(st: &mut MachineState, words: &[u64]) {
    let waiting = st.threads.blocked_on(|w| {
        matches!(w, Wait::Futex(at) if st.space.shared_physical(*at).is_some_and(|p| words.contains(&p)))
    });
    for thread in waiting {
        st.sys.futexes.cancel(thread);
        st.threads.wake(thread, 0);
    }
}

/// A sleep of `ns` nanoseconds by the running thread while other threads
/// live: it blocks until the virtual clock has advanced that far.
pub fn sleep(st: &mut MachineState, ns: u64) {
    let deadline = deadline_of(st, Timeout::After(ns));
    block(st, Wait::Sleep, Some(deadline), 0);
}

/// A handled signal for a thread that is not running: it is pending for
/// that thread, and a wait it is blocked in ends with `EINTR`, so the
/// handler runs as soon as the thread does.
pub fn interrupt(st: &mut MachineState, thread: usize, sig: u64) {
    st.threads.threads[thread].signals.post(sig);
    wake_for_signal(st, thread);
}

/// Wakes a blocked thread a signal has arrived for: a `rt_sigtimedwait`
/// runs again (it may take the signal), any other wait ends with `EINTR`
/// when a signal its mask lets through is pending.
pub fn wake_for_signal(st: &mut MachineState, thread: usize) {
    let RunState::Blocked { on, .. } = st.threads.threads[thread].state else {
        return;
    };
    let signals = if thread == st.threads.running {
        st.sys.signals.running_thread()
    } else {
        &st.threads.threads[thread].signals
    };
    if !matches!(on, Wait::SignalIn(_)) && !signals.has_unblocked() {
        // Blocked signals stay pending and end no wait (a signalfd's read
        // or poll sees them: `fd_waits`).
        return;
    }
    st.sys.futexes.cancel(thread);
    if let Wait::SignalIn(_) = on {
        st.threads.wake_to_retry(thread);
    } else {
        st.threads.wake(thread, Errno::EINTR.to_rax());
    }
}

/// Whether thread `thread` waits in `rt_sigtimedwait` for `sig`.
pub fn waits_for(st: &MachineState, thread: usize, sig: u64) -> bool {
    matches!(
        st.threads.threads[thread].state,
        RunState::Blocked { on: Wait::SignalIn(set), .. } if set & 1u64.checked_shl((sig as u32).wrapping_sub(1)).unwrap_or(0) != 0
    )
}

/// `rt_sigtimedwait` with none of `set` pending: the thread blocks until a
/// signal arrives (its call runs again) or `timeout_ns` of virtual time
/// has passed (it fails with `EAGAIN`).
pub fn wait_for_signal_in(st: &mut MachineState, set: u64, timeout_ns: Option<u64>) {
    let deadline = timeout_ns.map(|ns| deadline_of(st, Timeout::After(ns)));
    block(st, Wait::SignalIn(set), deadline, Errno::EAGAIN.to_rax());
}

/// `rt_sigsuspend`/`pause`: the thread blocks until a signal for it
/// arrives (it is woken with `EINTR` then, see [`interrupt`]).
pub fn wait_for_signal(st: &mut MachineState) {
    block(st, Wait::Signal, None, Errno::EINTR.to_rax());
}

/// A read or write of a guest pipe or socket that has to wait for another
/// thread or process: the thread blocks, and its call runs again once the
/// fd is ready, or fails with `EAGAIN` after `limit_ns` of virtual time
/// (a socket's `SO_RCVTIMEO`/`SO_SNDTIMEO`).
pub fn wait_for_io(st: &mut MachineState, fd: i32, write: bool, limit_ns: Option<u64>) {
    let deadline = limit_ns.map(|ns| deadline_of(st, Timeout::After(ns)));
    block(st, Wait::Io { fd, write }, deadline, Errno::EAGAIN.to_rax());
}

/// A `poll` of guest pipes none of which is ready: the thread blocks until
/// one is (its call runs again) or `timeout_ns` of virtual time has passed
/// (it returns 0).
pub fn wait_for_poll(st: &mut MachineState, fds: u64, count: u64, timeout_ns: Option<u64>) {
    let deadline = timeout_ns.map(|ns| deadline_of(st, Timeout::After(ns)));
    block(st, Wait::Poll { fds, count }, deadline, 0);
}

/// A `select`/`pselect6` of guest pipes none of which is ready: the
/// thread blocks until one is (its call runs again) or `timeout_ns` of
/// virtual time has passed (its call runs again, finds the timeout passed
/// and clears the sets).
pub fn wait_for_select(st: &mut MachineState, sets: FdSets, timeout_ns: Option<u64>) {
    let deadline = timeout_ns.map(|ns| deadline_of(st, Timeout::After(ns)));
    block(st, Wait::Select(sets), deadline, 0);
}

/// An `epoll_wait` of an instance that watches a guest pipe, with nothing
/// ready: the thread blocks until the epoll fd `epfd` polls readable (its
/// call runs again) or `timeout_ns` of virtual time has passed (it returns
/// 0).
pub fn wait_for_epoll(st: &mut MachineState, epfd: i32, timeout_ns: Option<u64>) {
    let deadline = timeout_ns.map(|ns| deadline_of(st, Timeout::After(ns)));
    block(
        st,
        Wait::Io {
            fd: epfd,
            write: false,
        },
        deadline,
        0,
    );
}

/// An open of a FIFO for writing with no reader yet: the thread blocks and
/// its call runs again after a millisecond of virtual time (see
/// `syscalls::files::fifo`).
pub fn wait_for_fifo_reader(st: &mut MachineState) {
    let deadline = deadline_of(st, Timeout::After(FIFO_REOPEN_NS));
    block(st, Wait::FifoReader, Some(deadline), 0);
}

/// How long, in virtual time, a writer's open of a FIFO waits before it
/// looks for a reader again.
const FIFO_REOPEN_NS: u64 = 1_000_000;

/// `sched_yield`: another runnable thread (of this process or another)
/// runs first.
pub fn yield_now(st: &mut MachineState) {
    if st.threads.others_runnable() || st.others_runnable {
        request_switch(st);
    }
}

/// Asks for a thread switch once the current hook returns (the hook stops
/// the emulator; the run loop calls [`switch`]).
pub fn request_switch(st: &mut MachineState) {
    st.reschedule = true;
}

/// Whether the running thread has used its quantum while another could run:
/// asked when a batch of events is full. A thread whose timeout has passed
/// on the virtual clock can run too: the end of the quantum is where it
/// wakes, even while the running thread never waits, and so can another
/// process's (`others_deadline`). (Without one, the quantum starts again:
/// the clock is looked at once a quantum.)
pub fn quantum_used(st: &mut MachineState) -> bool {
    if st.feed.position() - st.quantum_start < st.threads.quantum {
        return false;
    }
    if st.threads.others_runnable() || st.others_runnable {
        return true;
    }
    let Some(deadline) = next_deadline(st)
        .into_iter()
        .chain(st.others_deadline)
        .min()
    else {
        return false;
    };
    if deadline <= now(st) {
        return true;
    }
    st.quantum_start = st.feed.position();
    false
}

/// Whether the running thread is blocked (its syscall's result comes later).
pub fn running_blocked(st: &mut MachineState) -> bool {
    matches!(st.threads.current().state, RunState::Blocked { .. })
}

fn block(st: &mut MachineState, on: Wait, deadline: Option<u64>, timeout_result: u64) {
    st.threads.current().state = RunState::Blocked {
        on,
        deadline,
        timeout_result,
    };
    request_switch(st);
}

/// Makes the threads the last futex operation woke runnable (their wait
/// returns 0).
fn wake_futex_waiters(st: &mut MachineState) {
    for thread in st.sys.futexes.take_woken() {
        st.threads.wake(thread, 0);
    }
}

/// The virtual monotonic time now (waits for the call-tree thread).
pub fn now(st: &mut MachineState) -> u64 {
    let instructions = st.feed.sync().instructions;
    st.sys.time.clock.monotonic_ns(instructions)
}

/// The monotonic deadline of a timeout.
fn deadline_of(st: &mut MachineState, timeout: Timeout) -> u64 {
    match timeout {
        Timeout::After(ns) => now(st).saturating_add(ns),
        Timeout::AtMonotonic(at) => at,
        Timeout::AtRealtime(at) => at.saturating_sub(st.sys.time.clock.start_ns()),
    }
}

/// How many timer expiries in a row may wake no thread, when no thread
/// waits with a timeout, before the run counts as deadlocked (an interval
/// timer whose signal is ignored would otherwise move the clock for ever).
const IDLE_EXPIRIES: u32 = 64;

/// The earliest time something waits for: a blocked thread's timeout or a
/// timer's expiry (monotonic virtual time).
pub fn next_deadline(st: &MachineState) -> Option<u64> {
    let threads = st.threads.earliest_deadline();
    threads.into_iter().chain(next_timer(st)).min()
}

/// The earliest expiry of a timer or timerfd (monotonic virtual time).
fn next_timer(st: &MachineState) -> Option<u64> {
    let timers = st.sys.time.timers.earliest();
    timers
        .into_iter()
        .chain(st.sys.files.next_timerfd_expiry())
        .min()
}

/// Fires what is due at `now`: the signals of timers, the expirations of
/// timerfds; whether a thread waiting for a timerfd or signalfd may run
/// again (something fired, and the process has one).
fn fire_timers(st: &mut MachineState, now: u64) -> bool {
    let signalled = timer_signals::fire(st, now);
    let expired = st.sys.files.expire_timerfds(now);
    (signalled || expired) && st.sys.files.has_virtual_fds()
}

/// Switches to the thread the scheduler picks (possibly the running one
/// again, after a wait that timed out). Called by the run loop between two
/// `emu_start`s. Timers that have expired send their signals first. When no
/// thread can run, the clock jumps to the next timeout or timer expiry.
/// Errors end the run: a deadlock, or the emulator failing to save or
/// restore registers.
pub fn switch(uc: &mut Unicorn<'_, ()>, st: &mut MachineState) -> Result<(), StopReason> {
    st.reschedule = false;
    // The time matters only to threads waiting with a deadline and timers.
    let mut now = next_deadline(st).map(|_| now(st));
    if let Some(now) = now {
        expire(st, now);
        if fire_timers(st, now) {
            fd_waits::wake_ready(uc, st);
        }
    }
    let mut idle_expiries = 0;
    let next = loop {
        let timer = next_timer(st);
        // The thread whose timeout is the time to wait for runs first.
        let (at, timed_out) = match st.threads.pick_next() {
            Next::Run(next) => break next,
            Next::AllExited => {
                return Err(StopReason::Internal(
                    "every thread exited without ending the process".into(),
                ))
            }
            Next::WakeAt { thread, at } => match timer {
                Some(expiry) if expiry < at => (expiry, None),
                _ => (at, Some(thread)),
            },
            Next::Deadlock => match timer {
                Some(expiry) => (expiry, None),
                // Timers fired here and woke nobody: another process may
                // still wake a thread (the run loop looks, and calls a
                // deadlock what nothing can end).
                None if idle_expiries > 0 => return Ok(()),
                None => return Err(deadlock(uc, st)),
            },
        };
        let before = now.unwrap_or(at);
        st.sys.time.clock.sleep(at.saturating_sub(before));
        let at = at.max(before);
        now = Some(at);
        expire(st, at);
        if fire_timers(st, at) {
            fd_waits::wake_ready(uc, st);
        }
        if let Some(thread) =
            timed_out.filter(|&t| st.threads.threads[t].state == RunState::Runnable)
        {
            break thread;
        }
        // Timers whose signals wake nobody (ignored, blocked), with no
        // thread that will time out, leave everyone waiting for ever.
        idle_expiries += u32::from(!st.threads.any_runnable());
        if idle_expiries > IDLE_EXPIRIES && st.threads.earliest_deadline().is_none() {
            return Err(deadlock(uc, st));
        }
    };
    let internal = |what: &str| StopReason::Internal(format!("thread switch: {what}"));
    let previous = st.threads.running;
    if next != previous {
        if st.threads.threads[previous].state != RunState::Exited {
            let saved = uc
                .context_init()
                .map_err(|_| internal("saving registers"))?;
            st.threads.threads[previous].context = Some(saved);
        }
        let incoming = st.threads.threads[next]
            .context
            .take()
            .ok_or_else(|| internal("a thread without registers"))?;
        uc.context_restore(&incoming)
            .map_err(|_| internal("restoring registers"))?;
        for index in [previous, next] {
            let thread = &mut st.threads.threads[index];
            st.sys.signals.swap_thread(&mut thread.signals);
            std::mem::swap(&mut st.signal_contexts, &mut thread.signal_contexts);
        }
        st.threads.running = next;
        let previous_exited = st.threads.threads[previous].state == RunState::Exited;
        st.feed.switch_thread(next, previous_exited);
    }
    if let Some(result) = st.threads.current().resume_result.take() {
        uc.reg_write(RegisterX86::RAX, result)
            .map_err(|_| internal("writing a result"))?;
    }
    st.quantum_start = st.feed.position();
    if std::mem::take(&mut st.threads.current().retry) {
        // Its call may go through now (another process acted); it runs
        // again and may block again.
        super::syscall_dispatch::redo(uc, st);
        return Ok(());
    }
    // Signals another thread sent it while it was not running.
    super::syscall_dispatch::deliver_pending(uc, st, 0);
    Ok(())
}

/// Wakes what waits for a time at or before `now`, as the switch does:
/// threads whose timeout passed, and the threads timers signal. The
/// running thread is switched (in) again, so that its result or signal
/// reaches it.
pub fn wake_due(st: &mut MachineState, now: u64) {
    expire(st, now);
    // The run loop wakes the waiters of the timerfds that expired.
    fire_timers(st, now);
    request_switch(st);
}

/// Wakes the threads whose deadline has passed and takes them off the
/// futex queues; whether there were any.
fn expire(st: &mut MachineState, now: u64) -> bool {
    let woken = st.threads.expire(now);
    for &thread in &woken {
        st.sys.futexes.cancel(thread);
    }
    !woken.is_empty()
}

/// The deadlock stop: every live thread and what it waits for (call stacks
/// are added once the call tree has caught up).
fn deadlock(uc: &mut Unicorn<'_, ()>, st: &mut MachineState) -> StopReason {
    let running = st.threads.running;
    let threads = st
        .threads
        .threads
        .iter()
        .enumerate()
        .filter_map(|(index, t)| {
            let RunState::Blocked { on, .. } = t.state else {
                return None;
            };
            let waits = match on {
                Wait::Futex(address) => format!("futex {address:#x}"),
                Wait::Sleep => "sleep".to_string(),
                Wait::Child(_) => "a child process".to_string(),
                Wait::Io { fd, write: false } => format!("a read of fd {fd}"),
                Wait::Io { fd, write: true } => format!("a write to fd {fd}"),
                Wait::Vfork(pid) => format!("vfork child {pid}"),
                Wait::Poll { count, .. } => format!("poll of {count} fds"),
                Wait::Select(sets) => format!("select of {} fds", sets.nfds),
                Wait::FifoReader => "a reader of the FIFO it opens".to_string(),
                Wait::Signal => "a signal (sigsuspend or pause)".to_string(),
                Wait::SignalIn(set) => format!("a signal of the set {set:#x} (sigtimedwait)"),
            };
            let pc = if index == running {
                uc.pc_read().ok()
            } else {
                None
            };
            Some(BlockedThread {
                tid: t.tid,
                index,
                waits,
                pc,
                stack: Vec::new(),
            })
        })
        .collect();
    StopReason::Deadlock { threads }
}
