#!/usr/bin/env python3
"""crate_dir.py NAME VERSION - print the source folder of crate NAME VERSION, read from
`cargo metadata --format-version 1` on stdin (the TFLM build: where cargo fetch put tfmicro).
Exits 2 with a message when the crate is not in the metadata."""
import json
import os
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: cargo metadata --format-version 1 | crate_dir.py NAME VERSION")
    name, version = sys.argv[1], sys.argv[2]
    try:
        metadata = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print(f"error: cargo metadata gave no JSON ({e})", file=sys.stderr)
        sys.exit(2)
    for package in metadata.get("packages", []):
        if package.get("name") == name and package.get("version") == version:
            print(os.path.dirname(package["manifest_path"]))
            return
    print(f"error: {name} {version} is not in cargo metadata", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
