"""slime's real patch stack on a real bump: failing hunks judged alone, on the stack, and by real
`git apply --check --reject` of each patch in order on the unpacked target wheel.

Usage: python benchmarks/patch_stack_slime.py SLIME_CHECKOUT OLD NEW (wheels from the cache;
e.g. `git -C slime archive aaf5c2092^ | tar -x -C /tmp/slime` with 0.5.13 0.5.15.post1).
"""
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from sglang_contracts.infra.cache import cache_root
from sglang_contracts.sources import open_release
from sglang_contracts.patch.stack import patch_stacks
from sglang_contracts.patch.gitapply import check_patch, check_stack, APPLIES, UNKNOWN
from sglang_contracts.patch.release import tree_reader

project, old_v, new_v = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
stacks = patch_stacks(project)
stack = stacks.stacks[0]
print("stack", stack.source, [p.rsplit('/', 1)[1] for p in stack.patches], "| unapplied", len(stacks.unapplied))
patches = [stacks.patches[p] for p in stack.patches]
rel = {v: open_release(v, sglang_repo=None, cache=cache_root()) for v in (old_v, new_v)}

def fails(verdicts):
    return [v.status != APPLIES and v.status != UNKNOWN for v in verdicts]

alone = {v: [check_patch(p, *tree_reader(rel[v].tree)) for p in patches] for v in rel}
stacked = {v: check_stack(patches, *tree_reader(rel[v].tree)).verdicts for v in rel}

def git_truth(version):
    wheel = next((cache_root() / "wheels").glob(f"sglang-{version}-*.whl"))
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        (tree / "python").mkdir(parents=True)
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.startswith("sglang/"):
                    z.extract(name, tree / "python")
        subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
        out = []
        for path, patch in zip(stack.patches, patches):
            text = (project / path).read_bytes()
            pf = Path(tmp) / "p.patch"
            pf.write_bytes(text)
            run = subprocess.run(["git", "apply", "--check", "--reject", "-v", str(pf)], cwd=tree, capture_output=True, text=True, errors="replace")
            failed_hunks = set(re.findall(r"^error: patch failed: (.+):(\d+)$", run.stderr, re.M))
            failed_files = set(re.findall(r"^error: (.+?): (?:No such file or directory|already exists in working directory|does not exist in index|removal patch leaves file contents)$", run.stderr, re.M))
            res = []
            for f in patch.files:
                p = f.new_path if f.is_new else f.old_path
                for h in f.hunks or [None]:
                    res.append(p in failed_files or (h is not None and (p, str(h.old_start)) in failed_hunks))
            out.append(res)
            subprocess.run(["git", "apply", "--reject", str(pf)], cwd=tree, capture_output=True)
            for rejected in tree.rglob("*.rej"):
                rejected.unlink()
        return out

truth = {v: git_truth(v) for v in rel}
total = sum(len(x) for x in truth[new_v])
for label, data in (("alone", alone), ("stack", stacked)):
    agree = {v: sum(a == b for p, t in zip(data[v], truth[v]) for a, b in zip(fails(p), t)) for v in rel}
    fail_new = sum(sum(fails(p)) for p in data[new_v])
    reported = sum(1 for po, pn in zip(data[old_v], data[new_v]) for o, n in zip(po, pn)
                   if o.status == APPLIES and n.status not in (APPLIES, UNKNOWN))
    broken_pin = sum(sum(fails(p)) for p in data[old_v])
    print(f"{label}: {total} hunks; fail on {new_v}: {fail_new}; fail on pin {old_v}: {broken_pin}; "
          f"reported as SGC901/902 errors (applied on pin, fail on target): {reported}; "
          f"agree with git-in-order: pin {agree[old_v]}/{total}, target {agree[new_v]}/{total}")
truth_fail = sum(sum(p) for p in truth[new_v])
truth_real = sum(1 for po, pn in zip(truth[old_v], truth[new_v]) for o, n in zip(po, pn) if not o and n)
print(f"git in order: fail on {new_v}: {truth_fail}; fail on pin: {sum(sum(p) for p in truth[old_v])}; applied on pin and fail on target: {truth_real}")
unk = sum(1 for p in stacked[new_v] for v in p if v.status == UNKNOWN)
print("not judged (SGC903) hunks:", unk, sorted({v.detail for p in stacked[new_v] for v in p if v.status == UNKNOWN}))
for label, data in (("alone", alone), ("stack", stacked)):
    judged = {v: [(a.status != APPLIES, b) for p, t in zip(data[v], truth[v]) for a, b in zip(p, t) if a.status != UNKNOWN] for v in rel}
    print(label, "agreement on judged hunks:", {v: f"{sum(x == y for x, y in judged[v])}/{len(judged[v])}" for v in rel})
print("outside:", sorted({v.file.path for p in stacked[new_v] for v in p if v.status == UNKNOWN}))
