"""Prints what Meson needs to build against the torch this Python imports:
one `key=value` line each. Exits non-zero when torch cannot be imported."""

import os
import sys

try:
    import torch
    from torch.utils import cpp_extension
except Exception as error:  # not installed, or broken
    print(f"torch not importable: {error}", file=sys.stderr)
    sys.exit(1)

print(f"version={torch.__version__}")
print(f"major={torch.__version__.split('.')[0]}")
print(f"cxx11_abi={int(torch.compiled_with_cxx11_abi())}")
# pybind11 shares its type registry only between modules built with the
# same compiler tags: use torch's, whatever compiler builds hora_torch.
tags = []
for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    value = getattr(torch._C, f"_PYBIND11_{name}", None)
    if value is not None:
        tags.append(f'-DPYBIND11_{name}="{value}"')
print(f"pybind11_tags={';'.join(tags)}")
# Only the directories that exist (torch lists some it may not ship).
print(f"include={';'.join(p for p in cpp_extension.include_paths() if os.path.isdir(p))}")
print(f"libdir={';'.join(cpp_extension.library_paths())}")
