//! One guest process image: its own Unicorn engine, address space, machine
//! state and call-tree thread. The first program, each process `fork`
//! makes and each program `execve` starts is one; the run loop in
//! [`super::processes`] decides which one runs.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::Arc;

use emuprof_loader::{Binary, Image};
use emuprof_model::{RawProcess, RawProfile};
use unicorn_engine::{Arch, HookType, Mode, Unicorn, X86Insn};

use super::guest_symbols::{GuestSymbols, LoadedLibrary};
use super::processes::ProcessTable;
use super::stack_pointer::StackPointerSource;
use super::state::{ImageParts, MachineState, SyscallState};
use super::stop::{self, StopReason};
use super::{block_hook, block_trace, hooks, map_names, RunHandles, RunOptions, STACK_TOP};
use crate::clock::VirtualClock;
use crate::memory::{page_align_down, page_align_up, AddressSpace, Protection, PAGE_SIZE};
use crate::syscalls::files::Files;
use crate::syscalls::process::{Process, STACK_LIMIT};
use crate::syscalls::process_maps::MapName;
use crate::syscalls::signals::Signals;
use crate::syscalls::time::Time;
use crate::tree::call_tree::CallTreeBuilder;
use crate::tree::code_snapshot::{CodeRange, CodeSnapshot, SpanBytes};
use crate::tree::recorded;
use crate::tree::tree_feed::{
    self, BlockPath, BuilderHandle, BuilderSetup, FeedPlan, MemoryAccesses, RunFacts,
    StackPointerPath,
};
use crate::{cpu, initial_stack, EmuError};

/// A guest process image that has started and not yet been finished.
///
/// Field order matters: `uc` drops before `state`, whose address its hooks
/// hold.
pub(super) struct GuestProcess {
    /// Its engine, with its hooks installed.
    pub uc: Unicorn<'static, ()>,
    /// What its hooks share.
    pub state: hooks::Shared,
    /// Its call-tree thread.
    pub builder: BuilderHandle,
    /// The program it runs.
    pub binary: Arc<Binary>,
    /// Which process it is and where it came from.
    pub identity: RawProcess,
    /// The code its call-tree thread decodes (shared with forked images).
    pub code: Arc<CodeSnapshot>,
    /// Function starts of the program and its dynamic linker.
    pub function_starts: Arc<emuprof_loader::FunctionStarts>,
    /// Where the guest continues when it runs next.
    pub pc: u64,
    /// The live view its call tree answers (the first program's image and
    /// its fork children: they run the same code, so the view names their
    /// functions).
    pub snapshots: Option<Arc<crate::live::SnapshotSlot>>,
}

/// What a new program image starts with.
pub(super) struct ImageStart {
    /// The program.
    pub binary: Arc<Binary>,
    /// Its identity (pid, parent, origin, program name).
    pub identity: RawProcess,
    /// Options; `args` and `env` are the new program's.
    pub options: RunOptions,
    /// What the run shares with other threads.
    pub handles: RunHandles,
    /// The run's process table.
    pub table: Rc<RefCell<ProcessTable>>,
    /// The syscall state of the image it replaces (`execve`), or `None` for
    /// the first program.
    pub inherited: Option<SyscallState>,
}

impl GuestProcess {
    /// Loads a program into a fresh engine the way Linux `execve` does and
    /// gets it ready to run its first instruction (at its dynamic linker's
    /// entry for a dynamically linked program).
    pub fn start(start: ImageStart) -> Result<GuestProcess, EmuError> {
        let ImageStart {
            binary,
            identity,
            options,
            handles,
            table,
            inherited,
        } = start;
        let image = &binary.image;
        let mut uc = new_engine(options.cpu, options.x87)?;
        let mut space = AddressSpace::new(&mut uc)?;
        let program_code = load_segments(&mut uc, &mut space, image)?;
        let interpreter = binary.interpreter.as_deref();
        let interpreter_code = match interpreter {
            Some(interpreter) => load_segments(&mut uc, &mut space, &interpreter.image)?,
            None => Vec::new(),
        };
        let code = Arc::new(CodeSnapshot::of_program(program_code, interpreter_code));
        // A dynamically linked program starts in its dynamic linker.
        let start = interpreter.map_or(image.entry, |i| i.image.entry);
        let function_starts = Arc::new(match interpreter {
            Some(i) => binary
                .symbols
                .function_starts()
                .union(i.symbols.function_starts()),
            None => binary.symbols.function_starts().union(&Default::default()),
        });
        space.set_brk_start(image.brk_start);

        let cpus = options.cpus.clamp(1, super::MAX_CPUS);
        let first_program = inherited.is_none();
        let mut sys = match inherited {
            Some(sys) => sys.for_new_program(),
            None => SyscallState {
                files: Files::new(options.files.clone())?,
                process: Process::new(options.seed, cpus),
                time: Time {
                    clock: VirtualClock::starting_at(options.clock_start),
                    timers: Default::default(),
                },
                signals: Signals::default(),
                futexes: Default::default(),
                enosys_noted: BTreeSet::new(),
                shared_mappings: Default::default(),
            },
        };
        if first_program {
            let stream = sys.process.random_stream();
            sys.files.use_random(stream);
        }
        let mut random = [0u8; 16];
        sys.process.random_bytes(&mut random);
        let stack_prot = Protection {
            exec: image.stack_executable,
            ..Protection::READ_WRITE
        };
        space.map(&mut uc, STACK_TOP - STACK_LIMIT, STACK_LIMIT, stack_prot)?;
        space.name(
            STACK_TOP - STACK_LIMIT,
            STACK_LIMIT,
            MapName::Special("[stack]"),
        );
        map_names::name_image(&mut space, image, sys.files.exe_path());
        if let (Some(interpreter), Some(path)) = (interpreter, &image.interpreter) {
            map_names::name_image(&mut space, &interpreter.image, path.as_bytes());
        }
        let aux = initial_stack::AuxInfo {
            phdr: image.phdr_address,
            phent: u64::from(image.phent),
            phnum: u64::from(image.phnum),
            base: interpreter
                .and_then(|i| i.image.segments.first())
                .map_or(0, |s| page_align_down(s.address)),
            entry: image.entry,
            random,
            execfn: options.args.first().cloned().unwrap_or_default(),
        };
        let stack = initial_stack::build(STACK_TOP, &options.args, &options.env, &aux);
        if stack.bytes.len() as u64 > STACK_LIMIT / 2 {
            return Err(EmuError::Layout(
                "the arguments and environment are larger than 4 MiB".into(),
            ));
        }
        space
            .write_initial(&mut uc, stack.sp, &stack.bytes)
            .map_err(|f| EmuError::Layout(format!("initial stack at {:#x}", f.address)))?;
        cpu::enable_paging(&mut uc, space.page_table_root())?;
        super::user_mode::enter(&mut uc, &mut space, start, stack.sp)?;

        sys.files.describe_cpus(cpus, options.cpu);
        sys.files.interrupt_reads_on(Arc::clone(&handles.interrupt));
        let instruction_limit = options.max_instructions.unwrap_or(u64::MAX);
        if let Some(slot) = &handles.snapshots {
            slot.process_shown(crate::live::ProcessName {
                pid: identity.pid,
                program: identity.program.clone(),
            });
            slot.thread_started(0, identity.pid);
        }
        let setup = BuilderSetup {
            code: Arc::clone(&code),
            function_starts: Arc::clone(&function_starts),
            tree: CallTreeBuilder::new(start, stack.sp),
            instruction_limit,
            progress: Arc::clone(&handles.progress),
            snapshots: handles.snapshots.clone(),
            pid: identity.pid,
            simulation: options.simulation,
            dumps: handles.dumps.clone().map(|dumps| tree_feed::PartSetup {
                dumps,
                command: options.args.clone(),
                process: identity.clone(),
            }),
            cpu_state: block_trace::cpu_state(uc.get_handle()),
        };
        // Only the first program starts late (an exec'd one inherits state).
        let late_start = options.start.filter(|_| first_program);
        let plan = feed_plan(&uc, &setup, &options, late_start.is_some());
        let (mut feed, builder) = tree_feed::spawn(setup, &plan).map_err(EmuError::BuilderStart)?;
        // Loading changed code nothing has decoded yet.
        space.take_code_changes();
        // The guest could rewrite writable text without a system call: such
        // code is decoded and checked on the emulation thread instead.
        let main = code.main_range();
        let text = if space.any_writable(main.start, main.end - main.start) {
            CodeRange::default()
        } else {
            CodeRange::new(main)
        };
        let pid = identity.pid;
        let snapshots = handles.snapshots.clone();
        if let Some(point) = late_start {
            feed.fast_forward_to(
                point,
                (start, stack.sp),
                Arc::clone(&code),
                Arc::clone(&function_starts),
                instruction_limit,
            );
        }
        let state: hooks::Shared = Rc::new(RefCell::new(MachineState::new(ImageParts {
            symbols: GuestSymbols::new(Arc::clone(&binary)),
            text,
            feed,
            space,
            sys,
            options,
            handles,
            instruction_limit,
            pid,
            table,
        })?));
        install_hooks(&mut uc, &state, &code, plan)?;
        // The dynamic linker's code, loaded with the program.
        super::code_changes::count_new_code_inline(&uc, &mut state.borrow_mut());
        Ok(GuestProcess {
            uc,
            state,
            builder,
            binary,
            identity,
            code,
            function_starts,
            pc: start,
            snapshots,
        })
    }

    /// Runs the guest until a hook stops it: the process ended, the run
    /// must end, or the run loop has something to do (a thread switch, a
    /// new process). Errors are Unicorn's.
    pub fn run_slice(&mut self) -> Result<(), unicorn_engine::uc_error> {
        let handle = self.uc.get_handle();
        stop::running(handle, || self.uc.emu_start(self.pc, u64::MAX, 0, 0))
    }

    /// Ends the image with `stop` (or the reason its hooks recorded) and
    /// returns its profile, the libraries it mapped and the stop.
    pub fn finish(
        self,
        run_result: Result<(), unicorn_engine::uc_error>,
    ) -> Result<FinishedImage, EmuError> {
        let GuestProcess {
            uc,
            state,
            builder,
            binary,
            identity,
            ..
        } = self;
        let mut st = state.borrow_mut();
        // What the image wrote into shared file mappings reaches the files
        // (a failure there has no one left to tell).
        let st_ref = &mut *st;
        let _ = st_ref
            .sys
            .shared_mappings
            .write_back_all(&st_ref.space, &uc);
        st.note_write_backs();
        let tree_state = st.feed.close();
        let pc = uc.pc_read().unwrap_or(0);
        let stop = match (stop::take_hook_failure().or(st.stop.take()), run_result) {
            // The guest ran on past the limit until emuprof noticed; what it
            // did there does not count.
            _ if tree_state.limit_reached => StopReason::InstructionLimit(st.instruction_limit),
            (Some(stop), _) => stop,
            (None, Err(unicorn_engine::uc_error::INSN_INVALID)) => StopReason::InvalidInstruction {
                pc,
                function: st.function_name(pc),
                bytes: hooks::instruction_bytes(&uc, &st, pc),
                level: st.options.cpu,
            },
            (None, Err(e)) => {
                StopReason::Internal(format!("Unicorn stopped with {e:?} at {pc:#x}"))
            }
            (None, Ok(())) => StopReason::Halted {
                pc,
                function: st.function_name(pc),
            },
        };
        let mut notes = std::mem::take(&mut st.notes);
        if st.feed.fast_forwarding() {
            notes.push(
                "the start point (--start-at/--start-after) was never reached: nothing was \
                 collected; check the function name and count with a full profile"
                    .to_string(),
            );
        }
        let started_at = st.feed.started_at();
        let symbols = st.symbols.clone();
        let command = st.options.args.clone();
        let tids: Vec<u64> = st.threads.threads.iter().map(|t| t.tid).collect();
        drop(st);
        drop(uc); // releases the hooks' references to the state
        let state = Rc::try_unwrap(state)
            .map_err(|_| EmuError::Layout("a process's state is still in use".into()))?;
        let sys = state.into_inner().sys;
        let built = builder.join().map_err(|_| EmuError::BuilderPanicked)?;
        let stop = with_call_stack(stop, &built.tree, &symbols);
        let blocks =
            recorded::block_table(&built.blocks, &built.executions, built.simulation.as_ref());
        let finished = built.tree.finish();
        let folded_recursion = finished.folded_recursion();
        let mut nodes = finished.nodes;
        let simulation = built
            .simulation
            .map(|counts| recorded::attach_events(&mut nodes, &counts));
        let threads = recorded::thread_table(&finished.threads, &tids);
        let profile = RawProfile {
            command,
            exit_status: stop.exit_status(),
            partial: stop.partial_reason(),
            total_instructions: finished.total,
            total_cycles: finished.total_cycles,
            folded_recursion,
            nodes,
            threads,
            blocks,
            process: identity,
            simulation,
        };
        Ok(FinishedImage {
            profile,
            part: built.last_part,
            started_at,
            instructions_run: tree_state.instructions,
            stop,
            notes,
            binary,
            libraries: symbols.into_libraries(),
            sys: Some(sys),
        })
    }
}

/// A process image that has ended.
pub(super) struct FinishedImage {
    /// Its profile.
    pub profile: RawProfile,
    /// Which part of the run `profile` is, when dumps cut it.
    pub part: Option<emuprof_model::Part>,
    /// The instructions run before the call tree started (a late start).
    pub started_at: Option<u64>,
    /// Every instruction it ran (`profile` has those of its last part).
    pub instructions_run: u64,
    /// Why it ended.
    pub stop: StopReason,
    /// Notes for the user.
    pub notes: Vec<String>,
    /// The program it ran.
    pub binary: Arc<Binary>,
    /// The libraries it mapped.
    pub libraries: Vec<LoadedLibrary>,
    /// Its syscall state (files, identity, clock), which an `execve`d
    /// program inherits (taken then).
    pub sys: Option<SyscallState>,
}

/// A new engine with emuprof's CPU model at `level`, its x87 unit
/// computing as `x87` says.
pub(super) fn new_engine(
    level: cpu::CpuLevel,
    x87: crate::x87::X87Mode,
) -> Result<Unicorn<'static, ()>, EmuError> {
    let mut uc = Unicorn::new(Arch::X86, Mode::MODE_64)
        .map_err(|e| EmuError::unicorn("starting the emulator", e))?;
    cpu::select_model(&mut uc, level, x87)?;
    Ok(uc)
}

/// Fills in the guest call stack of a fatal signal (innermost first, at most
/// 12 functions), and of each thread of a deadlock, once the call tree has
/// seen every block.
fn with_call_stack(stop: StopReason, tree: &CallTreeBuilder, symbols: &GuestSymbols) -> StopReason {
    match stop {
        StopReason::Deadlock { mut threads } => {
            for t in &mut threads {
                t.stack = tree
                    .call_stack_of(t.index)
                    .into_iter()
                    .take(10)
                    .map(|addr| symbols.name_for(addr))
                    .collect();
            }
            StopReason::Deadlock { threads }
        }
        StopReason::Signaled {
            signal, what, pc, ..
        } => {
            let callers = tree.call_stack().into_iter().skip(1).take(11);
            let stack = std::iter::once(pc)
                .chain(callers)
                .map(|addr| symbols.name_for(addr))
                .collect();
            StopReason::Signaled {
                signal,
                what,
                pc,
                stack,
            }
        }
        other => other,
    }
}

/// Maps every `PT_LOAD` segment, page by page with the union of the
/// permissions of the segments that touch it, and copies the file bytes in.
/// Returns the executable code as loaded (spans for a [`CodeSnapshot`]).
fn load_segments(
    uc: &mut Unicorn<'_, ()>,
    space: &mut AddressSpace,
    image: &Image,
) -> Result<Vec<(u64, SpanBytes)>, EmuError> {
    let mut pages: BTreeMap<u64, Protection> = BTreeMap::new();
    for seg in &image.segments {
        let start = page_align_down(seg.address);
        let end = page_align_up(seg.address.saturating_add(seg.mem_size));
        for page in (start..end).step_by(PAGE_SIZE as usize) {
            let p = pages.entry(page).or_default();
            p.read |= seg.readable;
            p.write |= seg.writable;
            p.exec |= seg.executable;
        }
    }
    // Map writable first so the bytes can be copied, then set the real
    // permissions in spans of equal protection.
    let spans = spans_of(&pages);
    for &(start, len, _) in &spans {
        space.map(uc, start, len, Protection::READ_WRITE)?;
    }
    for seg in &image.segments {
        space
            .write_initial(uc, seg.address, &seg.data)
            .map_err(|f| EmuError::Layout(format!("segment byte at {:#x}", f.address)))?;
    }
    let code = code_of(uc, space, image)?;
    for &(start, len, prot) in &spans {
        if let Err(page) = space.protect(uc, start, len, prot)? {
            return Err(EmuError::Layout(format!(
                "protecting the segment page at {page:#x}"
            )));
        }
        space.set_accounted(start, len, prot.write);
    }
    Ok(code)
}

/// The code `image` loaded: each executable segment's bytes from the file.
/// They are the file's own, shared, unless another segment overlaps them
/// (then they are read back from guest memory, which holds the last
/// segment written there).
fn code_of(
    uc: &Unicorn<'_, ()>,
    space: &AddressSpace,
    image: &Image,
) -> Result<Vec<(u64, SpanBytes)>, EmuError> {
    let mut code = Vec::new();
    for (i, seg) in image.segments.iter().enumerate() {
        if !seg.executable || seg.data.is_empty() {
            continue;
        }
        let end = seg.address + seg.data.len() as u64;
        let overlapped = image
            .segments
            .iter()
            .enumerate()
            .any(|(j, other)| j != i && other.address < end && seg.address < other.end());
        let bytes = if overlapped {
            let mut bytes = vec![0u8; seg.data.len()];
            space
                .read_raw(uc, seg.address, &mut bytes)
                .map_err(|f| EmuError::Layout(format!("code byte at {:#x}", f.address)))?;
            SpanBytes::Copied(bytes)
        } else {
            SpanBytes::File(seg.data.clone())
        };
        code.push((seg.address, bytes));
    }
    Ok(code)
}

/// Groups consecutive pages with the same protection: `(start, len, prot)`.
fn spans_of(pages: &BTreeMap<u64, Protection>) -> Vec<(u64, u64, Protection)> {
    let mut spans: Vec<(u64, u64, Protection)> = Vec::new();
    for (&page, &prot) in pages {
        match spans.last_mut() {
            Some((start, len, p)) if *start + *len == page && *p == prot => *len += PAGE_SIZE,
            _ => spans.push((page, PAGE_SIZE, prot)),
        }
    }
    spans
}

/// How the blocks of a process image set up as `setup` reach its call
/// tree (see [`FeedPlan`]).
pub(super) fn feed_plan(
    uc: &Unicorn<'static, ()>,
    setup: &BuilderSetup,
    options: &RunOptions,
    late_start: bool,
) -> FeedPlan {
    FeedPlan::decide(&RunFacts {
        several_cpus: tree_feed::several_cpus(),
        live_view: tree_feed::snapshots_while_waiting(setup),
        every_block_needed: tree_feed::every_block_needed(setup),
        simulates_caches: options.simulation.caches.is_some(),
        late_start,
        patched_engine: StackPointerSource::of_engine(uc.get_handle())
            == StackPointerSource::HookArgument,
        switches: options.feed_switches,
    })
}

/// Installs every hook on `uc` as `plan` says, sharing `state`; `code` is
/// the loaded code (scanned for Valgrind client requests).
pub(super) fn install_hooks(
    uc: &mut Unicorn<'static, ()>,
    state: &hooks::Shared,
    code: &CodeSnapshot,
    plan: FeedPlan,
) -> Result<(), EmuError> {
    let err = |e| EmuError::unicorn("installing hooks", e);
    super::client_request_hook::install(uc, state, code).map_err(err)?;
    // (Each through `contain_panic`: see there.)
    let s = Rc::clone(state);
    uc.add_insn_sys_hook(X86Insn::SYSCALL, 1, 0, move |uc| {
        let handle = uc.get_handle();
        stop::contain_panic(handle, (), || hooks::on_syscall(uc, &s));
    })
    .map_err(err)?;
    let s = Rc::clone(state);
    uc.add_intr_hook(move |uc, intno| {
        let handle = uc.get_handle();
        stop::contain_panic(handle, (), || hooks::on_interrupt(uc, &s, intno));
    })
    .map_err(err)?;
    let s = Rc::clone(state);
    uc.add_insn_invalid_hook(move |uc| {
        let handle = uc.get_handle();
        stop::contain_panic(handle, false, || hooks::on_invalid_instruction(uc, &s))
    })
    .map_err(err)?;
    // The block hook runs for every block and rdtsc/rdtscp need to return
    // "skip", so these three use the raw API. The state outlives `uc` (it is
    // dropped after `uc`).
    let user_data = Rc::as_ptr(state) as *mut c_void;
    let block_callback = match plan.stack_pointer {
        StackPointerPath::HookArgument => block_hook::on_block as *mut c_void,
        StackPointerPath::RegisterApi => block_hook::on_block_stock as *mut c_void,
    };
    let mut hook = std::ptr::null_mut::<c_void>() as unicorn_engine::uc_hook;
    // SAFETY: a valid engine handle, a callback with the block-hook signature
    // this Unicorn build calls (five arguments where the engine says so),
    // and user data that outlives the engine. begin > end means "everywhere".
    let rc = unsafe {
        unicorn_engine::uc_hook_add(
            uc.get_handle(),
            &raw mut hook,
            HookType::BLOCK.0 as i32,
            block_callback,
            user_data,
            1u64,
            0u64,
        )
    };
    if rc != unicorn_engine::uc_error::OK {
        return Err(err(rc));
    }
    let cursor = state.borrow().feed.trace_cursor();
    // The cache simulation's data accesses go into the batches the blocks
    // fill: the engine records them itself where the plan says (see
    // `memory_hook`), else memory hooks feed them (installed below).
    let memory_inline = plan.memory_accesses == MemoryAccesses::RecordedInline
        // SAFETY: a live engine; the cursor belongs to the state's feed,
        // and the state outlives the engine.
        && unsafe { super::memory_hook::record_inline(uc.get_handle(), cursor, user_data) };
    if memory_inline {
        let records = super::memory_hook::RECORDS_PER_BLOCK as usize;
        state.borrow_mut().feed.record_memory_inline(records);
    }
    let memory_hooked = plan.memory_accesses != MemoryAccesses::NotSimulated && !memory_inline;
    // Memory hooks feed accesses between the block events, which an inline
    // trace would write around.
    if plan.blocks != BlockPath::HookEveryBlock && !memory_hooked {
        // SAFETY: a live engine with the block hook just installed; the
        // cursor belongs to the state's feed, and the state outlives the
        // engine.
        let taken = unsafe { block_trace::install(uc.get_handle(), cursor, Rc::as_ptr(state)) };
        let mut st = state.borrow_mut();
        if taken {
            st.feed.engine_writes_events();
            match plan.blocks {
                BlockPath::CountUntilStart => st.feed.count_inline(),
                BlockPath::EventsOnly => st.feed.send_events_only(),
                BlockPath::RecordInline | BlockPath::HookEveryBlock => {}
            }
        }
    }
    // An engine that refused the trace leaves every block to the hook; an
    // adaptive builder then works on its own thread.
    state.borrow_mut().feed.settle_placement();
    if memory_hooked {
        super::memory_hook::install_hooks(uc, user_data)?;
    }
    for (insn, callback) in [
        (
            X86Insn::RDTSC,
            hooks::on_rdtsc as unsafe extern "C" fn(_, _) -> i32,
        ),
        (
            X86Insn::RDTSCP,
            hooks::on_rdtscp as unsafe extern "C" fn(_, _) -> i32,
        ),
        (
            X86Insn::CPUID,
            hooks::on_cpuid as unsafe extern "C" fn(_, _) -> i32,
        ),
    ] {
        let mut hook = std::ptr::null_mut::<c_void>() as unicorn_engine::uc_hook;
        // SAFETY: a valid engine handle, a callback with the signature Unicorn
        // expects for rdtsc/cpuid hooks, and user data that outlives the engine.
        let rc = unsafe {
            unicorn_engine::uc_hook_add(
                uc.get_handle(),
                &raw mut hook,
                HookType::INSN.0 as i32,
                callback as *mut c_void,
                user_data,
                1,
                0,
                insn,
            )
        };
        if rc != unicorn_engine::uc_error::OK {
            return Err(err(rc));
        }
    }
    Ok(())
}
