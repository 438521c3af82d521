"""The one file-writing policy: every file the workbench writes goes through :func:`write_file`.

A write names the *root* it belongs to (a kernel folder, the Jupyter root, an export folder,
the compile cache) and a target inside it. The policy:

- the target and every folder between the root and it are checked with ``lstat``: a symlink
  anywhere on that path is refused, and so is a target that resolves outside the root
  (``..`` pieces, absolute paths, a root-relative path that climbs out);
- the bytes go to a temporary file in the target's own folder (``O_EXCL``, mode 0o600 then
  the umask's mode), are flushed to disk, and are renamed over the target, so a reader sees
  the old file or the new one, never half of one; a rename replaces a symlink planted
  between the check and the rename instead of writing through it;
- an existing target is never replaced unless the caller passes ``overwrite=True`` (the CLI's
  ``--force``, a user's explicit confirmation); without it the new file is linked into place
  with ``link(2)``, which fails if a file appeared meanwhile, so two writers never clobber
  each other silently.

Refusals raise :class:`WriteRefusedError` naming the path, the root and the reason.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from workbench.core.errors import WriteRefusedError

__all__ = ["WriteRefusedError", "check_target", "ensure_folder", "inside_root",
           "refuse_linked_folder", "write_beside", "write_file"]


def _refuse(path: Path | str, root: Path | str, reason: str) -> WriteRefusedError:
    return WriteRefusedError(f"refused to write {path}: {reason} (root {root})",
                             path=str(path), root=str(root), reason=reason)


def inside_root(root: Path | str, target: Path | str) -> Path:
    """``target`` (absolute, or relative to ``root``) as a path below the resolved ``root``,
    checked component by component: no piece may be a symlink, none may climb out.

    Folders that do not exist yet are allowed (they are created by :func:`ensure_folder`).
    The root itself may sit behind symlinks (a home folder on another disk); what is below
    it may not."""
    root_path = Path(root)
    try:
        real_root = root_path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise _refuse(target, root, f"the root cannot be resolved ({exc.__class__.__name__})") from None
    if not real_root.is_dir():
        raise _refuse(target, root, "the root is not a folder")
    target_path = Path(target)
    if not target_path.is_absolute():
        target_path = root_path / target_path
    # Compare lexically against both spellings of the root: the caller's and the resolved one.
    absolute = Path(os.path.abspath(target_path))
    for base in (Path(os.path.abspath(root_path)), real_root):
        try:
            relative = absolute.relative_to(base)
            break
        except ValueError:
            continue
    else:
        raise _refuse(target, root, "the target is outside the root")
    if any(part in ("..", "") for part in relative.parts):
        raise _refuse(target, root, "the target climbs out of the root")
    current = real_root
    for part in relative.parts:
        if "\x00" in part:
            raise _refuse(target, root, "the name holds a NUL byte")
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _refuse(target, root, f"{current.name!r} cannot be examined ({exc.strerror})") from None
        if stat.S_ISLNK(info.st_mode):
            raise _refuse(target, root, f"{current.relative_to(real_root)} is a symlink")
    if current == real_root:
        raise _refuse(target, root, "the target is the root itself")
    return current


def check_target(root: Path | str, target: Path | str, *, overwrite: bool = False) -> Path:
    """The checked path :func:`write_file` would write, without writing: refused when a
    symlink or the root's edge is in the way, when the target is a folder, or when it exists
    and ``overwrite`` is false."""
    path = inside_root(root, target)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    if stat.S_ISDIR(info.st_mode):
        raise _refuse(path, root, "the target is a folder")
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, root, "the target is not a regular file")
    if not overwrite:
        raise _refuse(path, root, "the file exists (pass --force, or confirm, to replace it)")
    return path


def ensure_folder(root: Path | str, folder: Path | str) -> Path:
    """Create ``folder`` (and its parents) below ``root``, refusing symlinks on the way;
    the root itself is returned as it is."""
    real_root = Path(root).resolve()
    if Path(os.path.abspath(Path(root) / folder)) in (Path(os.path.abspath(root)), real_root):
        return real_root
    path = inside_root(root, folder)
    current = real_root
    for part in path.relative_to(real_root).parts:
        current = current / part
        try:
            os.mkdir(current, 0o777)
        except FileExistsError:
            info = os.lstat(current)
            if stat.S_ISLNK(info.st_mode):
                raise _refuse(current, root, f"{current.relative_to(real_root)} is a symlink") from None
            if not stat.S_ISDIR(info.st_mode):
                raise _refuse(current, root, f"{current.relative_to(real_root)} is not a folder") from None
    return path


def write_file(root: Path | str, target: Path | str, data: str | bytes, *,
               overwrite: bool = False, make_folders: bool = False) -> Path:
    """Write ``data`` (text is UTF-8) to ``target`` below ``root`` under the policy above;
    return the path written."""
    path = check_target(root, target, overwrite=overwrite)
    if make_folders:
        ensure_folder(root, path.parent)
    elif not path.parent.is_dir():
        raise _refuse(path, root, f"the folder {path.parent} does not exist")
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    tmp = _temporary(path)
    try:
        _write_and_place(tmp, path, root, payload, overwrite)
    except WriteRefusedError:
        raise
    except OSError as exc:
        raise _refuse(path, root, f"the write failed ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(FileNotFoundError, OSError):
            os.unlink(tmp)
    return path


def _write_and_place(tmp: Path, path: Path, root: Path | str, payload: bytes,
                     overwrite: bool) -> None:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o666)
    with os.fdopen(fd, "wb") as fh:
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())
    if overwrite:
        # A symlink planted since the check is replaced, never written through.
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        raise _refuse(path, root, "the file appeared while writing (another writer); "
                                  "nothing was replaced") from None
    except OSError:
        # Filesystems without hard links: the check above is the guard.
        if os.path.lexists(path):
            raise _refuse(path, root, "the file exists") from None
        os.replace(tmp, path)


def _temporary(path: Path) -> Path:
    return path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def refuse_linked_folder(folder: Path, target: Path | str) -> None:
    """A folder that is itself a symlink would carry the write elsewhere: refused, naming
    where it points so the user can run on the real folder."""
    if os.path.islink(folder):
        raise WriteRefusedError(
            f"refused to write {target}: the folder {folder} is a symlink "
            f"(to {os.readlink(folder)}); use the real folder", path=str(target),
            root=str(folder), reason=f"the folder {folder} is a symlink")


def write_beside(path: str | Path, data: str | bytes, *, overwrite: bool = False) -> Path:
    """Write ``data`` to the file at ``path`` (a report, an export, a recording) under the one
    write policy, the folder that holds it being the root; return the path written.

    Missing folders are created below the nearest existing one. That folder may not itself
    be a symlink (a link planted beside the file would carry the write elsewhere), and the
    file is never replaced unless ``overwrite`` is true: of concurrent writers to one new
    path, one wins and the others get a :class:`~workbench.core.errors.WriteRefusedError`."""
    target = Path(os.path.abspath(path))
    base = target.parent
    while not os.path.lexists(base) and base != base.parent:
        base = base.parent
    refuse_linked_folder(base, target)
    if target.parent != base:
        ensure_folder(base, target.parent)
    return write_file(base, target, data, overwrite=overwrite)
