//! Where `-o` writes, and where `report` reads: a FIFO is written into, not
//! replaced; a directory is refused before the program runs; `-` is standard
//! output for `run` (which then holds the JSON alone: the program's stdout
//! goes to stderr) and `export`; a guest under `--root` that swaps a
//! directory on the `-o` path for a symlink to the host cannot move the
//! profile out of the root; `report -` reads standard input, and `report`
//! with no profile reads `emuprof.json`.

use crate::common;

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::compile::compile_c;
use common::process::run_with_timeout;

/// A static program that prints `ran` and exits 0.
fn hello(dir: &Path) -> PathBuf {
    let src = "#include <stdio.h>\nint main(void){puts(\"ran\");return 0;}\n";
    compile_c(dir, "hello", src, "gcc", &[]).expect("gcc -static builds hello.c")
}

fn emuprof(args: &[&std::ffi::OsStr], cwd: &Path) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_emuprof"));
    command.args(args).current_dir(cwd).env_clear();
    run_with_timeout(command, "emuprof")
}

#[test]
fn a_fifo_output_is_written_into_and_stays_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let program = hello(dir.path());
    let fifo = dir.path().join("profile.fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::fs::File::open(reader_path)
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        bytes
    });
    let out = emuprof(
        &[
            "-q".as_ref(),
            "-o".as_ref(),
            fifo.as_os_str(),
            program.as_os_str(),
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = reader.join().unwrap();
    let profile: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON through the FIFO");
    assert!(profile.get("functions").is_some() || profile.is_object());
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(meta.file_type().is_fifo(), "the FIFO was replaced");
}

#[test]
fn a_directory_output_is_refused_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let program = hello(dir.path());
    let target = dir.path().join("adir");
    std::fs::create_dir(&target).unwrap();
    let out = emuprof(
        &["-o".as_ref(), target.as_os_str(), program.as_os_str()],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "the program ran: {:?}", out.stdout);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("emuprof: ") && stderr.contains("directory"),
        "{stderr}"
    );
}

/// `emuprof -q -o OUTPUT hello` in `dir`, which must succeed.
fn profile_hello(dir: &Path, output: &str) -> std::process::Output {
    let program = hello(dir);
    let out = emuprof(
        &[
            "-q".as_ref(),
            "-o".as_ref(),
            output.as_ref(),
            program.as_os_str(),
        ],
        dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn dash_writes_the_profile_and_exports_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = profile_hello(dir.path(), "-");
    let json = String::from_utf8_lossy(&out.stdout);
    let _: serde_json::Value =
        serde_json::from_str(&json).expect("stdout holds the profile and nothing else");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ran\n"),
        "the program's stdout goes to stderr: {stderr}"
    );
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("emuprof: -o -"))
        .collect();
    assert_eq!(
        notes.len(),
        1,
        "one line says where the output went: {stderr}"
    );
    assert!(!dir.path().join("-").exists());

    let profile = dir.path().join("p.json");
    std::fs::write(&profile, json.as_bytes()).unwrap();
    let out = emuprof(
        &[
            "export".as_ref(),
            profile.as_os_str(),
            "-f".as_ref(),
            "folded".as_ref(),
            "-o".as_ref(),
            "-".as_ref(),
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("main"));
    assert!(
        !dir.path().join("-").exists(),
        "export created a file named -"
    );
}

#[test]
fn export_without_output_writes_the_formats_default_file_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    profile_hello(dir.path(), "p.json");
    for (format, file) in [
        ("callgrind", "callgrind.out.emuprof"),
        ("folded", "emuprof.folded"),
        ("pprof", "emuprof.pb.gz"),
    ] {
        let out = emuprof(
            &[
                "export".as_ref(),
                "p.json".as_ref(),
                "-f".as_ref(),
                format.as_ref(),
            ],
            dir.path(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(out.stdout.is_empty(), "{format}: nothing on stdout");
        assert_eq!(
            stderr.trim_end(),
            format!(
                "emuprof: wrote {file} (choose another file with -o, or -o - for standard output)"
            )
        );
        let written = std::fs::metadata(dir.path().join(file)).expect("default file written");
        assert!(written.len() > 0, "{file} is empty");
    }
}

/// The guest renames the directory holding the `-o` file and puts a symlink
/// to a host directory in its place; the profile must not land there.
#[test]
fn a_guest_cannot_redirect_the_profile_out_of_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let src = format!(
        "#include <stdio.h>\n#include <unistd.h>\n\
         int main(void){{\n\
           if (rename(\"/sub\", \"/moved\") != 0) {{ perror(\"rename\"); return 1; }}\n\
           if (symlink(\"{}\", \"/sub\") != 0) {{ perror(\"symlink\"); return 1; }}\n\
           return 0; }}\n",
        outside.display()
    );
    let program = compile_c(dir.path(), "swap", &src, "gcc", &[]).expect("gcc builds swap.c");
    let output = root.join("sub").join("p.json");
    let out = emuprof(
        &[
            "-q".as_ref(),
            "--root".as_ref(),
            root.as_os_str(),
            "-o".as_ref(),
            output.as_os_str(),
            program.as_os_str(),
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !outside.join("p.json").exists(),
        "the profile escaped the root through the guest's symlink"
    );
    assert!(root.join("moved").join("p.json").is_file());
}

/// A character device is written into and stays a device (as
/// root, `-o /dev/null` once replaced the device node with a regular
/// file); `/dev/stdout` is the terminal or pipe emuprof writes to.
#[test]
fn a_character_device_output_is_written_into_and_stays_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let program = hello(dir.path());
    // A null device of our own when we may make one (root, as in CI),
    // else the system's, which an ordinary user cannot replace anyway.
    let own = dir.path().join("null");
    let c_path = std::ffi::CString::new(own.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string path; makedev(1, 3) is the null device.
    let made = unsafe { libc::mknod(c_path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    let device = if made == 0 {
        own
    } else {
        PathBuf::from("/dev/null")
    };
    let out = emuprof(
        &[
            "-q".as_ref(),
            "-o".as_ref(),
            device.as_os_str(),
            program.as_os_str(),
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta = std::fs::symlink_metadata(&device).unwrap();
    assert!(meta.file_type().is_char_device(), "the device was replaced");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("emuprof") || name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    let out = emuprof(
        &[
            "-q".as_ref(),
            "-o".as_ref(),
            "/dev/stdout".as_ref(),
            program.as_os_str(),
        ],
        dir.path(),
    );
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = stdout.strip_prefix("ran\n").expect("program output first");
    let _: serde_json::Value = serde_json::from_str(json).expect("profile on /dev/stdout");
}

/// A socket (neither a file nor something to write into) is
/// refused before the program runs.
#[test]
fn a_socket_output_is_refused_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let program = hello(dir.path());
    let socket = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let out = emuprof(
        &["-o".as_ref(), socket.as_os_str(), program.as_os_str()],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(out.stdout.is_empty(), "the program ran: {:?}", out.stdout);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("emuprof: "), "{stderr}");
}

/// `emuprof report ARGS` in `dir` with `stdin` as its standard input.
fn report_with_stdin(
    dir: &Path,
    args: &[&str],
    stdin: std::process::Stdio,
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .arg("report")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .stdin(stdin)
        .output()
        .expect("run emuprof report")
}

#[test]
fn report_reads_dash_from_stdin_and_defaults_to_emuprof_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = profile_hello(dir.path(), "-");
    let json = out.stdout;
    let expected = {
        std::fs::write(dir.path().join("p.json"), &json).unwrap();
        let out = report_with_stdin(
            dir.path(),
            &["p.json", "--flat"],
            std::process::Stdio::null(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(expected.contains("main"), "{expected}");

    // From a pipe, as in `emuprof -o - ./prog | emuprof report -`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_emuprof"))
        .args(["report", "-", "--flat"])
        .current_dir(dir.path())
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start emuprof report -");
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        input.write_all(&json).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "report - from a pipe"
    );

    // From a redirected regular file.
    let file = std::fs::File::open(dir.path().join("p.json")).unwrap();
    let out = report_with_stdin(dir.path(), &["-", "--flat"], file.into());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "report - < p.json"
    );

    // A device is refused in one line, not read for ever.
    let out = report_with_stdin(dir.path(), &["-"], std::process::Stdio::null());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("emuprof: ") && stderr.contains("character device"),
        "{stderr}"
    );

    // No argument: emuprof.json in the working directory.
    std::fs::rename(dir.path().join("p.json"), dir.path().join("emuprof.json")).unwrap();
    let out = report_with_stdin(dir.path(), &["--flat"], std::process::Stdio::null());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "report with no PROFILE"
    );
}
