"""What a slow viewer costs a run streamed with `emuprof --serve` (the
feature allows at most 10 % more time).

    python3 bench/run.py --serve [--repeats N] [--only LABEL]

For each program, emuprof runs alternately without `--serve` and with
`--serve 127.0.0.1:PORT --serve-wait` and a deliberately slow viewer attached
from the start: `python3 bench/serve.py viewer PORT`, which says hello and then
reads at most 4 KiB per second with a 4 KiB receive buffer (slower than one
snapshot line per second), so emuprof's socket to it stays full and most
snapshots must be dropped. The wall time measured is emuprof's, from start to
exit (the viewer, started and ready before emuprof, attaches within 10 ms;
the end of the stream is included), with CPU time beside it.
"""

import socket
import sys
import time

VIEWER_READ = 4096


def slow_viewer(port):
    """Says "ready" on stdout, connects (retrying every 10 ms for 30 s), says
    hello, then reads 4 KiB a second until the stream ends."""
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, VIEWER_READ)
            sock.connect(("127.0.0.1", port))
            break
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                sys.exit(f"slow viewer: nothing listens on port {port}")
            time.sleep(0.01)
    sock.sendall(b'{"version":1}\n')
    while sock.recv(VIEWER_READ):
        time.sleep(1)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def compare(cases, repeats, emuprof, run_once, log):
    """Markdown table: median wall and CPU time without and with --serve and a
    slow viewer, and their ratio, per case. The viewer is started and ready
    (retrying its connection) before emuprof starts, so its own start-up is
    not counted."""
    import statistics
    import subprocess
    import tempfile
    from pathlib import Path

    lines = [f"emuprof without and with `--serve` and a slow viewer (4 KiB/s), median of {repeats} runs (seconds):",
             "", "| program | emuprof | with --serve + slow viewer | ratio | CPU emuprof | CPU with --serve | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        plain, served = {"wall": [], "cpu": []}, {"wall": [], "cpu": []}
        for round_ in range(repeats):
            for serve in (False, True):
                with tempfile.TemporaryDirectory(prefix="emuprof-bench-serve-") as scratch:
                    argv = [emuprof, "-q", "-o", str(Path(scratch) / "p.json")]
                    viewer = None
                    if serve:
                        port = free_port()
                        argv += ["--serve", f"127.0.0.1:{port}", "--serve-wait"]
                        viewer = subprocess.Popen([sys.executable, __file__, "viewer", str(port)],
                                                  stdout=subprocess.PIPE, text=True)
                        viewer.stdout.readline()
                    code, seconds, cpu, _, stderr = run_once([*argv, *case.argv], scratch, capture_stderr=True)
                    if viewer:
                        viewer.kill()
                        viewer.wait()
                    if code != 0:
                        log(f"{case.label}: emuprof exited {code}: {stderr.strip()[-200:]}")
                    target = served if serve else plain
                    target["wall"].append(seconds)
                    target["cpu"].append(cpu)
            log(f"{case.label} round {round_ + 1}: {plain['wall'][-1]:.2f} s without, {served['wall'][-1]:.2f} s with")
        pw, sw = statistics.median(plain["wall"]), statistics.median(served["wall"])
        pc, sc = statistics.median(plain["cpu"]), statistics.median(served["cpu"])
        lines.append(f"| {case.label} | {pw:.3f} | {sw:.3f} | {sw / pw:.3f} | {pc:.3f} | {sc:.3f} | {sc / pc:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "viewer":
    slow_viewer(int(sys.argv[2]))
