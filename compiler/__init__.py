"""scenec.compiler: the front end, the analysis passes, lowering, emit and the command line.

Importing it imports `scenec.runtime`'s package module first, which only sets scenec's XLA flags (see
runtime/__init__.py; no jax import): every command and API user then gets them before jax starts its
CPU backend, even when jax runs something before the first model is compiled (the benchmark's peak
measurement did, and ran the step without them at half speed).
"""

import scenec.runtime  # noqa: F401
