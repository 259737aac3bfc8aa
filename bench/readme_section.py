"""Replaces a generated section of a markdown file (between BEGIN and END markers).

Shared by the table generators in bench/ (zoo_ratios.py, grad_scale.py)."""
import os
import sys


def write_section(text, begin, end, path=None):
    """Prints text when path is None; otherwise replaces the part of the file at path from
    `begin` to `end` (markers included in text) with text, or appends it when absent."""
    if not path:
        sys.stdout.write(text)
        return
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + text.rstrip("\n") + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(new)
