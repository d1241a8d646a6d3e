//! `wait4` and `waitid`: reaping child processes. A wait with no ended
//! child blocks the calling thread; the call runs again when one of the
//! process's children ends (the run loop wakes it).

use unicorn_engine::Unicorn;

use super::super::state::MachineState;
use super::super::threads::{self, RunState, Wait};
use super::table::{Ending, Life};
use crate::memory::GuestView;
use crate::syscalls::numbers::SYS_WAITID;
use crate::syscalls::{Errno, GuestMemory, SysResult};

const WNOHANG: u64 = 1;
const WEXITED: u64 = 4;
const WNOWAIT: u64 = 0x0100_0000;
const P_ALL: u64 = 0;
const P_PID: u64 = 1;
const P_PGID: u64 = 2;
const SIGCHLD: u32 = 17;
const CLD_EXITED: u32 = 1;
const CLD_KILLED: u32 = 2;
/// `sizeof(struct rusage)`.
const RUSAGE_SIZE: usize = 144;
/// `sizeof(siginfo_t)`.
const SIGINFO_SIZE: usize = 128;

/// Which children a wait is for, and how it reports.
struct WaitCall {
    selector: i64,
    no_hang: bool,
    keep: bool,
}

/// `wait4(pid, wstatus, options, rusage)` or `waitid(idtype, id, infop,
/// options, rusage)`.
pub fn wait(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> SysResult {
    let call = if number == SYS_WAITID {
        if args[3] & WEXITED == 0 {
            return Err(Errno::EINVAL);
        }
        let selector = match args[0] {
            P_ALL => -1,
            P_PID => args[1] as i64,
            P_PGID if args[1] == 0 => 0,
            P_PGID => -(args[1] as i64),
            _ => return Err(Errno::EINVAL),
        };
        WaitCall {
            selector,
            no_hang: args[3] & WNOHANG != 0,
            keep: args[3] & WNOWAIT != 0,
        }
    } else {
        WaitCall {
            selector: args[0] as i32 as i64,
            no_hang: args[2] & WNOHANG != 0,
            keep: false,
        }
    };
    let found = {
        let table = st.table.borrow();
        let children = table.children_among(st.pid, &table.select(st.pid, call.selector));
        if children.is_empty() {
            return Err(Errno::ECHILD);
        }
        children
            .into_iter()
            .filter_map(|pid| match table.get(pid)?.life {
                Life::Zombie { ending, order } => Some((order, pid, ending)),
                _ => None,
            })
            .min()
    };
    let Some((_, pid, ending)) = found else {
        if call.no_hang {
            if number == SYS_WAITID && args[2] != 0 {
                write(uc, st, args[2], &[0u8; SIGINFO_SIZE])?;
            }
            return Ok(0);
        }
        st.threads.current().state = RunState::Blocked {
            on: Wait::Child(call.selector),
            deadline: None,
            timeout_result: 0,
        };
        threads::request_switch(st);
        return Ok(0);
    };
    if number == SYS_WAITID {
        if args[2] != 0 {
            write(uc, st, args[2], &siginfo(pid, ending))?;
        }
        if args[4] != 0 {
            write(uc, st, args[4], &[0u8; RUSAGE_SIZE])?;
        }
    } else {
        if args[1] != 0 {
            write(uc, st, args[1], &ending.wait_status().to_le_bytes())?;
        }
        if args[3] != 0 {
            write(uc, st, args[3], &[0u8; RUSAGE_SIZE])?;
        }
    }
    if !call.keep {
        if let Some(p) = st.table.borrow_mut().get_mut(pid) {
            p.life = Life::Reaped;
        }
    }
    Ok(if number == SYS_WAITID { 0 } else { pid })
}

/// The `siginfo_t` `waitid` fills for child `pid`.
fn siginfo(pid: u64, ending: Ending) -> [u8; SIGINFO_SIZE] {
    let mut info = [0u8; SIGINFO_SIZE];
    let (code, status) = match ending {
        Ending::Exited(code) => (CLD_EXITED, code & 0xff),
        Ending::Killed(sig) => (CLD_KILLED, sig),
    };
    info[0..4].copy_from_slice(&SIGCHLD.to_le_bytes());
    info[8..12].copy_from_slice(&code.to_le_bytes());
    info[16..20].copy_from_slice(&(pid as u32).to_le_bytes());
    info[24..28].copy_from_slice(&status.to_le_bytes());
    info
}

fn write(uc: &mut Unicorn<'_, ()>, st: &MachineState, at: u64, bytes: &[u8]) -> Result<(), Errno> {
    let mut view = GuestView {
        uc,
        space: &st.space,
    };
    view.write(at, bytes).map_err(Errno::from)
}
