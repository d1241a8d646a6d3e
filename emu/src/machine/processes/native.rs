//! `--exec-native`: a program the guest execs that emuprof cannot load runs
//! on the host instead, unprofiled, with the guest's fds 0–2, environment
//! and working directory; its exit status ends the guest process.

use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

use super::super::state::MachineState;
use super::super::stop::StopReason;
use super::exec::NativeExec;

/// Runs `exec` on the host and waits for it; returns how the guest process
/// ends (as if the program had run in it).
pub fn run(st: &mut MachineState, exec: NativeExec) -> StopReason {
    let NativeExec {
        host_path,
        program,
        args,
        env,
    } = exec;
    let mut command = Command::new(&host_path);
    if let Some((first, rest)) = args.split_first() {
        command.arg0(first).args(rest);
    }
    command.env_clear();
    for pair in &env {
        if let Some((key, value)) = pair.split_once('=') {
            command.env(key, value);
        }
    }
    if let Some(cwd) = st.sys.files.working_directory() {
        command.current_dir(cwd);
    }
    let stdio = |fd: i32| {
        st.sys
            .files
            .host_fd_copy(fd)
            .map_or_else(Stdio::null, |f: OwnedFd| Stdio::from(f))
    };
    command.stdin(stdio(0)).stdout(stdio(1)).stderr(stdio(2));
    let status = command.status();
    let pid = st.pid;
    match status {
        Ok(status) => {
            st.notes.push(format!(
                "process {pid} ran {program} natively (--exec-native, unprofiled): {status}"
            ));
            match (status.code(), status.signal()) {
                (Some(code), _) => StopReason::Exited(code),
                (None, Some(signal)) => StopReason::Signaled {
                    signal,
                    what: format!("{program} ran natively and was killed"),
                    pc: 0,
                    stack: Vec::new(),
                },
                (None, None) => StopReason::Exited(127),
            }
        }
        Err(e) => {
            st.notes.push(format!(
                "process {pid} could not run {program} natively: {e}"
            ));
            StopReason::Exited(127)
        }
    }
}
