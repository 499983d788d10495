"""The on-disk cache of compiled programs: a step, a rollout or a training loop compiled once is read
back in a later process instead of compiled again.

Where it sits: runtime/, called by the commands that run workloads (`scenec run`, `train`, `play`,
`optimize`: cli.py) and by users' own scripts (`scenec.runtime.cache.enable()`). It is JAX's persistent
compilation cache, pointed at scenec's folder: the key is the program, the XLA flags, the devices
and the jax/jaxlib versions, so a changed scene, batch size or jax version compiles anew, and an entry
is never read for a program it was not written for. XLA's compile of Ant's step at batch 1024 (2.8 s
on this 2-core machine) becomes a read of ~0.2 s (`python tools/bench_cache.py`).

`scenec compile` and `scenec bench` do not use it: the compile time they report is a cold compile.

Where: $SCENEC_CACHE_DIR, else $XDG_CACHE_HOME/scenec/xla, else ~/.cache/scenec/xla. Entries are
0.2–2 MB each (Ant's step at batch 1024: 0.26 MB) and are never evicted (a size limit in JAX needs the
`filelock` package, not a dependency of scenec): delete the folder to empty it.
SCENEC_CACHE_DIR=off (or 0, or empty) turns it off. A cache the user has set up for JAX itself
(`jax_compilation_cache_dir` or JAX_COMPILATION_CACHE_DIR) is left as it is. A folder that cannot be
created or written is skipped with a warning; nothing else changes.
"""

from __future__ import annotations

import os
import warnings

OFF = ("off", "0", "false", "no", "")
MIN_COMPILE_SECONDS = 0.5      # programs that compile faster are not worth a file each


def default_dir() -> str | None:
    """The folder scenec caches compiled programs in, or None when SCENEC_CACHE_DIR turns it off."""
    wanted = os.environ.get("SCENEC_CACHE_DIR")
    if wanted is not None:
        return None if wanted.strip().lower() in OFF else os.path.expanduser(wanted)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "scenec", "xla")


def enable(path: str | None = None) -> str | None:
    """Point JAX's persistent compilation cache at `path` (default: `default_dir()`); return the folder
    in use, or None when it is off or unusable. Call it before the first compile you want cached."""
    import jax

    if jax.config.jax_compilation_cache_dir:      # the user's own setting (config or environment)
        return jax.config.jax_compilation_cache_dir
    path = default_dir() if path is None else path
    if path is None:
        return None
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".write-test-{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        warnings.warn(f"compile cache {path!r} is not writable ({e.strerror}); compiling without it "
                      "(SCENEC_CACHE_DIR chooses another folder, =off turns it off)", stacklevel=2)
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return path


def disable() -> None:
    """No reads from or writes to the persistent cache in this process (`scenec bench`: cold compiles)."""
    import jax

    jax.config.update("jax_enable_compilation_cache", False)


class counting:
    """`with counting() as c:` … `c.hits`: how many programs compiled inside were read from the cache."""

    EVENT = "/jax/compilation_cache/cache_hits"

    def __enter__(self):
        import jax.monitoring

        self.hits = 0
        jax.monitoring.register_event_listener(self._listen)
        return self

    def _listen(self, event, **_):
        if event == self.EVENT:
            self.hits += 1

    def __exit__(self, *exc):
        import jax.monitoring

        jax.monitoring.unregister_event_listener(self._listen)
        return False
