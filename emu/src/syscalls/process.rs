//! The process and the machine it thinks it runs on: ids, limits, `uname`,
//! CPU affinity, `getrandom`. Every answer is fixed or seeded, never the
//! host's.

use super::numbers::*;
use super::random::RandomStream;
use super::{Errno, GuestMemory, SysResult, SyscallCall};
use crate::initial_stack::{GUEST_GID, GUEST_UID};

/// The guest's process id (and its main thread's id; other threads get the
/// ids after it, in creation order).
pub const GUEST_PID: u64 = 4242;
/// The guest's parent process id.
pub const GUEST_PPID: u64 = 4241;

const RLIM_INFINITY: u64 = u64::MAX;
const RLIMIT_STACK: u64 = 3;
const RLIMIT_NOFILE: u64 = 7;
/// Stack size the guest is told it has (and has).
pub const STACK_LIMIT: u64 = 8 << 20;

/// Process identity and seeded randomness.
pub struct Process {
    random: RandomStream,
    cpus: u32,
    /// This process's id.
    pub pid: u64,
    /// Its parent's id.
    pub ppid: u64,
}

impl Process {
    /// A process whose `getrandom` stream (and `AT_RANDOM`) derive from
    /// `seed`, on a machine of `cpus` CPUs (its affinity mask).
    pub fn new(seed: u64, cpus: u32) -> Process {
        Process {
            random: RandomStream::new(seed),
            cpus,
            pid: GUEST_PID,
            ppid: GUEST_PPID,
        }
    }

    /// A `fork` child's: process `pid`, child of this one, continuing this
    /// one's random stream (each process's stream is then its own, and
    /// the same on every run).
    pub fn for_child(&self, pid: u64) -> Process {
        Process {
            random: self.random.fork(),
            cpus: self.cpus,
            pid,
            ppid: self.pid,
        }
    }

    /// The next `n` seeded random bytes.
    pub fn random_bytes(&mut self, buf: &mut [u8]) {
        self.random.fill(buf);
    }

    /// The process's random stream, which `/dev/urandom` shares.
    pub fn random_stream(&self) -> RandomStream {
        self.random.clone()
    }

    /// Handles a process/identity syscall. `exit`, `exit_group` and the
    /// per-thread calls (`gettid`, `set_tid_address`, `sched_yield`) are the
    /// machine's.
    pub fn handle(&mut self, call: &mut SyscallCall) -> Option<SysResult> {
        let a = call.args;
        Some(match call.number {
            SYS_GETPID => Ok(self.pid),
            SYS_GETPPID => Ok(self.ppid),
            SYS_GETUID | SYS_GETEUID => Ok(GUEST_UID),
            SYS_GETGID | SYS_GETEGID => Ok(GUEST_GID),
            SYS_GETRESUID | SYS_GETRESGID => {
                let id = if call.number == SYS_GETRESUID {
                    GUEST_UID
                } else {
                    GUEST_GID
                };
                write_all(call, &[(a[0], id), (a[1], id), (a[2], id)])
            }
            SYS_GETGROUPS => Ok(0),
            SYS_SET_ROBUST_LIST => Ok(0),
            SYS_RSEQ => Err(Errno::ENOSYS),
            SYS_PKEY_ALLOC => Err(Errno::ENOSPC),
            SYS_PRLIMIT64 => {
                if a[0] != 0 && a[0] != self.pid {
                    Err(Errno::ESRCH)
                } else if a[3] != 0 {
                    write_limit(call, a[3], a[1])
                } else {
                    Ok(0)
                }
            }
            SYS_GETRLIMIT => write_limit(call, a[1], a[0]),
            SYS_SETRLIMIT => Ok(0),
            SYS_SCHED_GETAFFINITY => {
                // One bit per CPU, in whole 64-bit words as the kernel writes.
                let cpus = self.cpus as usize;
                let words = cpus.div_ceil(64);
                if (a[1] as usize) < words * 8 {
                    Err(Errno::EINVAL)
                } else {
                    let mask: Vec<u8> = (0..words * 64)
                        .step_by(8)
                        .map(|bit| {
                            (0..8)
                                .filter(|b| bit + b < cpus)
                                .fold(0u8, |m, b| m | 1 << b)
                        })
                        .collect();
                    call.mem
                        .write(a[2], &mask)
                        .map(|_| mask.len() as u64)
                        .map_err(Errno::from)
                }
            }
            SYS_SCHED_SETAFFINITY => Ok(0),
            SYS_SCHED_GETSCHEDULER
            | SYS_SCHED_GETPARAM
            | SYS_SCHED_GET_PRIORITY_MAX
            | SYS_SCHED_GET_PRIORITY_MIN
            | SYS_GETPRIORITY => scheduling_query(call),
            // Nice values are accepted and kept by nobody: the threads take
            // turns on one emulated CPU whatever their priority. Lowering
            // the nice value below 0 needs a privilege the guest has not.
            SYS_SETPRIORITY if a[0] > PRIO_USER => Err(Errno::EINVAL),
            SYS_SETPRIORITY if (a[2] as i32) < 0 => Err(Errno::EACCES),
            SYS_SETPRIORITY => Ok(0),
            SYS_UNAME => uname(call, a[0]),
            SYS_GETRANDOM => {
                let mut buf = vec![0u8; a[1].min(1 << 20) as usize];
                self.random.fill(&mut buf);
                call.mem
                    .write(a[0], &buf)
                    .map(|_| buf.len() as u64)
                    .map_err(Errno::from)
            }
            SYS_SYSINFO => sysinfo(call, a[0]),
            SYS_GETCPU => {
                if a[0] != 0 {
                    if let Err(e) = call.mem.write(a[0], &0u32.to_le_bytes()) {
                        return Some(Err(e.into()));
                    }
                }
                if a[1] != 0 {
                    if let Err(e) = call.mem.write(a[1], &0u32.to_le_bytes()) {
                        return Some(Err(e.into()));
                    }
                }
                Ok(0)
            }
            _ => return None,
        })
    }
}

/// `SCHED_OTHER`, the policy every guest thread runs under.
const SCHED_OTHER: u64 = 0;
const SCHED_FIFO: u64 = 1;
const SCHED_RR: u64 = 2;
const SCHED_BATCH: u64 = 3;
const SCHED_IDLE: u64 = 5;
const SCHED_DEADLINE: u64 = 6;
/// `PRIO_USER`, the last `which` of `getpriority`.
const PRIO_USER: u64 = 2;

/// The scheduling queries: every guest thread and process runs under
/// `SCHED_OTHER` at static priority 0 and nice 0 (the emulated CPU is
/// shared by emuprof's own scheduler, which has no priorities). The range
/// queries answer as Linux does for each policy. A negative id is
/// `EINVAL`; any other id (0 is the caller) is answered alike.
fn scheduling_query(call: &mut SyscallCall) -> SysResult {
    let a = call.args;
    let id = a[0] as i32;
    match call.number {
        SYS_SCHED_GET_PRIORITY_MAX | SYS_SCHED_GET_PRIORITY_MIN => match a[0] {
            SCHED_FIFO | SCHED_RR if call.number == SYS_SCHED_GET_PRIORITY_MAX => Ok(99),
            SCHED_FIFO | SCHED_RR => Ok(1),
            SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok(0),
            _ => Err(Errno::EINVAL),
        },
        _ if call.number == SYS_GETPRIORITY && a[0] > PRIO_USER => Err(Errno::EINVAL),
        // The kernel answers 20 - nice, so that no priority looks like an
        // error.
        SYS_GETPRIORITY => Ok(20),
        _ if id < 0 => Err(Errno::EINVAL),
        SYS_SCHED_GETSCHEDULER => Ok(SCHED_OTHER),
        _ => {
            // struct sched_param: one int, the static priority.
            call.mem.write(a[1], &0u32.to_le_bytes())?;
            Ok(0)
        }
    }
}

fn write_all(call: &mut SyscallCall, values: &[(u64, u64)]) -> SysResult {
    for &(addr, v) in values {
        call.mem.write(addr, &(v as u32).to_le_bytes())?;
    }
    Ok(0)
}

fn write_limit(call: &mut SyscallCall, addr: u64, resource: u64) -> SysResult {
    let (cur, max) = match resource {
        RLIMIT_STACK => (STACK_LIMIT, RLIM_INFINITY),
        RLIMIT_NOFILE => (1024, 4096),
        0..=15 => (RLIM_INFINITY, RLIM_INFINITY),
        _ => return Err(Errno::EINVAL),
    };
    call.mem.write_u64(addr, cur)?;
    call.mem.write_u64(addr + 8, max)?;
    Ok(0)
}

/// `sysinfo`: a fixed machine (8 GiB of RAM, nothing else running) whose
/// uptime is the virtual clock's start.
fn sysinfo(call: &mut SyscallCall, addr: u64) -> SysResult {
    // struct sysinfo: uptime, loads[3], totalram, freeram, sharedram,
    // bufferram, totalswap, freeswap (longs), procs (u16), pad, totalhigh,
    // freehigh, mem_unit (u32): 112 bytes.
    let mut b = [0u8; 112];
    let put =
        |b: &mut [u8; 112], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    put(&mut b, 0, 1);
    put(&mut b, 32, super::machine_files::TOTAL_RAM);
    put(&mut b, 40, super::machine_files::FREE_RAM);
    b[80..82].copy_from_slice(&1u16.to_le_bytes());
    b[104..108].copy_from_slice(&1u32.to_le_bytes());
    call.mem.write(addr, &b)?;
    Ok(0)
}

/// `prctl` but the parent-death signal (which the machine keeps in its
/// process table): names and harmless flags are accepted; the rest is
/// `EINVAL`.
pub(crate) fn prctl(mem: &mut dyn GuestMemory, a: [u64; 6]) -> SysResult {
    const PR_GET_DUMPABLE: u64 = 3;
    const PR_SET_DUMPABLE: u64 = 4;
    const PR_SET_NAME: u64 = 15;
    const PR_GET_NAME: u64 = 16;
    const PR_SET_NO_NEW_PRIVS: u64 = 38;
    const PR_SET_VMA: u64 = 0x53564d41;
    match a[0] {
        PR_SET_DUMPABLE | PR_SET_NAME | PR_SET_NO_NEW_PRIVS | PR_SET_VMA => Ok(0),
        PR_GET_DUMPABLE => Ok(1),
        PR_GET_NAME => {
            let mut name = [0u8; 16];
            name[..7].copy_from_slice(b"emuprof");
            mem.write(a[1], &name)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn uname(call: &mut SyscallCall, addr: u64) -> SysResult {
    let fields = [
        "Linux",
        "emuprof",
        "6.1.0-emuprof",
        "#1 SMP PREEMPT_DYNAMIC",
        "x86_64",
        "(none)",
    ];
    let mut b = vec![0u8; 65 * fields.len()];
    for (i, f) in fields.iter().enumerate() {
        b[i * 65..i * 65 + f.len()].copy_from_slice(f.as_bytes());
    }
    call.mem.write(addr, &b)?;
    Ok(0)
}
