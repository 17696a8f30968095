"""Console script `harp-setup`: lists NICs, writes the HARP profile, prints the hugepage line."""

import sys

from lightcc.harp._native import exec_native


def main() -> None:
    exec_native("harp-setup", sys.argv[1:])


if __name__ == "__main__":
    main()
