"""Console script `harp-bench`: HARP vs one socket vs multi-stream TCP; passes --lib by default."""

import sys

from lightcc.harp._native import exec_native, native_path


def main() -> None:
    args = sys.argv[1:]
    if "--lib" not in args:
        args = ["--lib", str(native_path("libnccl-net-harp.so")), *args]
    exec_native("harp-bench", args)


if __name__ == "__main__":
    main()
