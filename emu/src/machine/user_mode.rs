//! Starting the guest the way Linux starts a new program: at CPL 3, with the
//! register, flag, segment and x87/SSE state the kernel's `start_thread`
//! leaves.
//!
//! Unicorn starts the CPU at CPL 0, where `cli`, `hlt`, `wrmsr`, moves to
//! control registers and `in`/`out` simply run (one of them lets a guest
//! clear CR0.WP and write over its own code). A real program gets `SIGSEGV`
//! for each. So before the program's first instruction emuprof runs a single
//! `iretq` from a supervisor-only trampoline page, with a Linux-shaped GDT
//! (user data `0x2b`, 64-bit user code `0x33`): the CPU then runs the guest at
//! CPL 3, with `cs = 0x33`, `ss = 0x2b` and `rflags = 0x202`, exactly as a
//! native process sees them. The trampoline runs before any hook is installed
//! and is never counted; the GDT and trampoline pages live in the kernel half
//! of the address space, outside everything the guest can map or address.
//!
//! The floating-point state is `fninit`'s and Linux's ([`cpu::reset_fpu`]).

use unicorn_engine::{uc_error, RegisterX86, Unicorn};

use crate::memory::AddressSpace;
use crate::{cpu, EmuError};

/// Linux's `__USER_DS` selector (GDT entry 5, RPL 3).
pub const USER_DS: u64 = 0x2b;
/// Linux's `__USER_CS` selector (GDT entry 6, 64-bit code, RPL 3).
pub const USER_CS: u64 = 0x33;
/// `rflags` of a new program: IF and the always-one bit 1.
pub const INITIAL_RFLAGS: u64 = 0x202;

/// Where emuprof's supervisor pages start: the GDT, then the trampoline
/// (`iretq`), then the trampoline's stack. Canonical, in the kernel half.
const SUPERVISOR_BASE: u64 = 0xffff_ffff_8000_0000;
const GDT: u64 = SUPERVISOR_BASE;
const TRAMPOLINE: u64 = SUPERVISOR_BASE + 0x1000;
const TRAMPOLINE_STACK_TOP: u64 = SUPERVISOR_BASE + 0x3000;

/// Flat 32-bit data segment, DPL 3, present, writable (Linux `__USER_DS`).
const USER_DATA_DESCRIPTOR: u64 = 0x00cf_f300_0000_ffff;
/// 64-bit code segment, DPL 3, present (Linux `__USER_CS`).
const USER_CODE_DESCRIPTOR: u64 = 0x00af_fb00_0000_ffff;
/// `iretq`.
const IRETQ: [u8; 2] = [0x48, 0xcf];
/// The guest page size.
const PAGE_SIZE: u64 = 0x1000;

/// Puts the CPU in the state a new Linux program starts in and moves it to
/// CPL 3 at `entry` with stack pointer `sp`. Every general register other
/// than `rsp` is zero. Must run before any hook is installed.
pub fn enter(
    uc: &mut Unicorn<'_, ()>,
    space: &mut AddressSpace,
    entry: u64,
    sp: u64,
) -> Result<(), EmuError> {
    let err = |doing| move |e| EmuError::unicorn(doing, e);
    let mut gdt = [0u8; 7 * 8];
    gdt[5 * 8..6 * 8].copy_from_slice(&USER_DATA_DESCRIPTOR.to_le_bytes());
    gdt[6 * 8..7 * 8].copy_from_slice(&USER_CODE_DESCRIPTOR.to_le_bytes());
    space.map_supervisor(uc, GDT, &gdt, false)?;
    space.map_supervisor(uc, TRAMPOLINE, &IRETQ, true)?;
    // The iretq frame: rip, cs, rflags, rsp, ss.
    let frame = [entry, USER_CS, INITIAL_RFLAGS, sp, USER_DS];
    let mut stack = vec![0u8; 0x1000];
    let frame_offset = stack.len() - frame.len() * 8;
    for (i, value) in frame.iter().enumerate() {
        let at = frame_offset + i * 8;
        stack[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
    space.map_supervisor(uc, TRAMPOLINE_STACK_TOP - 0x1000, &stack, false)?;

    uc.reg_write_long(
        RegisterX86::GDTR,
        &descriptor_table(GDT, gdt.len() as u32 - 1),
    )
    .map_err(err("loading the GDT"))?;
    cpu::reset_fpu(uc).map_err(err("setting the initial x87 and SSE state"))?;
    uc.reg_write(
        RegisterX86::RSP,
        TRAMPOLINE_STACK_TOP - frame.len() as u64 * 8,
    )
    .map_err(err("setting the trampoline's stack"))?;
    // Only the iretq runs: Unicorn stops before the first instruction at
    // `entry`. (The count installs Unicorn's own counting hook; the next
    // start without a count removes it and drops every translation, so no
    // trace of this run remains, not even the stop at `entry`.)
    //
    // Unicorn stops at `entry` by translating an empty block there. Stock
    // Unicorn (without emuprof's patch fixes/03) looks up the page of that
    // block's "last byte", the byte before `entry`: for an entry at a page
    // start that page is not executable or not mapped, and the start fails
    // with UC_ERR_EXCEPTION after the iretq has run. The CPU is then where
    // it should be, which the check below tells apart from every other
    // failure.
    let entered = uc.emu_start(TRAMPOLINE, entry, 0, 1);
    if let Err(error) = entered {
        if error != uc_error::EXCEPTION || !entry.is_multiple_of(PAGE_SIZE) {
            return Err(EmuError::unicorn("entering user mode", error));
        }
    }
    let (rip, rsp) = (
        uc.reg_read(RegisterX86::RIP).map_err(err("reading rip"))?,
        uc.reg_read(RegisterX86::RSP).map_err(err("reading rsp"))?,
    );
    if let (Err(error), true) = (entered, (rip, rsp) != (entry, sp)) {
        return Err(EmuError::unicorn("entering user mode", error));
    }
    if (rip, rsp) != (entry, sp) {
        return Err(EmuError::Layout(format!(
            "entering user mode left rip {rip:#x} and rsp {rsp:#x} instead of {entry:#x} and {sp:#x}"
        )));
    }
    Ok(())
}

/// A `uc_x86_mmr` (selector, base, limit, flags) as Unicorn reads GDTR.
fn descriptor_table(base: u64, limit: u32) -> [u8; 24] {
    let mut raw = [0u8; 24];
    raw[8..16].copy_from_slice(&base.to_le_bytes());
    raw[16..20].copy_from_slice(&limit.to_le_bytes());
    raw
}
