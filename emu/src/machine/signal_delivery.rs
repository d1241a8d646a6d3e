//! Delivering a signal to a guest handler and returning from it, as the
//! x86-64 Linux kernel does: an `rt_sigframe` (return address, `ucontext`,
//! `siginfo`) on the guest stack, the handler called with `(sig, &info, &uc)`,
//! and `rt_sigreturn` restoring the interrupted registers and mask.
//!
//! The guest frame is laid out as Linux lays it: below the red zone (or at
//! the top of the alternate stack) the floating-point area
//! (`signal_fpstate`), 64-byte aligned, then the `rt_sigframe` with its
//! return address at 8 modulo 16. It holds the general registers, the mask
//! and, through `uc_mcontext.fpregs`, the x87/SSE/AVX state; a handler may
//! change any of them and `rt_sigreturn` takes them from the frame. The
//! rest of the CPU (segments, control registers) is kept on emuprof's side
//! with Unicorn's context save/restore.

use unicorn_engine::{RegisterX86, Unicorn};

use super::signal_fpstate::FpFrame;
use super::state::MachineState;
use crate::memory::GuestView;
use crate::syscalls::signals::{SigAction, SA_ONSTACK};
use crate::syscalls::{Errno, GuestMemory, SysResult};

/// The general registers in `struct sigcontext` order (before eflags).
const GREGS: [RegisterX86; 17] = [
    RegisterX86::R8,
    RegisterX86::R9,
    RegisterX86::R10,
    RegisterX86::R11,
    RegisterX86::R12,
    RegisterX86::R13,
    RegisterX86::R14,
    RegisterX86::R15,
    RegisterX86::RDI,
    RegisterX86::RSI,
    RegisterX86::RBP,
    RegisterX86::RBX,
    RegisterX86::RDX,
    RegisterX86::RAX,
    RegisterX86::RCX,
    RegisterX86::RSP,
    RegisterX86::RIP,
];
/// Offset of `uc_mcontext` in `struct ucontext`.
const MCONTEXT: u64 = 40;
/// Offset of `uc_sigmask` in `struct ucontext`.
const SIGMASK: u64 = MCONTEXT + 256;
/// Offset of the `fpstate` pointer in `uc_mcontext`.
const FPSTATE: u64 = MCONTEXT + 8 * 23;
/// Size of the kernel's `struct ucontext` (mask included).
const UCONTEXT_SIZE: u64 = 304;
/// `uc_flags`: `UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS`, and
/// `UC_FP_XSTATE` when the area is in XSAVE format.
const UC_SIGCONTEXT_SS: u64 = 2 | 4;
const UC_FP_XSTATE: u64 = 1;
/// `cs` and `ss` of 64-bit user mode, as `uc_mcontext` holds them.
const SEGMENTS: u64 = 0x33 | 0x2b << 48;
/// Size of `siginfo_t`.
const SIGINFO_SIZE: u64 = 128;
/// The x86-64 red zone below the stack pointer that a frame must skip.
const RED_ZONE: u64 = 128;

/// What the handler's `siginfo_t` says.
#[derive(Debug, Clone, Copy)]
pub struct SigInfo {
    /// `si_code` (`SI_TKILL` = -6 for `tgkill`/`raise`, 1 for a fault).
    pub code: i32,
    /// `si_addr` for faults, or `si_pid` (low 32 bits) for `kill`.
    pub value: u64,
}

/// Starts `action`'s handler for `sig`. `resume_pc` is where the
/// interrupted code continues after `rt_sigreturn`; `pc_bias` is subtracted
/// from the handler address written to RIP (2 inside the syscall hook, which
/// Unicorn advances past the `syscall` instruction afterwards).
pub fn deliver(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    sig: u64,
    action: SigAction,
    info: SigInfo,
    resume_pc: u64,
    pc_bias: u64,
) -> Result<(), Errno> {
    let mut saved = uc.context_alloc().map_err(|_| Errno::ENOMEM)?;
    uc.context_save(&mut saved).map_err(|_| Errno::ENOMEM)?;

    let mut gregs = [0u64; 17];
    for (v, r) in gregs.iter_mut().zip(GREGS) {
        *v = uc.reg_read(r).unwrap_or(0);
    }
    gregs[16] = resume_pc;
    let eflags = uc.reg_read(RegisterX86::EFLAGS).unwrap_or(0x202);
    let rsp = gregs[15];

    let (alt_sp, alt_enabled, alt_size) = st.sys.signals.alt_stack();
    let on_alt = alt_enabled && rsp > alt_sp && rsp <= alt_sp + alt_size;
    let top = if action.flags & SA_ONSTACK != 0 && alt_enabled && !on_alt {
        alt_sp + alt_size
    } else {
        rsp - RED_ZONE
    };
    let fp_frame = FpFrame::at(st.options.cpu);
    let fp_addr = (top - fp_frame.frame_size()) & !63;
    // The return address; rsp ≡ 8 (mod 16) at entry.
    let frame = ((fp_addr - 8 - UCONTEXT_SIZE - SIGINFO_SIZE) & !15) - 8;
    let uc_addr = frame + 8;
    let info_addr = uc_addr + UCONTEXT_SIZE;
    let fp_area = fp_frame.save(uc);

    let old_mask = st.sys.signals.begin_handler(sig, &action);
    let mut ucontext = vec![0u8; UCONTEXT_SIZE as usize];
    let put = |buf: &mut [u8], at: u64, v: u64| {
        buf[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes())
    };
    let fp_flag = if fp_area.len() > 512 { UC_FP_XSTATE } else { 0 };
    put(&mut ucontext, 0, UC_SIGCONTEXT_SS | fp_flag);
    put(&mut ucontext, 16, alt_sp);
    put(&mut ucontext, 24, if alt_enabled { 0 } else { 2 });
    put(&mut ucontext, 32, alt_size);
    for (i, v) in gregs.iter().enumerate() {
        put(&mut ucontext, MCONTEXT + 8 * i as u64, *v);
    }
    put(&mut ucontext, MCONTEXT + 8 * 17, eflags);
    put(&mut ucontext, MCONTEXT + 8 * 18, SEGMENTS);
    put(&mut ucontext, MCONTEXT + 8 * 21, old_mask); // oldmask
    put(&mut ucontext, FPSTATE, fp_addr);
    put(&mut ucontext, SIGMASK, old_mask);
    let mut siginfo = vec![0u8; SIGINFO_SIZE as usize];
    siginfo[..4].copy_from_slice(&(sig as i32).to_le_bytes());
    siginfo[8..12].copy_from_slice(&info.code.to_le_bytes());
    put(&mut siginfo, 16, info.value);

    let mut view = GuestView {
        uc,
        space: &st.space,
    };
    view.write(fp_addr, &fp_area)?;
    view.write(info_addr, &siginfo)?;
    view.write(uc_addr, &ucontext)?;
    view.write_u64(frame, action.restorer)?;

    st.signal_contexts.push(saved);
    if !st.feed.fast_forwarding() {
        st.feed.signal_handler();
    }
    let set = |uc: &mut Unicorn<'_, ()>, r, v| uc.reg_write(r, v).map_err(|_| Errno::EFAULT);
    set(uc, RegisterX86::RDI, sig)?;
    set(uc, RegisterX86::RSI, info_addr)?;
    set(uc, RegisterX86::RDX, uc_addr)?;
    set(uc, RegisterX86::RAX, 0)?;
    set(uc, RegisterX86::RSP, frame)?;
    set(uc, RegisterX86::RIP, action.handler.wrapping_sub(pc_bias))?;
    fp_frame.reset(uc);
    Ok(())
}

/// `rt_sigreturn`: restores what the handler interrupted (general and
/// floating-point registers from the guest's frame, which the handler may
/// have changed, the rest from the saved context) and the blocked mask. Returns the restored `rax`, which the
/// syscall dispatcher writes back. `pc_bias` as for [`deliver`].
pub fn sigreturn(uc: &mut Unicorn<'_, ()>, st: &mut MachineState, pc_bias: u64) -> SysResult {
    let uc_addr = uc.reg_read(RegisterX86::RSP).map_err(|_| Errno::EFAULT)?;
    let mut ucontext = vec![0u8; UCONTEXT_SIZE as usize];
    GuestView {
        uc,
        space: &st.space,
    }
    .read(uc_addr, &mut ucontext)?;
    let get = |at: u64| {
        u64::from_le_bytes(
            ucontext[at as usize..at as usize + 8]
                .try_into()
                .unwrap_or([0; 8]),
        )
    };
    let fp_addr = get(FPSTATE);
    let fp_frame = FpFrame::at(st.options.cpu);
    let fp_area = if fp_addr == 0 {
        None
    } else {
        let view = GuestView {
            uc,
            space: &st.space,
        };
        let mut area = vec![0u8; 512];
        view.read(fp_addr, &mut area)?;
        area.resize(fp_frame.bytes_to_read(&area), 0);
        view.read(fp_addr, &mut area)?;
        Some(area)
    };
    if let Some(saved) = st.signal_contexts.pop() {
        uc.context_restore(&saved).map_err(|_| Errno::EFAULT)?;
    }
    fp_frame.restore(uc, fp_area.as_deref());
    for (i, r) in GREGS.into_iter().enumerate() {
        let mut v = get(MCONTEXT + 8 * i as u64);
        if r == RegisterX86::RIP {
            v = v.wrapping_sub(pc_bias);
        }
        uc.reg_write(r, v).map_err(|_| Errno::EFAULT)?;
    }
    // Only the flags a program may change (arithmetic, direction, trap).
    let flags = uc.reg_read(RegisterX86::EFLAGS).unwrap_or(0x202);
    let user = get(MCONTEXT + 8 * 17) & 0x0dd5;
    uc.reg_write(RegisterX86::EFLAGS, (flags & !0x0dd5) | user)
        .map_err(|_| Errno::EFAULT)?;
    st.sys.signals.set_mask(get(SIGMASK));
    Ok(get(MCONTEXT + 8 * 13))
}
