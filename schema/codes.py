"""The catalogue of diagnostic codes: data, one entry per code.

Ranges (each layer adds its codes to its own range, and every code has a minimal bad scene under
tests/catalogue/ with the expected line:col; tests/test_catalogue.py proves it):

  E0xx  reading: files, encodings, YAML/pbtxt syntax, hostile documents
  E1xx  format: unknown fields, wrong types, vector lengths, expressions, parameters, units
  E2xx  names and references: duplicates, unresolved names, the joint forest
  E3xx  physical values: masses, inertias, ranges, sizes, actuators
  E4xx  meshes, height fields and other files
  E5xx  compiler passes: fused bodies, collision pairs, kernels, lowering
  E6xx  task expressions
  E7xx  importers (MJCF, URDF, Brax v1)
  W...  warnings (same ranges)
"""

CODES: dict[str, str] = {
}
