//! Names for the stubs in a binary's `.plt`/`.iplt`/`.plt.sec`/`.plt.got`.
//!
//! A static glibc binary calls its IFUNC'd functions (`memcpy`, `strlen`…)
//! through stubs of one indirect jump each, `jmp *slot(%rip)`, whose GOT slot
//! an `R_X86_64_IRELATIVE` relocation fills with what the resolver at the
//! relocation's addend picks. The stubs have no symbols, so without these
//! names they fall inside the preceding hand-written `_init`.
//!
//! Each stub becomes a function of its own named `<name>@plt`, where `<name>`
//! is the IFUNC symbol whose resolver the relocation names (`memcpy@plt`;
//! several aliases: the shortest, then bytewise first), else the function at
//! the resolver's address, else (a stripped binary) objdump's own form
//! `*ABS*+0x<resolver>@plt`. A stub covers its jump and the padding
//! up to the next stub. The call into the stub is a call of `memcpy@plt`; its
//! jump to the chosen implementation is a tail call, as for any function.
//!
//! In a dynamically linked object the stubs jump through slots that
//! `R_X86_64_JUMP_SLOT` (or, in `.plt.got`, `R_X86_64_GLOB_DAT`) relocations
//! fill with a symbol's address: the stub is `<symbol>@plt`, as objdump
//! names it. With lazy binding the stub also holds the `push`/`jmp` to the
//! resolver trampoline. (Callgrind charges stubs to their caller by default,
//! `--skip-plt=yes`; emuprof keeps them as functions.)

use goblin::elf::reloc::{R_X86_64_GLOB_DAT, R_X86_64_IRELATIVE, R_X86_64_JUMP_SLOT};
use goblin::elf::sym::STT_GNU_IFUNC;
use goblin::elf::Elf;

use crate::symbols::FunctionSymbol;

/// Section names that hold PLT stubs.
const PLT_SECTIONS: [&str; 4] = [".plt", ".iplt", ".plt.sec", ".plt.got"];

/// One function per PLT stub, addresses biased by `bias`. `functions` are the
/// symbols already known (sorted by address), to name the resolvers.
pub(crate) fn stubs(
    elf: &Elf<'_>,
    bytes: &[u8],
    bias: u64,
    functions: &[FunctionSymbol],
) -> Vec<FunctionSymbol> {
    // A static binary has no dynamic section: its IRELATIVE relocations are
    // found through the section headers (`.rela.plt`/`.rela.iplt`).
    let resolvers: Vec<(u64, u64)> = elf
        .pltrelocs
        .iter()
        .chain(elf.dynrelas.iter())
        .chain(
            elf.shdr_relocs
                .iter()
                .flat_map(|(_, section)| section.iter()),
        )
        .filter(|r| r.r_type == R_X86_64_IRELATIVE)
        .filter_map(|r| Some((r.r_offset, u64::try_from(r.r_addend?).ok()?)))
        .collect();
    // A dynamic object's slots, filled with a symbol's address at load time.
    let symbol_slots: Vec<(u64, &str)> = elf
        .pltrelocs
        .iter()
        .chain(elf.dynrelas.iter())
        .filter(|r| r.r_type == R_X86_64_JUMP_SLOT || r.r_type == R_X86_64_GLOB_DAT)
        .filter_map(|r| {
            let sym = elf.dynsyms.get(r.r_sym)?;
            let name = elf
                .dynstrtab
                .get_at(sym.st_name)
                .filter(|n| !n.is_empty())?;
            Some((r.r_offset, name))
        })
        .collect();
    let mut found = Vec::new();
    for section in &elf.section_headers {
        let name = elf.shdr_strtab.get_at(section.sh_name).unwrap_or("");
        let no_bytes = section.sh_type == goblin::elf::section_header::SHT_NOBITS;
        if !PLT_SECTIONS.contains(&name) || !section.is_executable() || no_bytes {
            continue;
        }
        let Some(code) = usize::try_from(section.sh_offset)
            .ok()
            .and_then(|start| bytes.get(start..start.checked_add(section.sh_size as usize)?))
        else {
            continue;
        };
        let jumps = indirect_jumps(code, section.sh_addr);
        for (i, &(start, slot)) in jumps.iter().enumerate() {
            let end = jumps
                .get(i + 1)
                .map_or(section.sh_addr + section.sh_size, |next| next.0);
            let target = if let Some(&(_, resolver)) =
                resolvers.iter().find(|(offset, _)| *offset == slot)
            {
                ifunc_name(elf, resolver)
                    .or_else(|| {
                        let i = functions
                            .binary_search_by_key(&(resolver + bias), |f| f.address)
                            .ok()?;
                        Some(functions[i].name.clone())
                    })
                    .unwrap_or_else(|| format!("*ABS*+{resolver:#x}"))
            } else if let Some(&(_, symbol)) =
                symbol_slots.iter().find(|(offset, _)| *offset == slot)
            {
                crate::demangle(symbol)
            } else {
                continue;
            };
            let name = format!("{target}@plt");
            found.push(FunctionSymbol {
                address: start + bias,
                size: end.saturating_sub(start).max(1),
                raw_name: name.clone(),
                name,
            });
        }
    }
    found
}

/// The name of the `STT_GNU_IFUNC` symbol whose resolver is at `resolver`
/// (unbiased): the shortest, then bytewise first, as for aliases.
fn ifunc_name(elf: &Elf<'_>, resolver: u64) -> Option<String> {
    let (table, strings) = if elf.syms.is_empty() {
        (&elf.dynsyms, &elf.dynstrtab)
    } else {
        (&elf.syms, &elf.strtab)
    };
    table
        .iter()
        .filter(|sym| sym.st_type() == STT_GNU_IFUNC && sym.st_value == resolver)
        .filter_map(|sym| strings.get_at(sym.st_name).filter(|n| !n.is_empty()))
        .min_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)))
        .map(str::to_string)
}

/// Every stub in `code` (loaded at `address`): its start (an optional
/// `endbr64`, an optional `bnd` prefix, then `jmp *disp32(%rip)`) and the
/// address of the GOT slot it jumps through.
fn indirect_jumps(code: &[u8], address: u64) -> Vec<(u64, u64)> {
    const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
    let mut stubs = Vec::new();
    let mut at = 0;
    while at + 6 <= code.len() {
        let mut p = at;
        if code[p..].starts_with(&ENDBR64) {
            p += 4;
        }
        if code.get(p) == Some(&0xf2) {
            p += 1; // bnd
        }
        match code.get(p..p + 6) {
            Some([0xff, 0x25, d0, d1, d2, d3]) => {
                let disp = i32::from_le_bytes([*d0, *d1, *d2, *d3]);
                let next = address + (p + 6) as u64;
                stubs.push((
                    address + at as u64,
                    next.wrapping_add_signed(i64::from(disp)),
                ));
                at = p + 6;
            }
            _ => at += 1,
        }
    }
    stubs
}
