//! The files through which Linux describes the machine, served from emuprof's
//! fixed model instead of the host's: the CPU count in
//! `/sys/devices/system/cpu/{online,possible,present}` (what glibc's
//! `sysconf(_SC_NPROCESSORS_ONLN)` reads), `/proc/cpuinfo` and
//! `/proc/meminfo`. The CPU count is the run's (`--cpus`, default
//! [`crate::cpu::DEFAULT_CPUS`]); the memory sizes are the ones `sysinfo`
//! reports.

/// Total memory of the emulated machine (`sysinfo`, `/proc/meminfo`).
pub const TOTAL_RAM: u64 = 8 << 30;
/// Free memory of the emulated machine (`sysinfo`, `/proc/meminfo`).
pub const FREE_RAM: u64 = 6 << 30;

/// The contents of `path` when it is one of the machine-description files
/// emuprof serves for a machine of `cpus` CPUs at `level`, else `None`.
pub fn content(path: &[u8], cpus: u32, level: crate::cpu::CpuLevel) -> Option<Vec<u8>> {
    let text = match path {
        b"/sys/devices/system/cpu/online"
        | b"/sys/devices/system/cpu/possible"
        | b"/sys/devices/system/cpu/present" => cpu_list(cpus),
        b"/proc/cpuinfo" => cpuinfo(cpus, level),
        b"/proc/meminfo" => meminfo(),
        _ => return None,
    };
    Some(text.into_bytes())
}

/// `0` for one CPU, `0-N` for more (the kernel's cpulist format).
fn cpu_list(cpus: u32) -> String {
    match cpus {
        0 | 1 => "0\n".to_string(),
        n => format!("0-{}\n", n - 1),
    }
}

/// One block per CPU, as the kernel prints it for the emulated Haswell
/// (CPUID family 6, model 60, stepping 4; the flags are the CPUID bits the
/// guest sees at `level`).
fn cpuinfo(cpus: u32, level: crate::cpu::CpuLevel) -> String {
    let flags = level.cpuinfo_flags();
    (0..cpus)
        .map(|cpu| {
            format!(
                "processor\t: {cpu}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 60\n\
                 model name\t: Intel Core Processor (Haswell)\nstepping\t: 4\n\
                 cpu MHz\t\t: 1000.000\ncache size\t: 16384 KB\nphysical id\t: 0\n\
                 siblings\t: {cpus}\ncore id\t\t: {cpu}\ncpu cores\t: {cpus}\n\
                 apicid\t\t: {cpu}\nfpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: 13\n\
                 wp\t\t: yes\nflags\t\t: {flags}\nclflush size\t: 64\ncache_alignment\t: 64\n\
                 address sizes\t: 40 bits physical, 48 bits virtual\n\n"
            )
        })
        .collect()
}

/// The memory lines programs read (sizes in kB).
fn meminfo() -> String {
    let kb = |bytes: u64| bytes >> 10;
    format!(
        "MemTotal:       {:>8} kB\nMemFree:        {:>8} kB\nMemAvailable:   {:>8} kB\n\
         Buffers:        {:>8} kB\nCached:         {:>8} kB\nSwapTotal:      {:>8} kB\n\
         SwapFree:       {:>8} kB\n",
        kb(TOTAL_RAM),
        kb(FREE_RAM),
        kb(FREE_RAM),
        0,
        0,
        0,
        0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_files_and_cpuinfo_describe_the_same_cpus() {
        let online = |cpus| {
            content(b"/sys/devices/system/cpu/online", cpus, Default::default()).expect("served")
        };
        assert_eq!(online(1), b"0\n");
        assert_eq!(online(4), b"0-3\n");
        let cpuinfo =
            String::from_utf8(content(b"/proc/cpuinfo", 3, Default::default()).expect("served"))
                .expect("text");
        assert_eq!(cpuinfo.matches("processor\t:").count(), 3);
        assert!(
            !cpuinfo.contains("rdrand"),
            "the guest's CPUID has no RDRAND"
        );
        let meminfo =
            String::from_utf8(content(b"/proc/meminfo", 1, Default::default()).expect("served"))
                .expect("text");
        assert!(
            meminfo.starts_with("MemTotal:        8388608 kB\n"),
            "{meminfo}"
        );
        assert_eq!(content(b"/proc/version", 1, Default::default()), None);
    }
}
