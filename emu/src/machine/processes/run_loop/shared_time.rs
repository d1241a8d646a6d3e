//! Time passes for the processes that wait for it: while one process runs
//! (or its clock jumps to a timeout), every other process that waits with
//! a timeout or a timer sees its clock advance by as much. So a deadline
//! passes on the virtual clock while other processes keep running, and the
//! running process gives way at the end of its quantum once another's
//! deadline has passed (`others_deadline`): `timeout 1 busy-loop` ends
//! after a second of the loop's work. A process that waits without a
//! deadline keeps its own clock (only time can wake it, so only then does
//! it need the others' time). Measuring waits for the call-tree threads,
//! so it happens only while another process waits with a deadline; every
//! amount is counted guest work, the same on every run.

use super::super::super::threads;
use super::World;

impl World {
    /// Before process `index` runs: its clock now, when another process
    /// waits for a time (it is told, on its own clock, when the first of
    /// those is due); `None` when nobody does.
    pub(super) fn start_shared_time(&mut self, index: usize) -> Option<u64> {
        let waiting: Vec<usize> = (0..self.running.len())
            .filter(|&i| {
                i != index
                    && threads::next_deadline(&self.running[i].process.state.borrow()).is_some()
            })
            .collect();
        let mut st = self.running[index].process.state.borrow_mut();
        if waiting.is_empty() {
            st.others_deadline = None;
            return None;
        }
        let start = threads::now(&mut st);
        st.others_deadline = waiting
            .iter()
            .filter_map(|&i| {
                let mut other = self.running[i].process.state.borrow_mut();
                let deadline = threads::next_deadline(&other)?;
                let left = deadline.saturating_sub(threads::now(&mut other));
                Some(start.saturating_add(left))
            })
            .min();
        Some(start)
    }

    /// After process `index` ran from its time `start` on: the time it took
    /// passes for the processes that wait for a time, and those whose
    /// deadline has passed wake.
    pub(super) fn pass_time(&mut self, index: usize, start: u64) {
        let spent = {
            let mut st = self.running[index].process.state.borrow_mut();
            st.others_deadline = None;
            threads::now(&mut st).saturating_sub(start)
        };
        for (i, r) in self.running.iter().enumerate() {
            let mut st = r.process.state.borrow_mut();
            if i == index || threads::next_deadline(&st).is_none() {
                continue;
            }
            st.sys.time.clock.sleep(spent);
            let now = threads::now(&mut st);
            if threads::next_deadline(&st).is_some_and(|d| d <= now) {
                threads::wake_due(&mut st, now);
            }
        }
    }
}
