#!/usr/bin/env python3
"""Fails on an include cycle: between two modules anywhere in the tree (a module is a header with
its source file: runtime.hpp and runtime.cpp), or between two folders (a folder including from
another that includes back); and on an include against the layers (data flows from the public
headers down through src/ops and src/comm to src/core, plugins reach the core only through the
plugin ABI). Includes are resolved the way the build does: beside the file, then from src/,
include/ and the repository root."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ("*.c", "*.cpp", "*.cu", "*.h", "*.hpp", "*.cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def tracked_sources():
    out = subprocess.run(["git", "ls-files", *SOURCES], cwd=ROOT, capture_output=True, text=True, check=True)
    return [pathlib.Path(p) for p in out.stdout.split()]


def resolve(including, name, known):
    for base in (including.parent, pathlib.Path("src"), pathlib.Path("include"), pathlib.Path(".")):
        candidate = pathlib.Path(*(base / name).parts)
        candidate = pathlib.Path(str(candidate.resolve().relative_to(ROOT))) if (ROOT / candidate).exists() else None
        if candidate is not None and candidate in known:
            return candidate
    return None


def cycles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# (folder prefix, folder prefixes it must not include from)
LAYERS = [
    ("include/", ("src/", "backends/", "kernels/", "tests/", "tools/", "bench/")),
    ("src/core", ("src/ops", "src/comm", "src/capi")),
    ("src/comm", ("src/ops", "src/capi")),
    ("src/ops", ("src/comm", "src/capi")),
    ("backends/", ("src/",)),
    ("kernels/", ("src/", "backends/")),
]


def layer_violation(a, b):
    for folder, forbidden in LAYERS:
        if a.startswith(folder) and any(b.startswith(f) for f in forbidden):
            return True
    return False


def main():
    files = tracked_sources()
    known = set(files)
    module_graph, folder_graph, why = {}, {}, {}
    for f in files:
        text = (ROOT / f).read_text(errors="replace")
        for name in INCLUDE.findall(text):
            target = resolve(f, name, known)
            if target is None or target == f:
                continue
            module_a, module_b = str(f.with_suffix("")), str(target.with_suffix(""))
            if module_a != module_b:
                module_graph.setdefault(module_a, set()).add(module_b)
                why.setdefault((module_a, module_b), f"{f} includes {target}")
            a, b = str(f.parent), str(target.parent)
            if a != b:
                folder_graph.setdefault(a, set()).add(b)
                why.setdefault((a, b), f"{f} includes {target}")
    failed = False
    for f, targets in sorted(module_graph.items()):
        for t in sorted(targets):
            if layer_violation(str(pathlib.Path(f).parent) + "/", str(pathlib.Path(t).parent) + "/"):
                failed = True
                print(f"against the layers: {why[(f, t)]}")
    for component in cycles(module_graph):
        failed = True
        edges = [why[(a, b)] for a in component for b in component if (a, b) in why]
        print("include cycle between modules " + ", ".join(component) + ":\n  " + "\n  ".join(edges))
    for component in cycles(folder_graph):
        failed = True
        edges = [why[(a, b)] for a in component for b in component if (a, b) in why]
        print("include cycle between folders " + ", ".join(component) + ":\n  " + "\n  ".join(edges))
    if not failed:
        print(f"include cycles: none among the modules and folders of {len(files)} files")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
