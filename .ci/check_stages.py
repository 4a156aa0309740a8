#!/usr/bin/python3
"""Checks that .ci/test's stages, which select tests by label, leave no test out.

Usage: check_stages.py SANITIZED_BUILD RELEASE_BUILD RELEASE_LABELS_REGEX

The sanitized tree builds every test (but the ones only a release build has); each must
carry a label. The release tree builds `release_stage` only (cmake/release_stage.cmake):
a test binary it did not build shows as a `<target>_NOT_BUILT` placeholder, and that is
right only if none of the binary's tests carries a release-stage label. A test the
sanitized tree lacks must be built in the release tree.
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


def main():
    sanitized, release, stage_labels = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])
    errors = []
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
            if binary.startswith(os.path.abspath(release)) and not os.path.exists(binary):
                errors.append(f"{name}: {binary} was not built")
    if errors:
        sys.exit("\n".join(errors))
    print(f"{len(rel)} entries in the release tree, {ran} of them in the release stage; "
          "every test labelled and in a stage")


if __name__ == "__main__":
    main()
