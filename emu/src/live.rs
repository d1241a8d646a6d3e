//! Snapshots of the call tree while it is being built, for live views.
//!
//! A viewer holds a [`SnapshotSlot`] (passed in [`crate::RunHandles::snapshots`])
//! and calls [`SnapshotSlot::request`]; the call-tree thread answers between
//! two batches of events (or, while it waits for events because its process
//! waits or another process runs, within 100 ms) with a plain-data
//! [`TreeSnapshot`], which the viewer collects with [`SnapshotSlot::take`].
//! Without a slot the builder does nothing extra, and with one it only checks
//! a flag once per batch: the profile is the same bytes either way.
//!
//! The call tree knows guest threads by index only, and nothing of shared
//! objects or other processes; the emulation thread tells the slot what it
//! knows (thread ids and which threads have exited, each library it maps, the
//! processes), rarely — at a thread's start or exit, a library's mapping, a
//! switch of process — and the slot adds it to each snapshot. The emulation
//! thread runs ahead of the call tree, so every thread and every library a
//! snapshot's tree has reached is known by then.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use emuprof_model::{NodeId, RawNode};

use crate::machine::LoadedLibrary;

/// The call tree of one guest process image at one moment of the run.
#[derive(Debug, Clone)]
pub struct TreeSnapshot {
    /// Calling contexts so far, parents before children. Self instructions
    /// are up to date; inclusive and min/max cover only calls that returned.
    pub nodes: Vec<RawNode>,
    /// Every guest thread of the process that has not exited, in the order
    /// they were started (the main thread first), each with its active calls.
    pub threads: Vec<ThreadStack>,
    /// Instructions executed so far.
    pub instructions: u64,
    /// The shared objects mapped so far (the program and its dynamic linker
    /// are not among them), to name functions as the final profile does.
    pub libraries: Vec<LoadedLibrary>,
    /// Which process the tree is of, and which one runs now.
    pub processes: Processes,
}

impl TreeSnapshot {
    /// The thread that ran last, if it is among [`TreeSnapshot::threads`].
    pub fn running_thread(&self) -> Option<&ThreadStack> {
        self.threads.iter().find(|t| t.running)
    }
}

/// One guest thread's shadow call stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStack {
    /// Thread id as the guest sees it (`gettid`).
    pub tid: u64,
    /// Whether it is the thread that ran last (the one the process's CPU
    /// time goes to).
    pub running: bool,
    /// Node ids of its active calls, outermost first.
    pub stack: Vec<NodeId>,
}

/// A guest process, as a live view names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessName {
    /// Its process id.
    pub pid: u64,
    /// The program its image runs, as the guest named it.
    pub program: String,
}

/// The guest processes at one moment: the snapshot's tree is that of the
/// first program's image; fork children and programs started with `execve`
/// have trees of their own, seen in the final profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Processes {
    /// The process whose tree the snapshot holds.
    pub shown: ProcessName,
    /// The process running now (or last), `shown` when it is the same image.
    pub running: ProcessName,
    /// When `running` is a fork child of the shown program's image (same
    /// code, so the same names): the entry addresses of its running
    /// thread's active calls, innermost first. Empty otherwise.
    pub running_calls: Vec<u64>,
    /// Process images running now (1 while the guest has not forked).
    pub live: usize,
}

/// What the call-tree thread copies for a snapshot; the slot adds what the
/// emulation thread knows.
pub(crate) struct BuilderSnapshot {
    pub(crate) nodes: Vec<RawNode>,
    /// Each thread's active calls, by thread index.
    pub(crate) stacks: Vec<Vec<NodeId>>,
    /// Index of the running thread.
    pub(crate) running: usize,
    pub(crate) instructions: u64,
}

/// What the emulation thread has told the slot.
#[derive(Debug, Default)]
struct GuestNow {
    /// By thread index: its id and whether it has exited.
    threads: Vec<(u64, bool)>,
    libraries: Vec<LoadedLibrary>,
    processes: Processes,
}

/// Where a viewer asks for snapshots and the call-tree thread leaves them.
#[derive(Debug, Default)]
pub struct SnapshotSlot {
    requested: AtomicBool,
    latest: Mutex<Option<TreeSnapshot>>,
    guest: Mutex<GuestNow>,
}

impl SnapshotSlot {
    /// Asks for a snapshot after the next batch of events.
    pub fn request(&self) {
        self.requested.store(true, Ordering::Release);
    }

    /// The latest snapshot not yet taken, if one arrived.
    pub fn take(&self) -> Option<TreeSnapshot> {
        self.latest.lock().ok()?.take()
    }

    /// Whether a snapshot was asked for (and not yet answered).
    pub(crate) fn wanted(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// Leaves the snapshot made of `built` for the viewer.
    pub(crate) fn answer(&self, built: BuilderSnapshot) {
        self.requested.store(false, Ordering::Release);
        let snapshot = self.with_guest(|guest| TreeSnapshot {
            threads: built
                .stacks
                .into_iter()
                .enumerate()
                .filter_map(|(index, stack)| {
                    let &(tid, exited) = guest.threads.get(index)?;
                    (!exited).then_some(ThreadStack {
                        tid,
                        running: index == built.running,
                        stack,
                    })
                })
                .collect(),
            nodes: built.nodes,
            instructions: built.instructions,
            libraries: guest.libraries.clone(),
            processes: guest.processes.clone(),
        });
        if let Ok(mut latest) = self.latest.lock() {
            *latest = snapshot;
        }
    }

    /// Guest thread `index` (in start order) has id `tid`.
    pub(crate) fn thread_started(&self, index: usize, tid: u64) {
        self.with_guest(|guest| {
            if guest.threads.len() <= index {
                guest.threads.resize(index + 1, (0, true));
            }
            guest.threads[index] = (tid, false);
        });
    }

    /// Guest thread `index` has exited.
    pub(crate) fn thread_exited(&self, index: usize) {
        self.with_guest(|guest| {
            if let Some(thread) = guest.threads.get_mut(index) {
                thread.1 = true;
            }
        });
    }

    /// The guest mapped a shared object.
    pub(crate) fn library_mapped(&self, library: LoadedLibrary) {
        self.with_guest(|guest| guest.libraries.push(library));
    }

    /// The snapshots are of process `shown`'s image.
    pub(crate) fn process_shown(&self, shown: ProcessName) {
        self.with_guest(|guest| {
            guest.processes = Processes {
                running: shown.clone(),
                shown,
                running_calls: Vec::new(),
                live: 1,
            }
        });
    }

    /// Process `pid`, running `program`, runs now: one of `live` process
    /// images.
    pub(crate) fn process_running(&self, pid: u64, program: &str, live: usize) {
        self.with_guest(|guest| {
            let running = &mut guest.processes.running;
            if running.pid != pid || running.program != program {
                *running = ProcessName {
                    pid,
                    program: program.to_string(),
                };
                guest.processes.running_calls.clear();
            }
            guest.processes.live = live;
        });
    }

    /// Whether the snapshots are of process `pid`'s tree.
    pub(crate) fn shows(&self, pid: u64) -> bool {
        self.with_guest(|guest| guest.processes.shown.pid == pid) == Some(true)
    }

    /// Process `pid`'s running thread is in the calls `entries` (innermost
    /// first); kept while it is the running process.
    pub(crate) fn running_calls(&self, pid: u64, entries: Vec<u64>) {
        self.with_guest(|guest| {
            let processes = &mut guest.processes;
            if processes.running.pid == pid && processes.shown.pid != pid {
                processes.running_calls = entries;
            }
        });
    }

    /// By thread index: each thread's id and whether it has exited.
    pub(crate) fn thread_ids(&self) -> Vec<(u64, bool)> {
        self.with_guest(|guest| guest.threads.clone())
            .unwrap_or_default()
    }

    /// The shared objects mapped so far.
    pub(crate) fn libraries(&self) -> Vec<LoadedLibrary> {
        self.with_guest(|guest| guest.libraries.clone())
            .unwrap_or_default()
    }

    /// Runs `f` on what the emulation thread has said (`None` if a thread
    /// panicked holding it: live views then go without).
    fn with_guest<T>(&self, f: impl FnOnce(&mut GuestNow) -> T) -> Option<T> {
        self.guest.lock().ok().map(|mut g| f(&mut g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(pid: u64, program: &str) -> ProcessName {
        ProcessName {
            pid,
            program: program.into(),
        }
    }

    /// The call tree's threads by index get the ids the emulation thread
    /// gave; exited ones are left out, as is one the emulation thread has
    /// not reported (it never lags, but a snapshot must not invent an id).
    #[test]
    fn a_snapshot_has_the_live_threads_by_id_and_the_processes() {
        let slot = SnapshotSlot::default();
        slot.process_shown(name(7, "./prog"));
        for (index, tid) in [(0, 7), (1, 8), (2, 9)] {
            slot.thread_started(index, tid);
        }
        slot.thread_exited(1);
        slot.process_running(10, "./prog", 2);
        assert!(slot.shows(7) && !slot.shows(10));
        // The fork child's builder says where it is; the shown one's
        // builder answers with the tree instead.
        slot.running_calls(10, vec![0x30, 0x20]);
        slot.running_calls(7, vec![0x99]);
        slot.request();
        assert!(slot.wanted());
        slot.answer(BuilderSnapshot {
            nodes: vec![RawNode::default(); 4],
            stacks: vec![vec![0], vec![0, 1], vec![0, 2], vec![0, 3]],
            running: 2,
            instructions: 5,
        });
        assert!(!slot.wanted());
        let snapshot = slot.take().expect("a snapshot");
        assert_eq!(
            snapshot.threads,
            [
                ThreadStack {
                    tid: 7,
                    running: false,
                    stack: vec![0]
                },
                ThreadStack {
                    tid: 9,
                    running: true,
                    stack: vec![0, 2]
                }
            ]
        );
        assert_eq!(snapshot.running_thread().map(|t| t.tid), Some(9));
        assert_eq!(
            snapshot.processes,
            Processes {
                shown: name(7, "./prog"),
                running: name(10, "./prog"),
                running_calls: vec![0x30, 0x20],
                live: 2
            }
        );
        assert!(slot.take().is_none(), "taken once");
        slot.process_running(7, "./prog", 1);
        slot.request();
        slot.answer(BuilderSnapshot {
            nodes: vec![RawNode::default()],
            stacks: vec![vec![0]],
            running: 0,
            instructions: 6,
        });
        let back = slot.take().expect("a snapshot").processes;
        assert!(back.running_calls.is_empty(), "{back:?}");
    }
}
