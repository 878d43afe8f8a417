"""The sandbox's child: run ``program.py`` of one folder under limits and a guard.

Started by :func:`tuner.workloads.run_sandboxed` as ``python -I -S -B THIS FOLDER SPEC``
(isolated mode, no site-packages: the standard library only; nothing of the tuner is
imported; no bytecode written). It reads a one-line nonce from stdin, then, before the
program's first line (as PID 1 of a new PID namespace, in a child it forks and waits for):

1. sets the kernel's limits (``SPEC``: address space, CPU seconds, file size, processes,
   open files, no core file);
2. when started as root, drops to an unprivileged uid and gid (the interpreter's library
   read through descriptors opened before);
3. moves into the folder;
4. installs an audit hook (PEP 578; Python code cannot remove one) that refuses sockets,
   new processes (fork, exec, spawn, ``subprocess``, ``os.system``), signals to other
   processes, ``ctypes`` and ``_posixsubprocess`` (which would go around the hook), changes
   of limits or of the working folder, and any write, creation, removal, rename or
   permission change of a path outside the folder.

It then runs the program. Only when the program's last line has run does it write the
nonce to stdout and exit 0: an early ``os._exit(0)``, an exception, a signal or a refusal
(``PermissionError``) all count as failed. What this does not stop is written in
docs/trials.md ("The sandbox").
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback
from typing import Any


#: Events refused outright (the audit events of CPython 3.11 that start a process, signal
#: one, open a network or local socket, load native code or escape the limits).
REFUSED = ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
           "os.startfile", "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg",
           "os.chdir", "os.chroot", "resource.setrlimit", "resource.prlimit",
           "os.putenv", "os.unsetenv")
REFUSED_PREFIXES = ("socket.", "ctypes.", "_posixsubprocess.", "winreg.", "msvcrt.")
#: Modules whose import is refused: each reaches the system past the hook.
REFUSED_IMPORTS = frozenset({"ctypes", "_ctypes", "_posixsubprocess", "_posixshmem",
                             "_testcapi", "_testinternalcapi", "_xxsubinterpreters"})
#: Events that change a path (argument positions of the paths they change).
PATH_EVENTS = {"os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1),
               "os.link": (0, 1), "os.symlink": (1,), "os.truncate": (0,),
               "os.chmod": (0,), "os.chown": (0,), "os.chflags": (0,), "os.utime": (0,),
               "os.setxattr": (0,), "os.removexattr": (0,), "shutil.rmtree": (0,),
               "shutil.copyfile": (1,), "shutil.copymode": (1,), "shutil.copystat": (1,),
               "shutil.move": (0, 1), "shutil.chown": (0,), "tempfile.mkdtemp": (0,),
               "tempfile.mkstemp": (0,), "os.mkfifo": (0,), "os.mknod": (0,)}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
def set_limits(spec: dict[str, Any]) -> None:
    mb = 1024 * 1024
    for name, soft, hard in (
            ("RLIMIT_AS", spec["memory_mb"] * mb, spec["memory_mb"] * mb),
            ("RLIMIT_CPU", spec["cpu_s"], spec["cpu_s"] + 1),     # SIGXCPU, then SIGKILL
            ("RLIMIT_FSIZE", spec["file_mb"] * mb, spec["file_mb"] * mb),
            ("RLIMIT_NPROC", spec["nproc"], spec["nproc"]),
            ("RLIMIT_NOFILE", spec["open_files"], spec["open_files"]),
            ("RLIMIT_CORE", 0, 0)):
        resource.setrlimit(getattr(resource, name), (soft, hard))


def drop_privileges(spec: dict[str, Any]) -> None:
    """Become the unprivileged uid and gid, the interpreter's library still importable:
    each folder of ``sys.path`` is opened first and read through ``/proc/self/fd/N`` (the
    library can sit where that uid cannot look, a Python under /root)."""
    if spec.get("uid") is None:
        return
    if os.path.isdir("/proc/self/fd"):
        views = []
        for p in sys.path:
            if os.path.isdir(p):
                fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
                p = f"/proc/self/fd/{fd}"
            views.append(p)
        sys.path[:] = views
        sys.path_importer_cache.clear()
    os.setgroups([])
    os.setgid(spec["gid"])
    os.setuid(spec["uid"])
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("sandbox: could not drop root")


def make_guard(folder: str) -> Any:
    """The audit hook for ``folder``: what it may write is inside it (symlinks resolved)."""
    realpath, join, isabs, fsdecode = os.path.realpath, os.path.join, os.path.isabs, os.fsdecode
    root = realpath(folder)
    inside_prefix = root + os.sep

    def inside(path: Any) -> bool:
        if isinstance(path, int):        # an open descriptor: its path was checked
            return True
        p = fsdecode(path)
        full = realpath(p if isabs(p) else join(root, p))
        return full == root or full.startswith(inside_prefix) or full == os.devnull

    def refuse(event: str, detail: str = "") -> None:
        raise PermissionError(f"sandbox: {event} refused{detail}")

    def guard(event: str, args: tuple[Any, ...]) -> None:
        if event in REFUSED or event.startswith(REFUSED_PREFIXES):
            refuse(event)
        elif event == "import" and args and str(args[0]).split(".")[0] in REFUSED_IMPORTS:
            refuse(event, f": {args[0]}")
        elif event == "open":
            path, mode, flags = (*args, None, None, 0)[:3]
            # os.open (mode None) outside the folder is refused even to read: its
            # descriptor could serve as a dir_fd, which the events do not show
            writes = (mode is None or any(c in mode for c in "wax+")
                      or bool((flags or 0) & WRITE_FLAGS))
            if writes and path is not None and not inside(path):
                refuse("writing", f": {path!r} is outside the sandbox's folder")
        elif event in PATH_EVENTS:
            for i in PATH_EVENTS[event]:
                if i < len(args) and args[i] is not None and not inside(args[i]):
                    refuse(event, f": {args[i]!r} is outside the sandbox's folder")
    return guard


def as_init() -> None:
    """As PID 1 of a new PID namespace, run the program in a child and wait: the kernel
    ignores signals PID 1 has no handler for (a CPU limit's SIGXCPU among them), and when
    PID 1 exits every process left in the namespace is killed. Exits as the child did
    (128 + the signal that killed it)."""
    child = os.fork()
    if child == 0:
        return
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status)
                     else os.WEXITSTATUS(status))


def main() -> None:
    folder, spec = sys.argv[1], json.loads(sys.argv[2])
    if os.getpid() == 1:
        as_init()
    nonce = sys.stdin.readline().strip()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    set_limits(spec)
    drop_privileges(spec)
    os.chdir(folder)
    with open("program.py", encoding="utf-8") as fh:
        source = fh.read()
    code = compile(source, "program.py", "exec")
    print_exc, flush, write = traceback.print_exc, sys.stderr.flush, os.write
    sys.addaudithook(make_guard(folder))
    try:
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    except BaseException:
        print_exc()
        flush()
        os._exit(1)
    write(1, f"\n{nonce}\n".encode())
    os._exit(0)


if __name__ == "__main__":
    main()
