//! The process's initial stack as the Linux kernel builds it: argc, argv,
//! envp, the auxiliary vector, and the strings they point to.
//!
//! Everything here is a pure function of its inputs, so the stack (and with it
//! every count that depends on string lengths or alignment) is the same on
//! every run and host.

/// Values the auxiliary vector reports about the program and the machine.
#[derive(Debug, Clone)]
pub struct AuxInfo {
    /// Guest address of the program headers (`AT_PHDR`).
    pub phdr: u64,
    /// Size of one program header (`AT_PHENT`).
    pub phent: u64,
    /// Number of program headers (`AT_PHNUM`).
    pub phnum: u64,
    /// Where the dynamic linker was loaded (`AT_BASE`; 0 for a static
    /// program).
    pub base: u64,
    /// Program entry point (`AT_ENTRY`).
    pub entry: u64,
    /// The 16 bytes `AT_RANDOM` points to (seeded, not random).
    pub random: [u8; 16],
    /// `AT_EXECFN`: the path the program was started as.
    pub execfn: String,
}

/// Fixed identity the guest sees (`AT_UID`… and `getuid`…).
pub const GUEST_UID: u64 = 1000;
/// Fixed group id the guest sees.
pub const GUEST_GID: u64 = 1000;
/// `AT_HWCAP`: CPUID.1:EDX of the fixed CPU model.
pub const HWCAP: u64 = 0x178b_fbff;
/// `AT_CLKTCK`.
pub const CLOCK_TICKS: u64 = 100;

/// `AT_MINSIGSTKSZ`: smallest signal stack, as x86-64 Linux reports it.
pub const MIN_SIGNAL_STACK: u64 = 2048;

const AT_NULL: u64 = 0;
const AT_IGNORE: u64 = 1;
const AT_MINSIGSTKSZ: u64 = 51;
const AT_PHDR: u64 = 3;
const AT_PHENT: u64 = 4;
const AT_PHNUM: u64 = 5;
const AT_PAGESZ: u64 = 6;
const AT_BASE: u64 = 7;
const AT_FLAGS: u64 = 8;
const AT_ENTRY: u64 = 9;
const AT_UID: u64 = 11;
const AT_EUID: u64 = 12;
const AT_GID: u64 = 13;
const AT_EGID: u64 = 14;
const AT_PLATFORM: u64 = 15;
const AT_HWCAP: u64 = 16;
const AT_CLKTCK: u64 = 17;
const AT_SECURE: u64 = 23;
const AT_RANDOM: u64 = 25;
const AT_HWCAP2: u64 = 26;
const AT_EXECFN: u64 = 31;

/// The bytes to place just below `top`, and the initial stack pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialStack {
    /// Lowest address of `bytes`; equal to the initial `rsp`.
    pub sp: u64,
    /// Stack contents from `sp` up to `top`.
    pub bytes: Vec<u8>,
}

/// Lays out the initial stack ending at `top` (exclusive).
pub fn build(top: u64, args: &[String], env: &[String], aux: &AuxInfo) -> InitialStack {
    // Strings first, from the top down, like the kernel.
    let mut strings: Vec<u8> = Vec::new();
    let place = |s: &[u8], strings: &mut Vec<u8>| -> u64 {
        let mut v = s.to_vec();
        v.push(0);
        v.extend_from_slice(strings);
        *strings = v;
        top - 8 - strings.len() as u64
    };
    let execfn = place(aux.execfn.as_bytes(), &mut strings);
    let env_ptrs: Vec<u64> = env
        .iter()
        .rev()
        .map(|e| place(e.as_bytes(), &mut strings))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let arg_ptrs: Vec<u64> = args
        .iter()
        .rev()
        .map(|a| place(a.as_bytes(), &mut strings))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let platform = place(b"x86_64", &mut strings);
    let mut random_at = top - 8 - strings.len() as u64 - 16;
    random_at &= !0xf;

    // The order and length of Linux 6.x's vector (22 entries before AT_NULL),
    // so startup code that walks it does the same work as on a real kernel.
    // There is no vDSO and no rseq: those entries are AT_IGNORE.
    let auxv: Vec<(u64, u64)> = vec![
        (AT_IGNORE, 0), // AT_SYSINFO_EHDR: no vDSO, time goes through syscalls
        (AT_MINSIGSTKSZ, MIN_SIGNAL_STACK),
        (AT_HWCAP, HWCAP),
        (AT_PAGESZ, 4096),
        (AT_CLKTCK, CLOCK_TICKS),
        (AT_PHDR, aux.phdr),
        (AT_PHENT, aux.phent),
        (AT_PHNUM, aux.phnum),
        (AT_BASE, aux.base),
        (AT_FLAGS, 0),
        (AT_ENTRY, aux.entry),
        (AT_UID, GUEST_UID),
        (AT_EUID, GUEST_UID),
        (AT_GID, GUEST_GID),
        (AT_EGID, GUEST_GID),
        (AT_SECURE, 0),
        (AT_RANDOM, random_at),
        (AT_HWCAP2, 0),
        (AT_EXECFN, execfn),
        (AT_PLATFORM, platform),
        (AT_IGNORE, 0), // AT_RSEQ_FEATURE_SIZE: rseq is not emulated
        (AT_IGNORE, 0), // AT_RSEQ_ALIGN
        (AT_NULL, 0),
    ];
    let words = 1 + arg_ptrs.len() + 1 + env_ptrs.len() + 1 + auxv.len() * 2;
    let mut sp = random_at - (words as u64) * 8;
    sp &= !0xf; // rsp is 16-byte aligned at the entry point

    let mut table: Vec<u64> = Vec::with_capacity(words);
    table.push(args.len() as u64);
    table.extend(&arg_ptrs);
    table.push(0);
    table.extend(&env_ptrs);
    table.push(0);
    for (k, v) in auxv {
        table.push(k);
        table.push(v);
    }

    let mut bytes = vec![0u8; (top - sp) as usize];
    let at = |addr: u64| (addr - sp) as usize;
    for (i, w) in table.iter().enumerate() {
        let o = at(sp) + i * 8;
        bytes[o..o + 8].copy_from_slice(&w.to_le_bytes());
    }
    let r = at(random_at);
    bytes[r..r + 16].copy_from_slice(&aux.random);
    let s = at(top - 8 - strings.len() as u64);
    bytes[s..s + strings.len()].copy_from_slice(&strings);
    InitialStack { sp, bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(st: &InitialStack, addr: u64) -> u64 {
        let o = (addr - st.sp) as usize;
        u64::from_le_bytes(st.bytes[o..o + 8].try_into().unwrap())
    }

    fn cstr(st: &InitialStack, addr: u64) -> String {
        let o = (addr - st.sp) as usize;
        let end = st.bytes[o..].iter().position(|&b| b == 0).unwrap();
        String::from_utf8(st.bytes[o..o + end].to_vec()).unwrap()
    }

    #[test]
    fn argv_envp_and_auxv_are_where_the_abi_puts_them() {
        let aux = AuxInfo {
            phdr: 0x400040,
            phent: 56,
            phnum: 9,
            base: 0,
            entry: 0x401000,
            random: [7; 16],
            execfn: "./prog".into(),
        };
        let args = vec!["./prog".to_string(), "hello".to_string()];
        let env = vec!["A=1".to_string()];
        let top = 0x7fff_ffff_f000;
        let st = build(top, &args, &env, &aux);
        assert_eq!(st.sp % 16, 0);
        assert_eq!(st.sp + st.bytes.len() as u64, top);
        assert_eq!(word(&st, st.sp), 2);
        assert_eq!(cstr(&st, word(&st, st.sp + 8)), "./prog");
        assert_eq!(cstr(&st, word(&st, st.sp + 16)), "hello");
        assert_eq!(word(&st, st.sp + 24), 0);
        assert_eq!(cstr(&st, word(&st, st.sp + 32)), "A=1");
        assert_eq!(word(&st, st.sp + 40), 0);
        let mut at = st.sp + 48;
        let mut found = std::collections::HashMap::new();
        loop {
            let (k, v) = (word(&st, at), word(&st, at + 8));
            if k == AT_NULL {
                break;
            }
            found.insert(k, v);
            at += 16;
        }
        assert_eq!(found[&AT_ENTRY], 0x401000);
        assert_eq!(found[&AT_PAGESZ], 4096);
        let r = (found[&AT_RANDOM] - st.sp) as usize;
        assert_eq!(&st.bytes[r..r + 16], &[7; 16]);
        assert_eq!(cstr(&st, found[&AT_PLATFORM]), "x86_64");
        assert_eq!(cstr(&st, found[&AT_EXECFN]), "./prog");
    }
}
