#!/usr/bin/env python3
"""What building bench against this Python's torch needs, on one line: the torch version, its
CMake prefix path (torch.utils.cmake_prefix_path) and 1 if it was built with the C++11 ABI
(_GLIBCXX_USE_CXX11_ABI=1), else 0; gpu_bench.sh reads the three words.
Usage: torch_build_info.py
Example: .venv/bin/python scripts/torch_build_info.py
  (prints e.g. 2.11.0+cu130 .venv/lib/python3.11/site-packages/torch/share/cmake 1)"""
import sys


def main():
    import torch  # here, so that --help answers without torch

    print(torch.__version__, torch.utils.cmake_prefix_path, int(torch._C._GLIBCXX_USE_CXX11_ABI))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(__doc__)
        sys.exit(0 if sys.argv[1] in ("-h", "--help") else 2)
    sys.exit(main())
