//! The run loop: which guest process runs, and what happens between two
//! `emu_start`s (forks, execs, endings, signals between processes).
//!
//! One process runs at a time. It keeps the CPU until none of its threads
//! can run, it ends, or it has used its quantum (the same quantum as
//! threads, in call-tree events) while another process could run or
//! another's timeout has passed (see [`shared_time`]); then the next
//! process in creation order that can run gets it (round robin). Waits
//! that another process ends — a `wait4` for a child, a read of a pipe
//! another process writes, a `vfork` — are looked at every time the loop
//! chooses. When no process can run, the one whose timeout or timer comes
//! first has its virtual clock moved on; when none has one, the run is
//! deadlocked.
//! Every decision depends on guest work only, never on host timing.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use emuprof_model::{ProcessOrigin, RawProcess};

use unicorn_engine::RegisterX86;

use super::super::guest_process::{FinishedImage, GuestProcess, ImageStart};
use super::super::host_limits;
use super::super::stop::StopReason;
use super::super::threads::{self, RunState, Wait};
use super::super::{ProcessImage, RunOutcome};
use super::table::{Ending, Life, ProcessTable};
use super::ProcessRequest;
use crate::live::SnapshotSlot;
use crate::syscalls::Errno;
use crate::EmuError;

mod outside_peers;
mod shared_time;

/// `SIGCHLD`.
const SIGCHLD: u64 = 17;

/// A process image that has not ended, with its index among all images.
struct Running {
    image: usize,
    process: GuestProcess,
}

/// Every process of the run.
struct World {
    running: Vec<Running>,
    finished: Vec<Option<FinishedImage>>,
    table: Rc<RefCell<ProcessTable>>,
    /// Index into `running` of the process that ran last.
    current: usize,
    /// Why the whole run stopped early, if it did.
    run_stop: Option<StopReason>,
    /// The first error that left an image without a profile (a builder
    /// that failed): what the run reports when that image is the first.
    failure: Option<EmuError>,
    /// The live view's slot (of the first image), told which process runs.
    snapshots: Option<Arc<SnapshotSlot>>,
}

/// Runs the first program and every process it starts until all have
/// ended (or the run must stop), and collects one profile per image.
pub fn run_all(
    first: GuestProcess,
    table: Rc<RefCell<ProcessTable>>,
) -> Result<RunOutcome, EmuError> {
    let first_pid = first.identity.pid;
    let snapshots = first.state.borrow().handles.snapshots.clone();
    let mut world = World {
        running: vec![Running {
            image: 0,
            process: first,
        }],
        finished: vec![None],
        table,
        current: 0,
        run_stop: None,
        failure: None,
        snapshots,
    };
    world.run()?;
    world.outcome(first_pid)
}

impl World {
    fn run(&mut self) -> Result<(), EmuError> {
        while !self.running.is_empty() {
            if self.run_stop.is_some() {
                return self.stop_everything();
            }
            self.deliver_signals();
            self.wake_waiters();
            let Some(next) = self.choose() else {
                if self.wait_for_outside_peers() {
                    continue;
                }
                // Nothing can run and nothing will time out: let the current
                // process's scheduler describe the deadlock.
                let index = self.current.min(self.running.len() - 1);
                let p = &mut self.running[index].process;
                let mut st = p.state.borrow_mut();
                let stop = threads::switch(&mut p.uc, &mut st)
                    .err()
                    .unwrap_or_else(|| StopReason::Internal("no process can run".into()));
                st.stop = Some(stop);
                drop(st);
                self.end_slice(index, Ok(()));
                continue;
            };
            self.current = next;
            let start = self.start_shared_time(next);
            let processes = self.running.len();
            if !self.prepare(next) {
                // (Unless it ended there, its clock may have jumped.)
                if let (Some(start), true) = (start, self.running.len() == processes) {
                    self.pass_time(next, start);
                }
                continue;
            }
            let others = self.others_runnable(next);
            self.tell_live_view(next);
            let p = &mut self.running[next].process;
            p.state.borrow_mut().others_runnable = others;
            let result = p.run_slice();
            if let Some(start) = start {
                self.pass_time(next, start);
            }
            self.after_slice(next, result)?;
        }
        Ok(())
    }

    /// Tells a live view that process `index` runs now.
    fn tell_live_view(&self, index: usize) {
        if let Some(slot) = &self.snapshots {
            let identity = &self.running[index].process.identity;
            slot.process_running(identity.pid, &identity.program, self.running.len());
        }
    }

    /// Gets process `index`'s next thread onto the CPU (after a switch was
    /// asked for, or when its running thread waits). False when nothing of
    /// it can run now (or it ended): the loop chooses again.
    fn prepare(&mut self, index: usize) -> bool {
        let p = &mut self.running[index].process;
        let mut st = p.state.borrow_mut();
        let running_can_run = st.threads.current().state == RunState::Runnable;
        if st.reschedule || !running_can_run || st.threads.current().retry {
            if let Err(stop) = threads::switch(&mut p.uc, &mut st) {
                st.stop = Some(stop);
            }
        }
        let blocked_again = threads::running_blocked(&mut st) || st.reschedule;
        let ended = st.stop.is_some();
        p.pc = p.uc.pc_read().unwrap_or(0);
        drop(st);
        if ended {
            self.end_slice(index, Ok(()));
            return false;
        }
        !blocked_again
    }

    /// What the process that just ran left to do.
    fn after_slice(
        &mut self,
        index: usize,
        result: Result<(), unicorn_engine::uc_error>,
    ) -> Result<(), EmuError> {
        let p = &mut self.running[index].process;
        let mut st = p.state.borrow_mut();
        let failed = result.is_err() || st.stop.is_some();
        let request = st.request.take();
        if !failed && request.is_none() && !st.reschedule {
            // The emulator returned without a reason: the hooks' failure, or
            // emuprof's.
            drop(st);
            self.end_slice(index, result);
            return Ok(());
        }
        p.pc = p.uc.pc_read().unwrap_or(0);
        drop(st);
        if failed {
            self.end_slice(index, result);
            return Ok(());
        }
        match request {
            Some(ProcessRequest::Fork(fork)) => {
                let vfork = {
                    let p = &self.running[index].process;
                    let mut st = p.state.borrow_mut();
                    let blocked = threads::running_blocked(&mut st);
                    if !blocked {
                        // The parent carries on (as Linux runs it first).
                        st.reschedule = false;
                    }
                    blocked
                };
                let image = self.finished.len();
                let pid = fork.pid;
                let made = host_limits::room_for_an_engine().and_then(|()| {
                    self.running[index]
                        .process
                        .fork_child(fork, self.running[index].image)
                });
                let child = match made {
                    Ok(child) => child,
                    Err(EmuError::HostDescriptors) => {
                        self.table.borrow_mut().forget(pid);
                        let p = &self.running[index].process;
                        p.state.borrow_mut().stop = Some(StopReason::HostDescriptors);
                        self.end_slice(index, Ok(()));
                        return Ok(());
                    }
                    Err(_) => {
                        self.fork_failed(index, pid, vfork);
                        return Ok(());
                    }
                };
                self.finished.push(None);
                self.running.push(Running {
                    image,
                    process: child,
                });
                if vfork {
                    // The child runs while its parent waits.
                    self.current = self.running.len() - 1;
                }
            }
            Some(ProcessRequest::Exec(exec)) => self.exec(index, exec)?,
            Some(ProcessRequest::ExecNative(exec)) => {
                let p = &self.running[index].process;
                let mut st = p.state.borrow_mut();
                let ending = super::native::run(&mut st, exec);
                st.stop = Some(ending);
                drop(st);
                self.end_slice(index, Ok(()));
            }
            None => {}
        }
        Ok(())
    }

    /// emuprof could not make the child `pid` that process `index` forked
    /// (no host memory for another engine, or no room in the run's budget
    /// of host descriptors for the child's fd table): the parent's
    /// `fork` fails with `ENOMEM`, as Linux's does when memory is tight,
    /// and the run goes on.
    fn fork_failed(&mut self, index: usize, pid: u64, vfork: bool) {
        self.table.borrow_mut().forget(pid);
        let failed = Errno::ENOMEM.to_rax();
        let p = &mut self.running[index].process;
        let mut st = p.state.borrow_mut();
        if vfork {
            for thread in st.threads.blocked_on(|w| *w == Wait::Vfork(pid)) {
                st.threads.wake(thread, failed);
            }
        } else if p.uc.reg_write(RegisterX86::RAX, failed).is_err() {
            st.stop = Some(StopReason::Internal(
                "cannot make a forked process fail".into(),
            ));
        }
    }

    /// Replaces process `index`'s image with the program `exec` loaded.
    fn exec(&mut self, index: usize, exec: super::exec::ExecRequest) -> Result<(), EmuError> {
        let Running { image, process } = self.running.remove(index);
        let identity = process.identity.clone();
        // Linux ends every other thread of the process at a successful execve.
        self.table.borrow_mut().one_thread(identity.pid);
        let mut options = process.state.borrow().options.clone();
        let handles = process.state.borrow().handles.for_another_image();
        let table = Rc::clone(&process.state.borrow().table);
        process.state.borrow_mut().stop = Some(StopReason::Replaced {
            program: exec.program.clone(),
        });
        let mut finished = process.finish(Ok(()))?;
        let mut sys = finished
            .sys
            .take()
            .ok_or_else(|| EmuError::Layout("an image's syscall state was taken twice".into()))?;
        // The clock goes on from where the old image left it.
        sys.time.clock.sleep(finished.instructions_run);
        self.finished[image] = Some(finished);
        options.args = exec.args;
        options.env = exec.env;
        let new_image = self.finished.len();
        self.finished.push(None);
        let started = GuestProcess::start(ImageStart {
            binary: exec.binary,
            identity: RawProcess {
                pid: identity.pid,
                parent: identity.parent,
                origin: ProcessOrigin::Execed { image },
                program: exec.program,
            },
            options,
            handles,
            table,
            inherited: Some(sys),
        })?;
        self.running.insert(
            index,
            Running {
                image: new_image,
                process: started,
            },
        );
        self.wake_vfork_parent(identity.pid);
        Ok(())
    }

    /// Ends process `index` after its slice ended with a stop (or an error):
    /// a process that exited or was killed becomes a zombie for its parent;
    /// any other stop ends the whole run.
    fn end_slice(&mut self, index: usize, result: Result<(), unicorn_engine::uc_error>) {
        let Running { image, process } = self.running.remove(index);
        let finished = match process.finish(result) {
            Ok(finished) => finished,
            Err(e) => {
                self.run_stop = Some(StopReason::Internal(e.to_string()));
                self.failure.get_or_insert(e);
                return;
            }
        };
        let ending = match &finished.stop {
            StopReason::Exited(code) => Ending::Exited(*code),
            StopReason::Signaled { signal, .. } => Ending::Killed(*signal),
            other => {
                self.run_stop = Some(other.clone());
                self.finished[image] = Some(finished);
                return;
            }
        };
        let pid = finished.profile.process.pid;
        // Its fds close now (a pipe's reader sees the end of the data).
        let mut finished = finished;
        finished.sys = None;
        self.finished[image] = Some(finished);
        let parent = {
            let mut table = self.table.borrow_mut();
            table.ended(pid, ending);
            table.get(pid).and_then(|p| p.parent)
        };
        self.wake_vfork_parent(pid);
        if let Some(parent) = parent {
            self.post_if_handled(parent, SIGCHLD);
        }
    }

    /// A run-ending stop: every process still running ends with it.
    fn stop_everything(&mut self) -> Result<(), EmuError> {
        let reason = self.run_stop.clone().unwrap_or(StopReason::Interrupted);
        while let Some(Running { image, process }) = self.running.pop() {
            process
                .state
                .borrow_mut()
                .stop
                .get_or_insert_with(|| reason.clone());
            let mut finished = process.finish(Ok(()))?;
            finished.sys = None;
            self.finished[image] = Some(finished);
        }
        Ok(())
    }

    /// Whether a process other than `index` has a thread that can run.
    fn others_runnable(&self, index: usize) -> bool {
        self.running
            .iter()
            .enumerate()
            .any(|(i, r)| i != index && r.process.state.borrow().threads.any_runnable())
    }

    /// The process to run next; see the module doc.
    fn choose(&self) -> Option<usize> {
        let n = self.running.len();
        let current = self.current.min(n - 1);
        let can_run = |i: usize| {
            self.running[i]
                .process
                .state
                .borrow()
                .threads
                .any_runnable()
        };
        let after = (1..=n).map(|k| (current + k) % n);
        if can_run(current) {
            let st = self.running[current].process.state.borrow();
            let preempted =
                st.reschedule && st.threads.threads[st.threads.running].state == RunState::Runnable;
            drop(st);
            if !preempted {
                return Some(current);
            }
            return after.clone().find(|&i| can_run(i));
        }
        if let Some(i) = after.clone().find(|&i| can_run(i)) {
            return Some(i);
        }
        // The one whose timeout or timer comes first (on its own clock),
        // the first after the current one on a tie.
        after
            .enumerate()
            .filter_map(|(order, i)| {
                let st = self.running[i].process.state.borrow();
                threads::next_deadline(&st).map(|at| (at, order, i))
            })
            .min()
            .map(|(_, _, i)| i)
    }

    /// Wakes the threads whose wait another process may have ended: a
    /// `wait4` with an ended child to collect, an fd that became ready, a
    /// futex word in shared memory that was woken.
    fn wake_waiters(&mut self) {
        let shared_words = std::mem::take(&mut self.table.borrow_mut().shared_futex_wakes);
        let table = self.table.borrow();
        for r in &self.running {
            let mut st = r.process.state.borrow_mut();
            let words: Vec<u64> = shared_words
                .iter()
                .filter(|&&(waker, _)| waker != st.pid)
                .map(|&(_, word)| word)
                .collect();
            if !words.is_empty() {
                threads::wake_shared_futex_waiters(&mut st, &words);
            }
            let pid = st.pid;
            let child_waits = st.threads.blocked_on(|w| matches!(w, Wait::Child(_)));
            for thread in child_waits {
                let RunState::Blocked {
                    on: Wait::Child(selector),
                    ..
                } = st.threads.threads[thread].state
                else {
                    continue;
                };
                let ready = table
                    .children_among(pid, &table.select(pid, selector))
                    .into_iter()
                    .any(|c| matches!(table.get(c).map(|e| e.life), Some(Life::Zombie { .. })));
                if ready {
                    st.threads.wake_to_retry(thread);
                }
            }
            threads::fd_waits::wake_ready(&r.process.uc, &mut st);
        }
    }

    /// The parent of a `vfork` child that has exec'd or ended goes on.
    fn wake_vfork_parent(&mut self, child: u64) {
        for r in &self.running {
            let mut st = r.process.state.borrow_mut();
            for thread in st.threads.blocked_on(|w| *w == Wait::Vfork(child)) {
                st.threads.wake(thread, child);
            }
        }
    }

    /// Delivers the signals processes sent to other processes.
    fn deliver_signals(&mut self) {
        let outbox = std::mem::take(&mut self.table.borrow_mut().outbox);
        for (pid, sig) in outbox {
            self.post(pid, sig);
        }
    }

    /// Sends `sig` to process `pid` when it has a handler for it, blocks
    /// it (it stays pending: a signalfd or `sigwaitinfo` takes it) or
    /// waits for it in `rt_sigtimedwait` (what `SIGCHLD` needs: ignored by
    /// default).
    fn post_if_handled(&mut self, pid: u64, sig: u64) {
        let handled = self.running.iter().any(|r| {
            let st = r.process.state.borrow();
            st.pid == pid
                && (st.sys.signals.action(sig).is_some_and(|a| a.handler > 1)
                    || st.sys.signals.running_thread().blocks(sig)
                    || (0..st.threads.threads.len()).any(|t| threads::waits_for(&st, t, sig)))
        });
        if handled {
            self.post(pid, sig);
        }
    }

    /// Makes `sig` pending for process `pid`'s main thread; a wait it is
    /// blocked in ends with `EINTR`, and the signal takes effect (its
    /// handler or its default action) as soon as the process runs.
    fn post(&mut self, pid: u64, sig: u64) {
        for r in &self.running {
            let mut st = r.process.state.borrow_mut();
            if st.pid != pid {
                continue;
            }
            let running = st.threads.running;
            if st.threads.threads[running].state == RunState::Exited {
                continue;
            }
            // The running thread's signals live in `Signals`; the others'
            // in their thread records.
            st.sys.signals.post(sig);
            threads::wake_for_signal(&mut st, running);
            // Switching in delivers pending signals.
            st.reschedule = true;
        }
    }

    /// The run's outcome: image 0's profile, every other image in order.
    fn outcome(self, first_pid: u64) -> Result<RunOutcome, EmuError> {
        let mut images = self.finished.into_iter();
        let failure = self.failure;
        let first = images.next().flatten().ok_or_else(|| {
            failure.unwrap_or_else(|| EmuError::Layout("the first program left no profile".into()))
        })?;
        let more: Vec<FinishedImage> = images.flatten().collect();
        let mut notes = Vec::new();
        for note in std::iter::once(&first.notes)
            .chain(more.iter().map(|m| &m.notes))
            .flatten()
        {
            if !notes.contains(note) {
                notes.push(note.clone());
            }
        }
        // The run's end is the first process's: its last image's stop.
        let last_of_first = more
            .iter()
            .rev()
            .find(|m| m.profile.process.pid == first_pid)
            .map_or(&first.stop, |m| &m.stop);
        let stop = self.run_stop.unwrap_or_else(|| last_of_first.clone());
        let (mut profile, mut part) = (first.profile, first.part);
        let forked_from_first = more.iter().any(|m| {
            matches!(
                m.profile.process.origin,
                ProcessOrigin::Forked { image: 0, .. }
            )
        });
        if let (Some(part), false) = (part.as_mut(), forked_from_first) {
            // The last part, like every other, leaves out what did not run
            // in it (unless a fork child's origin points into the tree).
            crate::tree::recorded::prune_unrun(&mut profile, part);
        }
        Ok(RunOutcome {
            part,
            started_at: first.started_at,
            profile,
            stop,
            notes,
            libraries: first.libraries,
            more_processes: more
                .into_iter()
                .map(|m| ProcessImage {
                    profile: m.profile,
                    binary: m.binary,
                    libraries: m.libraries,
                })
                .collect(),
        })
    }
}
