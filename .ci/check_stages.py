#!/usr/bin/python3
"""Checks that .ci/test's stages, which select tests by label, leave no test out.

Usage: check_stages.py SANITIZED_BUILD RELEASE_BUILD RELEASE_LABELS_REGEX

The sanitized tree builds every test (but the ones only a release build has); each must
carry a label. The release tree builds `release_stage` only (cmake/release_stage.cmake):
a test binary it did not build shows as a `<target>_NOT_BUILT` placeholder, and that is
right only if none of the binary's tests carries a release-stage label. A test the
sanitized tree lacks must be built in the release tree, and a test binary the release tree
builds must have a test in its stage (else release_stage builds it for nothing).

gtest_discover_tests (CMake 3.25) writes its PROPERTIES into set_tests_properties unquoted:
LABELS "live;release" there becomes the label "live" and a stray "release" that shifts every
property after it. Such a test keeps one label and silently leaves the release stage, so a
gtest_discover_tests call with more than one label is an error here.
"""
import json
import os
import re
import subprocess
import sys


def tests_of(build):
    out = subprocess.run(["ctest", "--test-dir", build, "-N", "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for t in json.loads(out)["tests"]:
        labels = []
        for p in t.get("properties", []):
            if p["name"] == "LABELS":
                labels = p["value"]
        command = t.get("command") or [""]
        rows.append((t["name"], labels, command[0]))
    return rows


def multi_label_discoveries(source_dir):
    """gtest_discover_tests calls whose LABELS value is a list: file:line of each."""
    found = []
    call = re.compile(r"gtest_discover_tests\((?:[^()]|\([^()]*\))*\)", re.S)
    listed = subprocess.run(["git", "-C", source_dir, "ls-files", "CMakeLists.txt", "*/CMakeLists.txt"],
                            check=True, capture_output=True, text=True).stdout.split()
    for rel in listed:
        text = open(os.path.join(source_dir, rel)).read()
        for m in call.finditer(text):
            if re.search(r'LABELS\s+"[^"]*;', m.group(0)):
                found.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}")
    return found


def main():
    sanitized, release, stage_labels = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])
    errors = []
    source_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for where in multi_label_discoveries(source_dir):
        errors.append(f"{where}: gtest_discover_tests with more than one label keeps only the first "
                      "(and shifts the properties after it): give the target one label")
    by_binary = {}
    sanitized_names = set()
    for name, labels, binary in tests_of(sanitized):
        sanitized_names.add(name)
        if name.endswith("_NOT_BUILT"):
            errors.append(f"{name}: not built in the sanitized tree")
        elif not labels:
            errors.append(f"{name}: no LABELS (the stages select by label)")
        by_binary.setdefault(os.path.basename(binary), []).append((name, labels))
    rel = tests_of(release)
    ran = 0
    staged_binaries, built_binaries = set(), set()
    for name, labels, binary in rel:
        if name.endswith("_NOT_BUILT"):
            target = name[: -len("_NOT_BUILT")]
            seen = by_binary.get(target)
            if not seen:
                errors.append(f"{target}: its tests are in no stage (not in the sanitized tree, "
                              "not built by release_stage)")
                continue
            for t, tl in seen:
                if any(stage_labels.fullmatch(l) for l in tl):
                    errors.append(f"{t} (label {','.join(tl)}) belongs to the release stage, but "
                                  f"release_stage does not build {target}")
        elif not labels:
            errors.append(f"{name}: no LABELS (the stages select by label)")
        elif not any(stage_labels.fullmatch(l) for l in labels):
            if name not in sanitized_names:
                errors.append(f"{name} (label {','.join(labels)}): only the release tree has it, "
                              "and the release stage does not select its labels")
        else:
            ran += 1
            staged_binaries.add(binary)
            if binary.startswith(os.path.abspath(release)) and not os.path.exists(binary):
                errors.append(f"{name}: {binary} was not built")
        if (not name.endswith("_NOT_BUILT") and binary.startswith(os.path.abspath(release))
                and os.path.exists(binary)):
            built_binaries.add(binary)
    for binary in sorted(built_binaries - staged_binaries):
        errors.append(f"{os.path.relpath(binary, release)}: release_stage builds it, but none of its "
                      "tests is in the release stage")
    if errors:
        sys.exit("\n".join(errors))
    print(f"{len(rel)} entries in the release tree, {ran} of them in the release stage; "
          "every test labelled and in a stage")


if __name__ == "__main__":
    main()
