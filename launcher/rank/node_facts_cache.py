"""A file cache of the compile backends an accelerator supports, so the launcher need not import torch._dynamo.

The list depends only on what is installed, so the key is made of what is installed: the torch version
and build, the `torch_dynamo_backends` entry points (names and values), the vendor packages that add
or enable backends, the Python environment, and the code that filters the list. Any change there makes
a new key and thus a new file. The check in every rank stays authoritative (docs/CONTRACT.md section 2).

Files live in `$XDG_CACHE_HOME/accel-launch/` (default `~/.cache/accel-launch/`), are written atomically
with mode 0600, and one that is not a small regular file of the expected shape is ignored and rebuilt.
Only the user's own cache is trusted, as ssh trusts `~/.ssh` (docs/RELIABILITY.md): a cache folder that is
a symbolic link, not a folder, another user's, or writable by group or others is not used at all (each
process then walks the registry itself); a cache file or lock reached through a symbolic link, another
user's, or writable by others is ignored (a file is rebuilt: the new one is renamed over it).
A missing list is computed once per node: the launcher and the ranks of a node that find no file take a
lock, and the first one walks dynamo's registry for the others. The lock is waited for at most
`LOCK_WAIT_SECONDS` (docs/RELIABILITY.md, "No wait without a bound"): a process that holds it longer, stuck or
hostile, costs the others that wait and their own walk, never the launch. `ACCEL_LAUNCH_NO_CACHE=1` turns the cache
off (then every process walks the registry itself).

The key's entry points are found as importlib.metadata finds them, without importing it (`entry_point_pairs`):
importing importlib.metadata (and the email parser it brings) took 30-60 ms of a rank's 150 ms start on the
2-core bench machine; the rank only needs the `torch_dynamo_backends` lines for its facts key. The
installed distributions are the `*.dist-info` and `*.egg-info` folders in the folders of `sys.path`,
and each lists its entry points in an INI-style `entry_points.txt`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from accelerators import Accelerator, backends
from accelerators.accelerator import registered
from accelerators.packages import package_installed
from accelerators.torch_build import TorchBuild
from launcher.shared_files import UnsafeFileError, lock_within, ownership_problem, publish_file, read_user_text

__all__ = ["LOCK_WAIT_SECONDS", "NO_CACHE_VAR", "backends_for", "cache_enabled", "cache_dir", "cache_file",
           "cache_key", "load_backends", "store_backends", "entry_point_pairs"]

logger = logging.getLogger(__name__)

NO_CACHE_VAR = "ACCEL_LAUNCH_NO_CACHE"
_FORMAT = 1
_MAX_FILE_BYTES = 1 << 20
# Longer than one walk of the registry takes on a loaded 2-core machine (5 s seen), so that the ranks of a node
# still share one walk; short enough that a stuck holder costs a launch seconds, not forever.
LOCK_WAIT_SECONDS = 10.0


def backends_for(accelerator: Accelerator, build: TorchBuild | None, environ: Mapping[str, str],
                 before_walk: Callable[[], None] = lambda: None) -> tuple[str, ...]:
    """The backends `accelerator` supports on this node, from the node's cache, else walked once for the
    node (`accelerator.supported_compile_backends`, after `before_walk`, which may refuse the walk by raising) and
    stored; `build` is torch's build, from its files."""
    if not cache_enabled(environ):
        before_walk()
        return accelerator.supported_compile_backends()
    key = cache_key(accelerator.name, asdict(build) if build is not None else None)
    path = cache_file(cache_dir(environ), key)
    if not _own_folder(path.parent):
        before_walk()
        return accelerator.supported_compile_backends()
    cached = load_backends(path, key)
    if cached is not None:
        return cached
    before_walk()
    with _node_lock(path):
        cached = load_backends(path, key)  # another process of this node may have just written it
        if cached is not None:
            return cached
        names = accelerator.supported_compile_backends()
        store_backends(path, key, names)
        return names


def cache_enabled(environ: Mapping[str, str]) -> bool:
    """False when ACCEL_LAUNCH_NO_CACHE is set to anything but empty or 0."""
    return environ.get(NO_CACHE_VAR, "").strip() in ("", "0")


def cache_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/accel-launch`, else `~/.cache/accel-launch`."""
    base = environ.get("XDG_CACHE_HOME", "").strip()
    if not base or not os.path.isabs(base):
        home = environ.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".cache")
    return Path(base) / "accel-launch"


def cache_key(accelerator: str, torch_build: Mapping[str, object] | None) -> dict[str, object]:
    """Everything the backend list of `accelerator` depends on, as plain JSON values.

    torch's version is part of `torch_build` (its version.py); only without that is it looked up by name."""
    torch_version = None if torch_build is not None else _distribution_version("torch")
    return {
        "format": _FORMAT,
        "accelerator": accelerator,
        "python": [sys.version, sys.prefix],
        "torch": torch_version,
        "torch_build": dict(torch_build) if torch_build is not None else None,
        "entry_points": entry_point_pairs("torch_dynamo_backends"),
        "packages": {name: _package_version(name) for name in _vendor_packages()},
        "code": _code_digest(),
    }


def cache_file(directory: Path, key: Mapping[str, object]) -> Path:
    """The file for `key` in `directory`: `backends-<digest of the key>.json`."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    return directory / f"backends-{digest}.json"


def load_backends(path: Path, key: Mapping[str, object]) -> tuple[str, ...] | None:
    """The cached backend list for `key`; None when the file is missing, not a small regular file of the
    user's own (`own_only`), corrupt, of another shape (an empty list included: every device runs at least
    `eager`) or for another key."""
    try:
        data = json.loads(read_user_text(str(path), _MAX_FILE_BYTES, own_only=True))
    except (UnsafeFileError, ValueError, RecursionError) as exc:
        logger.debug("no usable backend cache at %s: %s", path, exc)
        return None
    if not isinstance(data, dict) or data.get("key") != json.loads(json.dumps(key)):
        return None
    names = data.get("supported_backends")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        return None
    return tuple(names)


def store_backends(path: Path, key: Mapping[str, object], names: tuple[str, ...]) -> None:
    """Write the list whole (temp file, then rename) with mode 0600; a failure only costs the next run."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        publish_file(path, json.dumps({"key": key, "supported_backends": list(names)}, sort_keys=True))
    except OSError as exc:
        logger.debug("could not write the backend cache %s: %s", path, exc)


def _own_folder(folder: Path) -> bool:
    """Make the cache folder (mode 0700) if missing; True when it is a real folder of this user's alone."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        logger.debug("no backend cache in %s: %s", folder, exc)
        return False
    problem = ownership_problem(info, folder=True)
    if problem is not None:
        logger.debug("the backend cache folder %s is not used: it %s", folder, problem)
    return problem is None


@contextmanager
def _node_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside `path`: a regular file of this user's own, never made through a symbolic
    link, waited for at most LOCK_WAIT_SECONDS (none when there is no such lock or it stays held: then this
    process computes)."""
    lock = path.with_suffix(".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        logger.debug("no lock for the backend cache %s: %s", path, exc)
        yield
        return
    try:
        problem = ownership_problem(os.fstat(fd))
        if problem is not None:
            logger.debug("the lock %s is not used: it %s", lock, problem)
        elif not lock_within(fd, LOCK_WAIT_SECONDS):
            logger.info("the lock %s stayed held for %s s; walking the registry here", lock, LOCK_WAIT_SECONDS)
        yield
    finally:
        os.close(fd)


def _vendor_packages() -> list[str]:
    """Packages that bring a device and its backends, or without which a listed backend is refused."""
    return sorted({package for cls in registered() for package in cls.packages()})


def _distribution_version(name: str) -> str | None:
    from importlib import metadata  # only off the rank's usual path: see launcher.rank.node_facts_cache

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _package_version(package: str) -> str | None:
    """The installed version of `package` (None when absent; its location when it has no metadata)."""
    if not package_installed(package):
        return None
    from importlib import metadata

    for distribution in metadata.packages_distributions().get(package, [package]):
        version = _distribution_version(distribution)
        if version is not None:
            return version
    spec = importlib.util.find_spec(package)
    origin = (spec.origin or "") if spec is not None else ""
    try:
        return f"{origin}@{os.stat(origin).st_mtime_ns}"
    except OSError:
        return origin or "installed"


def _code_digest() -> str:
    """A digest of the code that turns the registry into the supported list (the filters, the claims, the base
    class, and each accelerator's file with its exclusive backends): editing any of it invalidates."""
    digest = hashlib.sha256()
    files = [backends.__file__, inspect.getfile(Accelerator), *map(inspect.getfile, registered())]
    for path in files:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


_INFO_SUFFIXES = (".dist-info", ".egg-info")


def entry_point_pairs(group: str, path: Iterable[str] | None = None) -> list[list[str]]:
    """Sorted `[name, value]` pairs of `group` in every distribution on `path` (default: sys.path)."""
    pairs: list[list[str]] = []
    for folder in sys.path if path is None else path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(_INFO_SUFFIXES):
                pairs.extend(_group_pairs(os.path.join(folder or ".", name, "entry_points.txt"), group))
    return sorted(pairs)


def _group_pairs(path: str, group: str) -> list[list[str]]:
    """The `name = value` lines under `[group]` in the file at `path` (none when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    pairs, inside = [], False
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line.strip("[]") == group  # as importlib.metadata reads a section name
        elif inside and "=" in line:
            name, value = line.split("=", 1)
            pairs.append([name.strip(), value.strip()])
    return pairs
