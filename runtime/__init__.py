"""scenec.runtime: everything that is traced — the step, kernels, envs — in jax and numpy only.

Importing this package sets one XLA flag for the CPU backend, unless the user has already chosen it
or set SCENEC_XLA_DEFAULTS=0: `--xla_cpu_use_fusion_emitters=false`. XLA's newer CPU fusion emitters
compile scenec's step 2× slower and run it 1.6× slower (Ant at batch 1024 on 2 cores: XLA compile
16.9 s → 7.4 s, 12.5k → 20.2k physics steps/s; `scenec bench` measures it). The flag is read when
jax first starts its CPU backend, so it has no effect if jax has already run something.
"""

import os as _os

_FLAG = "--xla_cpu_use_fusion_emitters"
if _os.environ.get("SCENEC_XLA_DEFAULTS", "1") != "0" and _FLAG not in _os.environ.get("XLA_FLAGS", ""):
    _os.environ["XLA_FLAGS"] = (_os.environ.get("XLA_FLAGS", "") + f" {_FLAG}=false").strip()
