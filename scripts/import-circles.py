#!/usr/bin/env python3
"""Fails when files of a crate import each other in a circle.

Reads every `use crate::…`/`use super::…` path (and inline `crate::…`
paths) of each file under the given `src` folders, outside comments and
`#[cfg(test)] mod tests`, resolves it to the file of the longest module
prefix, and looks for strongly connected groups of files (Tarjan). A
module and its own parent (`mod.rs` declaring it) are not a circle.

Usage: scripts/import-circles.py core/src daemon/src nginx-module/src
"""
import os
import re
import sys


def module_of(src, path):
    parts = os.path.relpath(path, src)[:-3].split("/")
    return tuple(parts[:-1]) if parts[-1] in ("mod", "lib", "main") else tuple(parts)


def imports(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"#\[cfg\(test\)\]\s*mod tests \{.*", "", text, flags=re.S)
    found = []
    for use in re.findall(r"\buse\s+([^;]+);", text):
        use = use.strip()
        base = use.split("::{")[0].split("::")
        if "{" in use and "}" in use:
            inner = use[use.index("{") + 1 : use.rindex("}")]
            for item in re.split(r",(?![^{]*\})", inner):
                head = item.strip().split("::")[0].split(" as ")[0].strip()
                if head == "self":
                    found.append(base)
                elif head:
                    found.append(base + [head])
        else:
            found.append(base)
    found += [p.split("::") for p in re.findall(r"\b((?:crate|super)(?:::\w+)+)", text)]
    return found


def graph(src):
    files = {}
    for d, _, names in os.walk(src):
        for n in names:
            if n.endswith(".rs"):
                files[module_of(src, os.path.join(d, n))] = os.path.join(d, n)
    edges = {m: set() for m in files}
    for m, path in files.items():
        is_dir_mod = path.endswith(("/mod.rs", "/lib.rs", "/main.rs"))
        for p in imports(open(path).read()):
            if p[0] == "crate":
                target = p[1:]
            elif p[0] == "super":
                here = list(m) if is_dir_mod else list(m[:-1])
                while p and p[0] == "super":
                    p = p[1:]
                    if p and p[0] == "super":
                        here = here[:-1]
                target = here + p
            else:
                continue
            for i in range(len(target), -1, -1):
                if tuple(target[:i]) in files:
                    if tuple(target[:i]) != m:
                        edges[m].add(tuple(target[:i]))
                    break
    return files, edges


def circles(edges):
    def related(a, b):
        return a[: len(b)] == b or b[: len(a)] == a

    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if related(v, w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(group)

    for v in edges:
        if v not in index:
            visit(v)
    return out


def main():
    bad = 0
    for src in sys.argv[1:]:
        _, edges = graph(src)
        for group in circles(edges):
            bad += 1
            names = " <-> ".join("/".join(m) or "lib" for m in sorted(group))
            print(f"{src}: files import each other in a circle: {names}")
    if bad:
        sys.exit(1)
    print(f"no import circles in {', '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
