#!/usr/bin/env python3
"""Checks an OpenAPI document: valid for its version (openapi-spec-validator),
operationIds unique, every path parameter in its path.

Usage: scripts/openapi-check.py openapi.json   (exit 1 listing each problem)
"""
import collections
import json
import sys

from openapi_spec_validator import validate


def problems(spec):
    found = []
    try:
        validate(spec)
    except Exception as e:  # the validator's error names the place
        found.append(f"invalid: {e}".splitlines()[0])
    ids = collections.Counter()
    for path, item in spec.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            ids[op.get("operationId")] += 1
            for p in op.get("parameters", []):
                if p.get("in") == "path" and "{" + p["name"] + "}" not in path:
                    found.append(f"{method.upper()} {path}: parameter {p['name']!r} is declared in: path")
    found += [f"operationId {i!r} is used {n} times" for i, n in ids.items() if n > 1]
    if not spec.get("servers"):
        found.append("no servers")
    return found


def main():
    spec = json.load(open(sys.argv[1]))
    found = problems(spec)
    for p in found:
        print(p)
    if found:
        sys.exit(1)
    print(f"{sys.argv[1]}: valid OpenAPI {spec.get('openapi')}, {len(spec['paths'])} paths")


if __name__ == "__main__":
    main()
