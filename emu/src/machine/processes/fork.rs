//! `fork`, `vfork` and `clone` of a process: the child is a new engine with
//! a copy of the parent's memory and registers, its own pid, its own call
//! tree starting at the fork, and copies of the parent's fds (sharing their
//! open file descriptions), signal actions and clock.
//!
//! The hook only records the request (and the pid the parent gets); the run
//! loop makes the child when the hook has returned, before anything else
//! runs, so the copy is the memory as it was at the call.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

use emuprof_model::{ProcessOrigin, RawProcess};
use unicorn_engine::{RegisterX86, Unicorn};

use super::super::guest_process::{feed_plan, install_hooks, new_engine, GuestProcess};
use super::super::state::{ImageParts, MachineState, SyscallState};
use super::super::threads::{self, RunState, Wait};
use super::super::{block_trace, hooks};
use super::ProcessRequest;
use crate::memory::GuestView;
use crate::syscalls::{Errno, GuestMemory, SysResult};
use crate::tree::call_tree::CallTreeBuilder;
use crate::tree::tree_feed::{self, BuilderSetup};
use crate::EmuError;

/// Length of the `syscall` instruction.
const SYSCALL_LENGTH: u64 = 2;

/// A `clone` that makes a process, as the thread code read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessClone {
    /// `CLONE_VFORK`: the parent waits until the child execs or exits.
    pub vfork: bool,
    /// The child's stack pointer (0: the parent's).
    pub stack_pointer: u64,
    /// `CLONE_SETTLS`: the child's FS base.
    pub tls: Option<u64>,
    /// `CLONE_PARENT_SETTID`: where the parent's memory gets the child's pid.
    pub parent_tid: Option<u64>,
    /// `CLONE_CHILD_SETTID`: where the child's memory gets its pid.
    pub child_tid: Option<u64>,
}

impl ProcessClone {
    /// Plain `fork` (`vfork` when `vfork`).
    pub fn plain(vfork: bool) -> ProcessClone {
        ProcessClone {
            vfork,
            stack_pointer: 0,
            tls: None,
            parent_tid: None,
            child_tid: None,
        }
    }
}

/// A fork the run loop carries out.
pub struct ForkRequest {
    /// The child's pid.
    pub pid: u64,
    /// The child's registers: the parent's at the call, past the `syscall`,
    /// `rax = 0`.
    pub registers: unicorn_engine::Context,
    /// `CLONE_CHILD_SETTID`.
    pub child_tid: Option<u64>,
    /// The parent's calling context that forked.
    pub at: emuprof_model::NodeId,
    /// The parent's virtual time at the fork (the child's clock starts there).
    pub now_ns: u64,
}

/// The hook's half of a process `clone`/`fork`/`vfork`: picks the child's
/// pid and registers and asks the run loop to make it. The parent gets the
/// pid (with `vfork`, once the child has exec'd or exited).
pub fn fork(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, clone: ProcessClone) -> SysResult {
    st.table.borrow().room_for(true)?;
    let fail = |_| Errno::ENOMEM;
    let parent = uc.context_init().map_err(fail)?;
    let pc = uc.pc_read().map_err(fail)?;
    let mut child_registers = vec![
        (RegisterX86::RIP, pc + SYSCALL_LENGTH),
        (RegisterX86::RAX, 0),
    ];
    if clone.stack_pointer != 0 {
        child_registers.push((RegisterX86::RSP, clone.stack_pointer));
    }
    if let Some(tls) = clone.tls {
        child_registers.push((RegisterX86::FS_BASE, tls));
    }
    for (reg, value) in child_registers {
        uc.reg_write(reg, value).map_err(fail)?;
    }
    let registers = uc.context_init().map_err(fail);
    uc.context_restore(&parent).map_err(fail)?;
    let registers = registers?;

    let pid = st.table.borrow_mut().next_id();
    if let Some(address) = clone.parent_tid {
        let mut view = GuestView {
            uc,
            space: &st.space,
        };
        view.write(address, &(pid as u32).to_le_bytes())?;
    }
    st.table.borrow_mut().add_child(pid, st.pid);
    let tree = st.feed.sync();
    let now_ns = st.sys.time.clock.monotonic_ns(tree.instructions);
    st.request = Some(ProcessRequest::Fork(ForkRequest {
        pid,
        registers,
        child_tid: clone.child_tid,
        at: tree.node,
        now_ns,
    }));
    if clone.vfork {
        st.threads.current().state = RunState::Blocked {
            on: Wait::Vfork(pid),
            deadline: None,
            timeout_result: 0,
        };
    }
    threads::request_switch(st);
    Ok(pid)
}

impl GuestProcess {
    /// Makes the child of a fork this process requested: a new engine
    /// holding a copy of this one's memory and the requested registers.
    pub fn fork_child(&self, request: ForkRequest, image: usize) -> Result<GuestProcess, EmuError> {
        let ForkRequest {
            pid,
            registers,
            child_tid,
            at,
            now_ns,
        } = request;
        let (level, x87) = {
            let options = &self.state.borrow().options;
            (options.cpu, options.x87)
        };
        let mut uc = new_engine(level, x87)?;
        let parent = self.state.borrow();
        let space = parent.space.copy_into(&self.uc, &mut uc)?;
        uc.context_restore(&registers)
            .map_err(|e| EmuError::unicorn("setting the fork child's registers", e))?;
        let pc = uc
            .pc_read()
            .map_err(|e| EmuError::unicorn("reading the fork child's registers", e))?;
        let sp = uc
            .reg_read(RegisterX86::RSP)
            .map_err(|e| EmuError::unicorn("reading the fork child's registers", e))?;
        if let Some(address) = child_tid {
            let mut view = GuestView {
                uc: &mut uc,
                space: &space,
            };
            // A bad address is the child's problem, as on Linux.
            let _ = view.write(address, &(pid as u32).to_le_bytes());
        }
        let files = parent.sys.files.for_child().map_err(|e| match e {
            Errno::HOST_OUT_OF_DESCRIPTORS => EmuError::HostDescriptors,
            _ => EmuError::Layout(format!("copying the fds for a fork child: {e:?}")),
        })?;
        let mut time = crate::syscalls::time::Time {
            clock: parent.sys.time.clock.restarted(),
            timers: Default::default(),
        };
        time.clock.sleep(now_ns);
        let process = parent.sys.process.for_child(pid);
        let mut files = files;
        files.use_random(process.random_stream());
        files.belong_to(pid);
        let sys = SyscallState {
            files,
            process,
            time,
            signals: parent.sys.signals.for_child(),
            futexes: Default::default(),
            enosys_noted: BTreeSet::new(),
            shared_mappings: parent.sys.shared_mappings.clone(),
        };
        let options = parent.options.clone();
        let instruction_limit = parent.instruction_limit;
        let setup = BuilderSetup {
            code: Arc::clone(&self.code),
            function_starts: Arc::clone(&self.function_starts),
            tree: CallTreeBuilder::new(pc, sp),
            instruction_limit,
            progress: Arc::new(Default::default()),
            snapshots: self.snapshots.clone(),
            pid,
            simulation: options.simulation,
            dumps: None,
            cpu_state: block_trace::cpu_state(uc.get_handle()),
        };
        let plan = feed_plan(&uc, &setup, &options, false);
        let (feed, builder) = tree_feed::spawn(setup, &plan).map_err(EmuError::BuilderStart)?;
        let identity = RawProcess {
            pid,
            parent: Some(parent.pid),
            origin: ProcessOrigin::Forked { image, at },
            program: self.identity.program.clone(),
        };
        let state: hooks::Shared = Rc::new(RefCell::new(MachineState::new(ImageParts {
            symbols: parent.symbols.clone(),
            text: parent.text,
            feed,
            space,
            sys,
            options,
            handles: parent.handles.for_another_image(),
            instruction_limit,
            pid,
            table: Rc::clone(&parent.table),
        })?));
        let mapped_code = parent.feed.mapped_code().cloned();
        drop(parent);
        install_hooks(&mut uc, &state, &self.code, plan)?;
        if let Some(mapped_code) = mapped_code {
            state.borrow_mut().feed.adopt_mapped_code(mapped_code);
        }
        Ok(GuestProcess {
            uc,
            state,
            builder,
            binary: Arc::clone(&self.binary),
            identity,
            code: Arc::clone(&self.code),
            function_starts: Arc::clone(&self.function_starts),
            pc,
            snapshots: self.snapshots.clone(),
        })
    }
}
