#!/usr/bin/env python3
"""Fails when a document or a comment names a repository path that does not exist: every
`folder/...` path under one of the project's top-level folders, in docs/, README.md, CHANGELOG.md
and the comments of tracked sources, scripts and CMake files; and, in the documents, every file
name with a source or document extension, which some tracked file must have."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOP = r"(?:\.ci|include|src|backends|kernels|tests|bench|examples|tools|docs|cmake)"
PATH = re.compile(r"(?<![\w./-])(" + TOP + r"/[\w./-]*\w)")
FILE_NAME = re.compile(r"(?<![\w./<>*-])([\w-]+\.(?:cpp|hpp|cu|cuh|md|sh|py|cmake|c|h))\b")
COMMENT = re.compile(r"(//.*|/\*.*|^\s*\*.*|#.*)")
# File names the documents mention that belong to other projects or to the system.
EXTERNAL = {"dlpack.h", "cublasLt.h", "cuda_runtime.h", "mpi.h", "omp.h", "cblas.h", "highway.h",
            "foreach_target.h", "nccl.h", "rccl.h", "hip_runtime.h", "dnnl.hpp", "torch_compare.py"}


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def exists(path):
    path = path.rstrip(".")
    return (ROOT / path).exists() or any(ROOT.glob(path + ".*"))


def main():
    files = tracked()
    names = {pathlib.Path(f).name for f in files}
    documents = [f for f in files if f.endswith(".md")]
    sources = [f for f in files if re.search(r"\.(c|cpp|h|hpp|cu|cuh|sh|py|cmake|txt|in)$|^\.ci/", f)]
    problems = []
    for f in documents + sources:
        text = (ROOT / f).read_text(errors="replace")
        is_document = f in documents
        for number, line in enumerate(text.splitlines(), 1):
            scope = line if is_document else " ".join(m.group(0) for m in COMMENT.finditer(line))
            for path in PATH.findall(scope):
                if not exists(path):
                    problems.append(f"{f}:{number}: no such path {path}")
            if is_document:
                for name in FILE_NAME.findall(scope):
                    if name not in names and name not in EXTERNAL:
                        problems.append(f"{f}:{number}: no tracked file named {name}")
    for p in problems:
        print(p)
    if not problems:
        print(f"document paths: all exist ({len(documents)} documents, comments of {len(sources)} files)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
