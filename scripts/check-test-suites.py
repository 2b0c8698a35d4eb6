#!/usr/bin/env python3
"""Every top-level test suite declares `.testThreads`, so that no test blocks the cooperative pool.

A top-level type (struct, class, enum or actor at column 0) that holds a `@Test` or a nested
`@Suite` must carry `@Suite(.testThreads, ...)`; nested suites inherit it. Prints each suite that
does not and exits 1; prints the count and exits 0 otherwise.

    scripts/check-test-suites.py [Tests]
"""
import pathlib
import re
import sys

DECLARATION = re.compile(
    r"^((?:@Suite(?:\([^)]*\))? )?(?:(?:public|final|private|fileprivate|internal) )*)(struct|class|enum|actor|extension) (\w+)"
)


def suites(path):
    """(name, line number, attributes text, is an extension) of each top-level type holding tests."""
    lines = path.read_text().split("\n")
    index = 0
    while index < len(lines):
        match = DECLARATION.match(lines[index])
        if not match:
            index += 1
            continue
        end = index + 1
        single = lines[index].count("{") and lines[index].count("{") == lines[index].count("}")
        if not single:
            while end < len(lines) and lines[end] != "}":
                end += 1
        body = "\n".join(lines[index : end + 1])
        if "@Test" in body or "@Suite" in body:
            # The attributes: the declaration line's own and the lines above it up to a blank
            # line, a documentation comment or the end of the previous declaration.
            start = index
            while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith(("}", "///", "import ")):
                start -= 1
            attributes = "\n".join(lines[start : index + 1])
            yield match.group(3), index + 1, attributes, match.group(2) == "extension"
        index = end + 1


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "Tests")
    declared, extended, missing = {}, [], []
    for path in sorted(root.rglob("*.swift")):
        for name, line, attributes, is_extension in suites(path):
            if is_extension:
                extended.append(name)
            else:
                declared[name] = (path, line, ".testThreads" in attributes)
    for name, (path, line, ok) in sorted(declared.items()):
        if not ok:
            missing.append(f"  {path}:{line}: {name}")
    for name in extended:
        if name not in declared:
            missing.append(f"  extension {name}: its type is not declared as a suite in {root}")
    if missing:
        print("top-level suites without .testThreads (their tests would block the cooperative pool):")
        print("\n".join(missing))
        sys.exit(1)
    print(f"{len(declared)} top-level suites run on test threads")


if __name__ == "__main__":
    main()
