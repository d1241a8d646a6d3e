//! `execve`: the process (same pid) drops its image and starts a new
//! program, which is profiled like the first one in a call tree of its own.
//!
//! The hook reads the path, `argv` and `envp`, finds and loads the program
//! (an x86-64 ELF file, static or dynamic, or a `#!` script whose
//! interpreter is one) and asks the run loop to replace the image. A program
//! that cannot be run gets the errno Linux gives (`ENOENT`, `EACCES`,
//! `ENOEXEC`…), plus one note naming it when it exists but is not a program
//! emuprof can run, so the guest reports the failure the way it would
//! natively.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use emuprof_loader::Binary;
use unicorn_engine::Unicorn;

use super::super::shared_objects::Placement;
use super::super::state::MachineState;
use super::super::syscall_dispatch::Answer;
use super::super::threads;
use super::ProcessRequest;
use crate::memory::GuestView;
use crate::syscalls::numbers::SYS_EXECVEAT;
use crate::syscalls::{Errno, GuestMemory};

/// `PATH_MAX`, with the NUL.
const PATH_MAX: usize = 4096;
/// Most bytes of arguments and environment strings together (Linux allows
/// a quarter of the stack limit).
const MAX_ARG_BYTES: usize = 2 << 20;
/// Most `#!` interpreters followed one after the other (Linux's limit).
const MAX_SCRIPT_DEPTH: usize = 4;
/// `AT_FDCWD`.
const AT_FDCWD: i32 = -100;

/// A new program for the process, ready to start.
pub struct ExecRequest {
    /// The loaded program.
    pub binary: Arc<Binary>,
    /// Its path as the guest gave it (after `#!` resolution, the
    /// interpreter's).
    pub program: String,
    /// Its `argv`.
    pub args: Vec<String>,
    /// Its environment.
    pub env: Vec<String>,
}

/// A program emuprof cannot load, to run on the host (`--exec-native`).
pub struct NativeExec {
    /// The host file.
    pub host_path: std::path::PathBuf,
    /// Its path as the guest gave it.
    pub program: String,
    /// Its `argv`.
    pub args: Vec<String>,
    /// Its environment.
    pub env: Vec<String>,
}

/// `execve`/`execveat`: loads the program and asks the run loop to start
/// it in place of the calling image. Does not return on success.
pub fn execve(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Answer {
    match read_and_load(uc, st, number, args) {
        Ok(request) => {
            st.request = Some(request);
            threads::request_switch(st);
            Answer::NoReturn
        }
        Err(e) => Answer::Returns(Err(e)),
    }
}

fn read_and_load(
    uc: &mut Unicorn<'_, ()>,
    st: &mut MachineState,
    number: u64,
    args: [u64; 6],
) -> Result<ProcessRequest, Errno> {
    let (path, argv, envp) = if number == SYS_EXECVEAT {
        // execveat(dirfd, path, argv, envp, flags)
        if args[0] as i32 != AT_FDCWD || args[4] != 0 {
            return Err(Errno::ENOSYS);
        }
        (args[1], args[2], args[3])
    } else {
        (args[0], args[1], args[2])
    };
    let view = GuestView {
        uc,
        space: &st.space,
    };
    if path == 0 {
        return Err(Errno::EFAULT);
    }
    let path = view.read_cstring(path, PATH_MAX)?;
    let mut budget = MAX_ARG_BYTES;
    let argv = read_strings(&view, argv, &mut budget)?;
    let env = read_strings(&view, envp, &mut budget)?;
    let loaded = load(st, path, argv, 0)?;
    st.sys.files.set_exe_path(&loaded.host_path);
    Ok(match loaded.binary {
        Some(binary) => ProcessRequest::Exec(ExecRequest {
            binary,
            program: loaded.program,
            args: loaded.args,
            env,
        }),
        None => ProcessRequest::ExecNative(NativeExec {
            host_path: loaded.host_path,
            program: loaded.program,
            args: loaded.args,
            env,
        }),
    })
}

/// A program found for `execve`.
struct Loaded {
    /// Loaded for emulation; `None`: to run natively (`--exec-native`).
    binary: Option<Arc<Binary>>,
    program: String,
    args: Vec<String>,
    host_path: std::path::PathBuf,
}

/// Reads a NULL-terminated array of string pointers.
fn read_strings(
    mem: &dyn GuestMemory,
    mut at: u64,
    budget: &mut usize,
) -> Result<Vec<String>, Errno> {
    let mut out = Vec::new();
    if at == 0 {
        return Ok(out);
    }
    loop {
        let pointer = mem.read_u64(at)?;
        if pointer == 0 {
            return Ok(out);
        }
        let s = mem.read_cstring(pointer, (*budget).min(PATH_MAX * 32))?;
        *budget = budget.checked_sub(s.len() + 1).ok_or(Errno::E2BIG)?;
        out.push(String::from_utf8_lossy(&s).into_owned());
        at += 8;
    }
}

/// Finds the program `path` names and loads it; a `#!` script loads its
/// interpreter with the script's path inserted into `argv`.
fn load(
    st: &mut MachineState,
    path: Vec<u8>,
    argv: Vec<String>,
    depth: usize,
) -> Result<Loaded, Errno> {
    let (mut file, host_path) = st.sys.files.open_program(&path)?;
    let shown = String::from_utf8_lossy(&path).into_owned();
    let mut head = [0u8; 256];
    let mut len = 0;
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) => return Err(Errno::from_io(&e)),
        }
    }
    let head = &head[..len];
    if let Some(script) = head.strip_prefix(b"#!") {
        if depth >= MAX_SCRIPT_DEPTH {
            return Err(Errno::ELOOP);
        }
        let line = script.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.trim().splitn(2, [' ', '\t']);
        let interpreter = words
            .next()
            .filter(|w| !w.is_empty())
            .ok_or(Errno::ENOEXEC)?;
        let mut args = vec![interpreter.to_string()];
        args.extend(
            words
                .next()
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty()),
        );
        args.push(shown);
        args.extend(argv.into_iter().skip(1));
        return load(st, interpreter.as_bytes().to_vec(), args, depth + 1);
    }
    if !head.starts_with(b"\x7fELF") {
        return Err(Errno::ENOEXEC);
    }
    // Load from the file just checked, never again by its host path (a
    // racing guest could swap a directory on that path for a symlink), and
    // find the dynamic linker as the guest would, inside its root.
    let files = &st.sys.files;
    let objects = &st.handles.shared_objects;
    let loaded = emuprof_loader::load_open_with_interpreter(file, &host_path, |interpreter| {
        let (file, _) =
            files
                .open_program(interpreter.as_bytes())
                .map_err(|errno| match errno {
                    Errno::ENOENT => "there is no such file".to_string(),
                    errno => std::io::Error::from_raw_os_error(errno.0).to_string(),
                })?;
        let path = Path::new(interpreter);
        let bytes = emuprof_loader::read_open(file, path).map_err(|e| e.to_string())?;
        objects
            .get_or_parse(path, Placement::Interpreter, bytes, |bytes| {
                emuprof_loader::place_interpreter(bytes, path)
            })
            .map_err(|e| e.to_string())
    });
    match loaded {
        Ok(binary) => Ok(Loaded {
            binary: Some(Arc::new(binary)),
            program: shown,
            args: argv,
            host_path,
        }),
        Err(_) if st.options.exec_native => Ok(Loaded {
            binary: None,
            program: shown,
            args: argv,
            host_path,
        }),
        Err(e) => {
            st.notes.push(format!(
                "process {} could not exec {shown}: {e} (the guest got ENOEXEC; --exec-native \
                 runs such programs on the host, unprofiled)",
                st.pid
            ));
            Err(Errno::ENOEXEC)
        }
    }
}
