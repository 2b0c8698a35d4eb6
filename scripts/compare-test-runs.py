#!/usr/bin/env python3
"""Compares two runs of the suite (Swift Testing's JUnit XML, `swift test --xunit-output`).

A test whose outcome differs between two runs of the same code is flaky: that is a defect,
whichever run it failed in. Prints every test that failed in either run, or ran in one run and
not the other, and exits 1 if there is any; prints the counts and exits 0 otherwise.

    scripts/compare-test-runs.py first.xml second.xml
"""
import sys
import xml.etree.ElementTree as ElementTree


def outcomes(path):
    """{test id: "passed" | "failed" | "skipped"} for every test case in the file."""
    result = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}/{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        # A parameterized test appears once per case under one name: one failed case fails it.
        if result.get(name) != "failed":
            result[name] = outcome
    return result


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    first, second = outcomes(sys.argv[1]), outcomes(sys.argv[2])
    problems = []
    for name in sorted(set(first) | set(second)):
        a, b = first.get(name, "absent"), second.get(name, "absent")
        if a != b or "failed" in (a, b):
            problems.append(f"  {name}: first run {a}, second run {b}")
    if not first or not second:
        problems.append("  a run reported no test at all")
    if problems:
        print("the two runs of the suite differ or failed:")
        print("\n".join(problems))
        sys.exit(1)
    counts = {outcome: sum(1 for value in first.values() if value == outcome) for outcome in ("passed", "skipped")}
    print(f"two runs of the suite agree: {counts['passed']} tests passed both times, {counts['skipped']} skipped (drills)")


if __name__ == "__main__":
    main()
