//! The deterministic scheduler: which guest thread runs next.
//!
//! One guest thread runs at a time. The running thread gives way only at
//! points that are the same on every run: when it blocks (a futex wait, a
//! sleep), yields, exits, or has run for a quantum of guest work (counted in
//! call-tree events, mostly blocks, checked every few thousand of them)
//! while another thread can run — which includes a blocked thread whose
//! timeout has passed on the virtual clock by then. The next thread is the
//! first runnable one after the running one in thread index order (round
//! robin). When none is runnable, the blocked thread with
//! the earliest timeout (lowest index on a tie) wakes and the virtual clock
//! jumps to its timeout; when no thread has a timeout, the program is
//! deadlocked. Nothing here looks at the host's clock or threads.

use crate::syscalls::files::select::FdSets;
use crate::syscalls::signals::ThreadSignals;

/// Default quantum: events (≈ blocks, ≈ ten instructions each) a thread
/// runs before another runnable thread gets its turn.
pub const DEFAULT_QUANTUM: u64 = 200_000;

/// Why a thread is blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// In `futex` on the word at this address.
    Futex(u64),
    /// In `nanosleep`/`clock_nanosleep`.
    Sleep,
    /// In `wait4`/`waitid` for a child process to end (the `wait4` pid
    /// selector); the call runs again when such a child has ended.
    Child(i64),
    /// In a read (`write: false`) or write of guest fd `fd`, a pipe another
    /// guest process holds the other end of; the call runs again when the
    /// pipe is ready.
    Io {
        /// The guest fd.
        fd: i32,
        /// Whether it waits to write rather than to read.
        write: bool,
    },
    /// In `vfork`, until child `pid` execs or exits.
    Vfork(u64),
    /// In `poll`/`ppoll` of `count` pollfds at guest address `fds`, one of
    /// them a guest pipe; the call runs again when one is ready.
    Poll {
        /// Guest address of the `struct pollfd` array.
        fds: u64,
        /// Its length.
        count: u64,
    },
    /// In `select`/`pselect6` of these fd sets, one of them a guest pipe;
    /// the call runs again when one is ready, and once more (finding its
    /// timeout passed) at its deadline.
    Select(FdSets),
    /// In `open`/`openat`/`creat` of a FIFO for writing that has no reader
    /// yet; the call runs again at its deadline (each millisecond of
    /// virtual time) until a reader has come.
    FifoReader,
    /// In `rt_sigsuspend`/`pause`, until a signal arrives.
    Signal,
    /// In `rt_sigtimedwait` for one of the signals of this set; the call
    /// runs again when a signal arrives.
    SignalIn(u64),
}

/// Whether a thread can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Running or ready to.
    Runnable,
    /// Waiting; `deadline` is the virtual monotonic time at which it gives up.
    Blocked {
        /// What it waits for.
        on: Wait,
        /// When it gives up, if ever.
        deadline: Option<u64>,
        /// What the call returns when the deadline passes.
        timeout_result: u64,
    },
    /// Gone (`exit`).
    Exited,
}

/// One guest thread, as the scheduler keeps it.
pub struct GuestThread {
    /// Its thread id (`gettid`).
    pub tid: u64,
    /// Can it run?
    pub state: RunState,
    /// Its registers while it is not running.
    pub context: Option<unicorn_engine::Context>,
    /// What its pending system call returns when it runs again (after a
    /// wait), written to `rax` then.
    pub resume_result: Option<u64>,
    /// Whether its pending system call runs again when it next runs (it
    /// was woken from a [`Wait::Child`] or [`Wait::Io`] that may now be
    /// satisfied).
    pub retry: bool,
    /// Whether it runs again because the deadline of its wait passed (a
    /// [`Wait::Select`], which must then clear the guest's fd sets).
    pub timed_out: bool,
    /// `set_tid_address`/`CLONE_CHILD_CLEARTID`: zeroed and woken at exit.
    pub clear_child_tid: u64,
    /// Its signal mask, pending signals and alternate stack while it is not
    /// running (the running thread's are in `Signals`).
    pub signals: ThreadSignals,
    /// Register state saved when one of its signal handlers started,
    /// innermost last, while it is not running.
    pub signal_contexts: Vec<unicorn_engine::Context>,
}

/// What the scheduler decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run this thread (it may be the one that was running).
    Run(usize),
    /// Nothing can run until the virtual clock reaches `at`: let the time
    /// pass, then run `thread` (its wait timed out).
    WakeAt {
        /// Thread index.
        thread: usize,
        /// Virtual monotonic time of its deadline.
        at: u64,
    },
    /// Every live thread waits and none will ever time out.
    Deadlock,
    /// No thread is left.
    AllExited,
}

/// Every guest thread by index (creation order; the main thread is 0).
pub struct Scheduler {
    /// The threads, by index.
    pub threads: Vec<GuestThread>,
    /// Index of the running thread.
    pub running: usize,
    /// Events a thread runs before it is preempted.
    pub quantum: u64,
}

impl Scheduler {
    /// A process with one running thread, `tid`.
    pub fn new(tid: u64, quantum: u64) -> Scheduler {
        Scheduler {
            threads: vec![GuestThread::new(tid, ThreadSignals::default())],
            running: 0,
            quantum: quantum.max(1),
        }
    }

    /// The running thread.
    pub fn current(&mut self) -> &mut GuestThread {
        &mut self.threads[self.running]
    }

    /// Adds a runnable thread with id `tid`; returns its index.
    pub fn add(&mut self, tid: u64, signals: ThreadSignals) -> usize {
        self.threads.push(GuestThread::new(tid, signals));
        self.threads.len() - 1
    }

    /// The index of the live thread with id `tid`.
    pub fn index_of(&self, tid: u64) -> Option<usize> {
        self.threads
            .iter()
            .position(|t| t.tid == tid && t.state != RunState::Exited)
    }

    /// Whether a thread other than the running one could run now.
    pub fn others_runnable(&self) -> bool {
        self.threads
            .iter()
            .enumerate()
            .any(|(i, t)| i != self.running && t.state == RunState::Runnable)
    }

    /// Threads that have not exited.
    pub fn live(&self) -> usize {
        self.threads
            .iter()
            .filter(|t| t.state != RunState::Exited)
            .count()
    }

    /// Makes a blocked thread runnable; its call runs again when it runs.
    pub fn wake_to_retry(&mut self, index: usize) {
        if let Some(t) = self.threads.get_mut(index) {
            if matches!(t.state, RunState::Blocked { .. }) {
                t.state = RunState::Runnable;
                t.retry = true;
                t.timed_out = false;
            }
        }
    }

    /// Whether any thread could run now.
    pub fn any_runnable(&self) -> bool {
        self.threads.iter().any(|t| t.state == RunState::Runnable)
    }

    /// The indexes of the threads blocked on something matching `on`.
    pub fn blocked_on(&self, on: impl Fn(&Wait) -> bool) -> Vec<usize> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t.state, RunState::Blocked { on: w, .. } if on(&w)))
            .map(|(i, _)| i)
            .collect()
    }

    /// Makes a blocked thread runnable; its call returns `result`.
    pub fn wake(&mut self, index: usize, result: u64) {
        if let Some(t) = self.threads.get_mut(index) {
            if matches!(t.state, RunState::Blocked { .. }) {
                t.state = RunState::Runnable;
                t.resume_result = Some(result);
            }
        }
    }

    /// Wakes every blocked thread whose deadline is at or before `now`
    /// (monotonic virtual time), in index order; returns them.
    pub fn expire(&mut self, now: u64) -> Vec<usize> {
        let due: Vec<(usize, u64, Wait)> = self
            .threads
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.state {
                RunState::Blocked {
                    deadline: Some(d),
                    timeout_result,
                    on,
                } if d <= now => Some((i, timeout_result, on)),
                _ => None,
            })
            .collect();
        for &(i, result, on) in &due {
            if let Wait::Select(_) = on {
                // Its call runs again and answers the timeout itself.
                self.wake_to_retry(i);
                self.threads[i].timed_out = true;
            } else if on == Wait::FifoReader {
                self.wake_to_retry(i);
            } else {
                self.wake(i, result);
            }
        }
        due.into_iter().map(|(i, _, _)| i).collect()
    }

    /// The earliest deadline of a blocked thread, if any.
    pub fn earliest_deadline(&self) -> Option<u64> {
        self.threads
            .iter()
            .filter_map(|t| match t.state {
                RunState::Blocked {
                    deadline: Some(d), ..
                } => Some(d),
                _ => None,
            })
            .min()
    }

    /// The next thread to run: the first runnable one after the running
    /// one, round robin; see the module doc for the rest.
    pub fn pick_next(&self) -> Next {
        let n = self.threads.len();
        let after = (1..=n).map(|k| (self.running + k) % n);
        if let Some(i) = after
            .clone()
            .find(|&i| self.threads[i].state == RunState::Runnable)
        {
            return Next::Run(i);
        }
        let earliest = self
            .threads
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.state {
                RunState::Blocked {
                    deadline: Some(d), ..
                } => Some((d, i)),
                _ => None,
            })
            .min();
        match earliest {
            Some((at, thread)) => Next::WakeAt { thread, at },
            None if self.live() == 0 => Next::AllExited,
            None => Next::Deadlock,
        }
    }
}

impl GuestThread {
    fn new(tid: u64, signals: ThreadSignals) -> GuestThread {
        GuestThread {
            tid,
            state: RunState::Runnable,
            context: None,
            resume_result: None,
            retry: false,
            timed_out: false,
            clear_child_tid: 0,
            signals,
            signal_contexts: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(deadline: Option<u64>) -> RunState {
        RunState::Blocked {
            on: Wait::Futex(0x1000),
            deadline,
            timeout_result: 110,
        }
    }

    fn three() -> Scheduler {
        let mut s = Scheduler::new(100, 10);
        s.add(101, ThreadSignals::default());
        s.add(102, ThreadSignals::default());
        s
    }

    #[test]
    fn round_robin_after_the_running_thread() {
        let mut s = three();
        assert_eq!(s.threads[2].tid, 102);
        assert_eq!(s.pick_next(), Next::Run(1));
        s.running = 1;
        assert_eq!(s.pick_next(), Next::Run(2));
        s.running = 2;
        s.threads[0].state = RunState::Exited;
        assert_eq!(s.pick_next(), Next::Run(1));
        s.threads[1].state = blocked(None);
        assert_eq!(s.pick_next(), Next::Run(2), "the running thread itself");
    }

    #[test]
    fn the_earliest_deadline_wakes_when_nothing_can_run() {
        let mut s = three();
        s.threads[0].state = blocked(Some(50));
        s.threads[1].state = blocked(None);
        s.threads[2].state = blocked(Some(40));
        assert_eq!(s.pick_next(), Next::WakeAt { thread: 2, at: 40 });
        assert_eq!(s.expire(45), vec![2]);
        assert_eq!(s.threads[2].resume_result, Some(110));
        assert_eq!(s.pick_next(), Next::Run(2));
    }

    #[test]
    fn everyone_waiting_without_a_deadline_is_a_deadlock() {
        let mut s = three();
        for t in &mut s.threads {
            t.state = blocked(None);
        }
        assert_eq!(s.pick_next(), Next::Deadlock);
        for t in &mut s.threads {
            t.state = RunState::Exited;
        }
        assert_eq!(s.pick_next(), Next::AllExited);
    }
}
