//! Every guest process of a run: parent, process group, session, and
//! whether it still runs. All processes share one table (and one id
//! counter with their threads, as Linux shares pids and tids).

use std::collections::BTreeMap;

use crate::syscalls::Errno;

/// Most guest processes alive at once in a run (`RLIMIT_NPROC` as the
/// guest sees it): each is an engine (with its 1 GiB translation buffer)
/// and a call-tree thread of emuprof's, so a fork bomb gets `EAGAIN`
/// instead of exhausting the host.
pub const MAX_PROCESSES: usize = 64;

/// Most guest threads alive at once in a run, every process's main thread
/// included: `clone` of a thread or a process past it fails with `EAGAIN`.
/// Each thread is a shadow stack in the call-tree builder and a slot the
/// scheduler and futex wakeups look through, so a thread bomb stays small
/// and fast instead of growing until guest memory runs out.
pub const MAX_THREADS: usize = 1024;

/// How a process ended, as `wait4` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ending {
    /// `exit`/`exit_group` with this status (low 8 bits kept).
    Exited(i32),
    /// Killed by this signal.
    Killed(i32),
}

impl Ending {
    /// The `wstatus` word `wait4` stores.
    pub fn wait_status(self) -> u32 {
        match self {
            Ending::Exited(code) => ((code as u32) & 0xff) << 8,
            Ending::Killed(sig) => (sig as u32) & 0x7f,
        }
    }
}

/// Where a process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    /// It runs (or waits).
    Running,
    /// It ended; its parent has not waited for it yet. `order` numbers the
    /// endings, so a wait for any child reaps the one that ended first.
    Zombie {
        /// How it ended.
        ending: Ending,
        /// Position among the endings of the run.
        order: u64,
    },
    /// Waited for: gone.
    Reaped,
}

/// One guest process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessEntry {
    /// Its parent; `None` for the first process (whose parent is outside
    /// the run).
    pub parent: Option<u64>,
    /// Process group id.
    pub pgid: u64,
    /// Session id.
    pub sid: u64,
    /// Whether it runs.
    pub life: Life,
    /// `prctl(PR_SET_PDEATHSIG)`: the signal it gets when its parent ends
    /// (0: none). Not inherited by a fork child, kept across `execve`.
    pub death_signal: u64,
    /// Its live threads besides the main one (counted for [`MAX_THREADS`]).
    pub extra_threads: usize,
}

/// Every guest process, by pid.
#[derive(Debug)]
pub struct ProcessTable {
    next_id: u64,
    endings: u64,
    processes: BTreeMap<u64, ProcessEntry>,
    /// Signals sent to other processes, `(pid, signal)`, delivered by the
    /// run loop when the sender's hook has returned.
    pub outbox: Vec<(u64, u64)>,
    /// Futex words in memory shared between processes that a process
    /// woke, `(its pid, guest-physical address)`: the run loop wakes the
    /// other processes' threads waiting on them.
    pub shared_futex_wakes: Vec<(u64, u64)>,
}

impl ProcessTable {
    /// A table holding the first process, `pid`, which leads its own
    /// process group and session.
    pub fn new(pid: u64) -> ProcessTable {
        let mut processes = BTreeMap::new();
        processes.insert(
            pid,
            ProcessEntry {
                parent: None,
                pgid: pid,
                sid: pid,
                life: Life::Running,
                death_signal: 0,
                extra_threads: 0,
            },
        );
        ProcessTable {
            next_id: pid + 1,
            endings: 0,
            processes,
            outbox: Vec::new(),
            shared_futex_wakes: Vec::new(),
        }
    }

    /// A fresh id for a new thread or process: ids count up from the
    /// first process's, in creation order.
    pub fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Adds `pid`, a child of `parent`, in its parent's group and session.
    pub fn add_child(&mut self, pid: u64, parent: u64) {
        let (pgid, sid) = self
            .processes
            .get(&parent)
            .map_or((parent, parent), |p| (p.pgid, p.sid));
        self.processes.insert(
            pid,
            ProcessEntry {
                parent: Some(parent),
                pgid,
                sid,
                life: Life::Running,
                death_signal: 0,
                extra_threads: 0,
            },
        );
    }

    /// `Ok` when one more process (`process`) or thread fits under
    /// [`MAX_PROCESSES`] and [`MAX_THREADS`], else `EAGAIN`, as Linux
    /// answers at `RLIMIT_NPROC`.
    pub fn room_for(&self, process: bool) -> Result<(), Errno> {
        let alive = self.processes.values().filter(|p| p.life == Life::Running);
        let (processes, threads) = alive.fold((0, 0), |(n, t), p| (n + 1, t + 1 + p.extra_threads));
        if threads >= MAX_THREADS || (process && processes >= MAX_PROCESSES) {
            return Err(Errno::EAGAIN);
        }
        Ok(())
    }

    /// Process `pid` started a thread (`delta` 1) or one of its threads
    /// ended (`delta` -1).
    pub fn count_thread(&mut self, pid: u64, delta: isize) {
        if let Some(p) = self.processes.get_mut(&pid) {
            p.extra_threads = p.extra_threads.saturating_add_signed(delta);
        }
    }

    /// Process `pid` is down to one thread (`execve`).
    pub fn one_thread(&mut self, pid: u64) {
        if let Some(p) = self.processes.get_mut(&pid) {
            p.extra_threads = 0;
        }
    }

    /// Removes `pid`, a child that could not be made after all (its
    /// parent's `fork` fails instead).
    pub fn forget(&mut self, pid: u64) {
        self.processes.remove(&pid);
    }

    /// The process `pid`, if it ever existed.
    pub fn get(&self, pid: u64) -> Option<&ProcessEntry> {
        self.processes.get(&pid)
    }

    /// Mutable access to process `pid`.
    pub fn get_mut(&mut self, pid: u64) -> Option<&mut ProcessEntry> {
        self.processes.get_mut(&pid)
    }

    /// Records that `pid` ended; it stays a zombie until waited for. Its
    /// running children that asked for a parent-death signal get it
    /// (through [`ProcessTable::outbox`]).
    pub fn ended(&mut self, pid: u64, ending: Ending) {
        self.endings += 1;
        let order = self.endings;
        if let Some(p) = self.processes.get_mut(&pid) {
            p.life = Life::Zombie { ending, order };
        }
        let orphans = self.processes.iter().filter(|(_, p)| {
            p.parent == Some(pid) && p.life == Life::Running && p.death_signal != 0
        });
        let signals: Vec<(u64, u64)> = orphans.map(|(&child, p)| (child, p.death_signal)).collect();
        self.outbox.extend(signals);
    }

    /// Processes that have not ended, by pid.
    pub fn running(&self) -> impl Iterator<Item = u64> + '_ {
        self.processes
            .iter()
            .filter(|(_, p)| p.life == Life::Running)
            .map(|(&pid, _)| pid)
    }

    /// Every process (not reaped) whose id `selector` picks, as `kill`
    /// and `wait4` read it from the point of view of process `caller`:
    /// `> 0` that process, `0` the caller's group, `-1` all, `< -1` the group
    /// `-selector`.
    pub fn select(&self, caller: u64, selector: i64) -> Vec<u64> {
        let caller_group = self.processes.get(&caller).map_or(caller, |p| p.pgid);
        self.processes
            .iter()
            .filter(|(_, p)| p.life != Life::Reaped)
            .filter(|&(&pid, p)| match selector {
                0 => p.pgid == caller_group,
                -1 => true,
                s if s > 0 => pid == s as u64,
                s => p.pgid == s.unsigned_abs(),
            })
            .map(|(&pid, _)| pid)
            .collect()
    }

    /// The children of `parent` among `pids`.
    pub fn children_among(&self, parent: u64, pids: &[u64]) -> Vec<u64> {
        pids.iter()
            .copied()
            .filter(|pid| self.processes.get(pid).and_then(|p| p.parent) == Some(parent))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 41: past the caps a new process or thread gets `EAGAIN`;
    /// threads of ended processes and of an exec'd image no longer count.
    #[test]
    fn processes_and_threads_are_capped_per_run() {
        let mut t = ProcessTable::new(1);
        for pid in 2..=MAX_PROCESSES as u64 {
            assert_eq!(t.room_for(true), Ok(()));
            t.add_child(pid, 1);
        }
        assert_eq!(t.room_for(true), Err(Errno::EAGAIN));
        assert_eq!(t.room_for(false), Ok(()), "threads may still start");
        t.ended(2, Ending::Exited(0));
        assert_eq!(t.room_for(true), Ok(()));
        let room = MAX_THREADS - (MAX_PROCESSES - 1);
        for _ in 0..room - 1 {
            t.count_thread(1, 1);
        }
        assert_eq!(t.room_for(false), Ok(()));
        t.count_thread(1, 1);
        assert_eq!(t.room_for(false), Err(Errno::EAGAIN));
        t.count_thread(1, -1);
        assert_eq!(t.room_for(false), Ok(()));
        t.count_thread(1, 1);
        t.one_thread(1);
        assert_eq!(t.room_for(false), Ok(()), "an exec leaves one thread");
    }

    #[test]
    fn ids_are_shared_and_count_up() {
        let mut t = ProcessTable::new(100);
        assert_eq!(t.next_id(), 101);
        t.add_child(101, 100);
        assert_eq!(t.next_id(), 102);
        assert_eq!(t.get(101).map(|p| p.pgid), Some(100));
    }

    #[test]
    fn selection_follows_kill_and_wait_rules() {
        let mut t = ProcessTable::new(10);
        t.add_child(11, 10);
        t.add_child(12, 10);
        t.get_mut(12).unwrap().pgid = 12;
        assert_eq!(t.select(10, 0), vec![10, 11]);
        assert_eq!(t.select(10, -1), vec![10, 11, 12]);
        assert_eq!(t.select(10, -12), vec![12]);
        assert_eq!(t.select(10, 11), vec![11]);
        assert_eq!(t.children_among(10, &t.select(10, -1)), vec![11, 12]);
    }

    #[test]
    fn wait_statuses_match_linux() {
        assert_eq!(Ending::Exited(3).wait_status(), 0x300);
        assert_eq!(Ending::Killed(9).wait_status(), 9);
    }
}
