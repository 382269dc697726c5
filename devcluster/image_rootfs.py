"""Assembles the runtime image's root filesystem (the Dockerfile's builder stage runs it; stdlib only).

The runtime stage is ``FROM scratch`` plus this tree: the interpreter that made the venv, its standard
library without what a scheduler never runs (tests, IDLE, tkinter, ensurepip, lib2to3, the base's own
site-packages, test and terminal extension modules), the shared libraries that the interpreter and every
extension module (stdlib and venv) link, as ``ldd`` resolves them here, the venv itself, the CA bundle,
and passwd/group entries for root and the non-root user. No shell, no package manager, no pip.

Every path keeps the builder's layout, symlinks included (merged /usr: /lib -> usr/lib), so the ELF
interpreter path, the venv's ``python -> /usr/bin/python3`` link and the libraries' sonames resolve as
they did where the venv was built.

    python3 image_rootfs.py DEST VENV
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

# Top-level stdlib entries a scheduler never imports.
STDLIB_DROP = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "turtle.py",
    "ensurepip",
    "lib2to3",
    "pydoc_data",
    "site-packages",
    "dist-packages",
}
# Extension modules that are tests, terminals, audio or old databases (each may pull a library).
DYNLOAD_DROP_PREFIXES = (
    "_test",
    "_xx",
    "xxlimited",
    "_ctypes_test",
    "_curses",
    "readline",
    "_dbm",
    "_gdbm",
    "nis",
    "ossaudiodev",
    "audioop",
    "_tkinter",
    "_sqlite3",
)
PASSWD = "root:x:0:0:root:/root:/nonexistent\nnonroot:x:65532:65532:nonroot:/nonexistent:/nonexistent\n"
GROUP = "root:x:0:\nnonroot:x:65532:\n"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def copy_path(dest: Path, path: str) -> None:
    """``path`` into ``dest`` as it is here: each symlink on the way recreated, the file at the end copied."""
    parts = Path(path).parts
    current = Path("/")
    for index, part in enumerate(parts[1:], start=1):
        current = current / part
        target = dest / current.relative_to("/")
        if current.is_symlink():
            link = os.readlink(current)
            if not target.is_symlink() and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(link)
            resolved = os.path.normpath(os.path.join(current.parent, link, *parts[index + 1 :]))
            copy_path(dest, resolved)
            return
        if index == len(parts) - 1:
            if current.is_dir():
                copy_tree(dest, str(current))
            elif not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(current, target)
        else:
            target.mkdir(exist_ok=True)


def copy_tree(dest: Path, root: str, ignore: object = None) -> None:
    target = dest / Path(root).relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(root, target, symlinks=True, ignore=ignore, dirs_exist_ok=True)  # type: ignore[arg-type]


def linked_libraries(binaries: list[Path]) -> set[str]:
    """Every shared library ``ldd`` resolves for ``binaries``; a library it cannot find is an error."""
    found: set[str] = set()
    for binary in binaries:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False).stdout
        for raw in out.splitlines():
            line = raw.strip()
            if "not found" in line:
                raise SystemExit(f"image_rootfs: {binary}: {line}")
            if "=>" in line:
                path = line.split("=>", 1)[1].split("(")[0].strip()
            else:
                path = line.split("(")[0].strip()
            if path.startswith("/"):
                found.add(path)
    return found


def shared_objects(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.so*") if p.is_file() and not p.is_symlink()]


def main(dest: Path, venv: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    executable = Path(os.path.realpath(sys.executable))
    for name in ("python3", executable.name):
        copy_path(dest, str(executable.parent / name))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dynload = stdlib / "lib-dynload"

    def ignore_stdlib(directory: str, names: list[str]) -> set[str]:
        here = Path(directory)
        dropped: set[str] = set()
        if here == stdlib:
            dropped |= {n for n in names if n in STDLIB_DROP or n.startswith("config-")}
        if here == dynload:
            dropped |= {n for n in names if n.startswith(DYNLOAD_DROP_PREFIXES)}
        if here != stdlib:
            dropped |= {n for n in names if n in ("test", "tests", "idle_test")}
        return dropped

    copy_tree(dest, str(stdlib), ignore=ignore_stdlib)
    # The venv, without the test suites some wheels ship (numpy's alone are megabytes).
    copy_tree(dest, str(venv), ignore=lambda _d, names: {n for n in names if n in ("tests", "test")})
    kept_dynload = dest / dynload.relative_to("/")
    binaries = [executable, *shared_objects(kept_dynload), *shared_objects(venv)]
    for library in sorted(linked_libraries(binaries)):
        if not library.startswith(str(venv) + "/"):
            copy_path(dest, library)
    # Symlinks copied as links (Debian's sitecustomize.py -> /etc/python3.x/) need their targets too.
    for link in [p for p in dest.rglob("*") if p.is_symlink() and not p.exists()]:
        target = os.path.normpath(os.path.join(Path("/") / link.parent.relative_to(dest), os.readlink(link)))
        if os.path.exists(target):
            copy_path(dest, target)
        else:
            link.unlink()
    if os.path.exists(CA_BUNDLE):
        copy_path(dest, CA_BUNDLE)
    etc = dest / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "passwd").write_text(PASSWD)
    (etc / "group").write_text(GROUP)
    tmp = dest / "tmp"
    tmp.mkdir(exist_ok=True)
    tmp.chmod(0o1777)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: image_rootfs.py DEST VENV")
    main(Path(sys.argv[1]), Path(sys.argv[2]))
