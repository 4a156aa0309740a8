"""What the deploy checks share: RFC 6902 patches as kustomize and kubectl apply them, and
the family names statlet documents (docs/metrics.md, docs/image-pulls.md)."""
import copy
import os


def json_patch(doc, ops):
    """`doc` with the RFC 6902 operations test, add, remove and replace applied; a failed
    test raises ValueError, as kustomize fails the build."""
    doc = copy.deepcopy(doc)

    def walk(path):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        return parent, (int(last) if isinstance(parent, list) and last != "-" else last)

    for op in ops:
        try:
            parent, key = walk(op["path"])
            current = parent[key] if op["op"] != "add" else None
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"{op['op']} {op['path']}: no such member ({e})")
        if op["op"] == "test":
            if current != op["value"]:
                raise ValueError(f"test {op['path']}: {current!r} is not {op['value']!r}")
        elif op["op"] == "remove":
            del parent[key]
        elif op["op"] == "replace":
            parent[key] = op["value"]
        elif op["op"] == "add":
            if isinstance(parent, list):
                parent.insert(len(parent) if key == "-" else key, op["value"])
            else:
                parent[key] = op["value"]
        else:
            raise ValueError(f"unsupported op {op['op']}")
    return doc


def documented_families(root):
    """Every family statlet serves: the family table and statlet's own instrumentation in
    docs/metrics.md (not the table of cAdvisor families it does not serve), and the pull
    families of docs/image-pulls.md."""
    names = set()
    for doc in ("docs/metrics.md", "docs/image-pulls.md"):
        served = True
        for line in open(os.path.join(root, doc)):
            if "families statlet does not serve" in line:
                served = False
            elif "own instrumentation" in line:
                served = True
            if served and line.startswith("| `"):
                names.add(line.split("`")[1].split("{")[0])
    return names
