#!/usr/bin/env python3
"""tools/check-layers against a tree of tiny sources built here with cc:
a downward reference passes and an upward one is reported, as are a
sibling called against the folder's order, a layer used outside a
`uses` list, a global defined twice in one library and a library
export without weir_ (weir__ passes, and --no-prefix skips the check);
in a layer marked nocycles, files that use each other round a ring fail
with the files named while a chain passes, and a ring in a layer without
the mark is only listed, with --all-cycles.

    test_check_layers.py CHECK_LAYERS   (CC names the compiler; default cc)
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile

SOURCES = {
    # lib/core: the lowest layer; one export lacks weir_, one is internal
    "lib/core/a.c": "int weir_a(void) { return 1; }\n"
                    "int core_helper(void) { return 2; }\n"
                    "int weir__internal(void) { return 3; }\n",
    # lib/io uses lib/core: downward, fine
    "lib/io/b.c": "int weir_a(void);\n"
                  "int weir_b(void) { return weir_a(); }\n",
    # lib/io/d.c is listed after b.c in lib/io's order, so it may use b.c
    "lib/io/d.c": "int weir_b(void);\n"
                  "int weir_d(void) { return weir_b(); }\n",
    # daemon/sys may use lib/core only
    "daemon/sys/log.c": "int weir_a(void);\n"
                        "int log_line(void) { return weir_a(); }\n",
    # a daemon file no line names: unassigned, not an error
    "daemon/extra.c": "int log_line(void);\n"
                      "int extra(void) { return log_line(); }\n",
}

# Each case: extra sources on top of SOURCES, and what the output must
# and must not hold.
# Three lib/core files using each other round a ring, and two lib/xform
# files using each other both ways.
RING = {
    "lib/core/c1.c": "int weir_c2(void);\n"
                     "int weir_c1(void) { return weir_c2(); }\n",
    "lib/core/c2.c": "int weir_c3(void);\n"
                     "int weir_c2(void) { return weir_c3(); }\n",
    "lib/core/c3.c": "int weir_c1(void);\n"
                     "int weir_c3(int n) { return n ? weir_c1() : 0; }\n",
}
BOTH_WAYS = {
    "lib/xform/m1.c": "int weir_m2(void);\n"
                      "int weir_m1(void) { return weir_m2(); }\n",
    "lib/xform/m2.c": "int weir_m1(void);\n"
                      "int weir_m2(int n) { return n ? weir_m1() : 0; }\n",
}

CASES = [
    ("downward only", {}, ["--no-prefix"], 0,
     ["layers: ok", "unassigned, in daemon: 1 files: daemon/extra.c"],
     ["->"]),
    ("upward", {"lib/core/up.c": "int weir_b(void);\n"
                                 "int weir_up(void) { return weir_b(); }\n"},
     ["--no-prefix"], 1,
     ["lib/core/up.c -> weir_b -> lib/io/b.c (lib/io is above lib/core)",
      "layers: FAILED, 1 problems"],
     ["lib/io/b.c -> weir_a", "layers: ok"]),
    ("sibling order", {"lib/io/b2.c": "int weir_d(void);\n"
                                      "int weir_b2(void) { return weir_d(); }\n"},
     ["--no-prefix"], 1,
     ["lib/io/b2.c -> weir_d -> lib/io/d.c (in lib/io, b2.c comes before "
      "d.c)"],
     ["lib/io/d.c -> weir_b"]),
    ("outside uses", {"daemon/sys/sig.c": "int weir_b(void);\n"
                                          "int sig(void) { return weir_b(); }\n"},
     ["--no-prefix"], 1,
     ["daemon/sys/sig.c -> weir_b -> lib/io/b.c (daemon/sys uses only "
      "lib/core)"],
     ["daemon/sys/log.c ->"]),
    ("defined twice", {"lib/xform/twice.c": "int weir_a(void) { return 4; }\n"},
     ["--no-prefix"], 1,
     ["weir_a is defined in 2 objects of lib/libweir.a.p: lib/core/a.c, "
      "lib/xform/twice.c"],
     []),
    ("prefix", {}, [], 1,
     ["core_helper (T) lacks weir_", "without weir_",
      "layers: FAILED, 1 problems"],
     ["weir__internal", "weir_a (T)"]),
    ("acyclic folder", {"lib/core/x.c": "int weir_a(void);\n"
                                        "int weir_x(void) { return weir_a(); }\n",
                        "lib/core/y.c": "int weir_x(void);\n"
                                        "int weir_y(void) { return weir_x(); }\n"},
     ["--no-prefix", "--all-cycles"], 0,
     ["layers: ok"],
     ["call cycle"]),
    ("cycle", RING, ["--no-prefix"], 1,
     ["call cycle in lib/core between 3 files: lib/core/c1.c "
      "lib/core/c2.c lib/core/c3.c (c1.c -> weir_c2 -> c2.c -> weir_c3 "
      "-> c3.c -> weir_c1 -> c1.c)",
      "layers: FAILED, 1 problems"],
     ["lib/core/a.c", "listed only"]),
    ("cycle outside nocycles", BOTH_WAYS, ["--no-prefix"], 0,
     ["layers: ok"],
     ["call cycle"]),
    ("all cycles listed", BOTH_WAYS, ["--no-prefix", "--all-cycles"], 0,
     ["call cycle in lib/xform between 2 files: lib/xform/m1.c "
      "lib/xform/m2.c (m1.c -> weir_m2 -> m2.c -> weir_m1 -> m1.c), "
      "listed only: lib/xform is not nocycles",
      "layers: ok"],
     []),
]

LAYERS = """\
# lowest first
lib/core nocycles
lib/io
    b.c
    b2.c
    d.c
lib/xform
daemon/sys uses lib/core
rest daemon
"""


def run_case(cc, tool, tmp, extra, flags):
    src_root = os.path.join(tmp, "src")
    build = os.path.join(tmp, "build")
    sources = dict(SOURCES, **extra)
    commands, lib_objs = [], []
    for rel, text in sources.items():
        path = os.path.join(src_root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        # Named the way meson names them: the target's .p folder, the
        # source's subfolders joined with _.
        if rel.startswith("lib/"):
            out = "lib/libweir.a.p/" + rel[4:].replace("/", "_") + ".o"
            lib_objs.append(out)
        else:
            out = "daemon/weir.p/" + rel[7:].replace("/", "_") + ".o"
        os.makedirs(os.path.join(build, os.path.dirname(out)),
                    exist_ok=True)
        argv = cc + ["-c", "-fPIC", "-o", out, os.path.join("..", "src", rel)]
        subprocess.run(argv, cwd=build, check=True)
        commands.append({"directory": build, "file": "../src/" + rel,
                         "output": out, "command": shlex.join(argv)})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f)
    subprocess.run(["ar", "rcs", "lib/libweir.a"] + lib_objs, cwd=build,
                   check=True)
    layers = os.path.join(tmp, "layers.txt")
    with open(layers, "w") as f:
        f.write(LAYERS)
    r = subprocess.run([sys.executable, tool, "--layers", layers, "--root",
                        src_root] + flags + [build],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    tool = sys.argv[1]
    cc = shlex.split(os.environ.get("CC", "cc"))
    failed = 0
    for name, extra, flags, want_rc, must, must_not in CASES:
        with tempfile.TemporaryDirectory(prefix="weir-layers-") as tmp:
            rc, out = run_case(cc, tool, tmp, extra, flags)
        bad = []
        if rc != want_rc:
            bad.append(f"exit {rc}, expected {want_rc}")
        bad += [f"lacks '{m}'" for m in must if m not in out]
        bad += [f"holds '{m}'" for m in must_not if m in out]
        print(f"{'ok' if not bad else 'FAIL'}: {name}")
        if bad:
            failed += 1
            print("  " + "\n  ".join(bad) + "\n--- output:\n" + out)
    print(f"{len(CASES) - failed} of {len(CASES)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
