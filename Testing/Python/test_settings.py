"""Property names, refusals and "each error once", in pvpython.

    pvpython test_settings.py --plugin SparseGrid.so --pvpython pvpython

1. pvpython names: ParaView names a property after its XML label without spaces and
   punctuation (paraview.make_name_valid). The optimisation switches have friendly labels that
   keep the papers' names, e.g. "Hoist Level Vector (inv1)" -> HoistLevelVectorinv1; the old
   label-derived names (inv1, ChunkSize, LevelLimits) are gone; each renamed property's
   documentation (its tooltip) names the paper's term; the XML names that state files use are
   unchanged.
2. Invalid values are refused with an error naming the property and the value, and the output is
   empty: nothing is silently clamped or reinterpreted.
3. Each error once: a child pvpython runs each failure through what ParaView does after an Apply
   (update, show in a view, render, update again) and the parent counts the messages on the
   child's stderr: the refusal exactly once, never VTK's generic "returned failure" line for
   Resample To Image, and no stale "outside the whole extent" error once the value is
   corrected; breaking it again shows the message again (once).
Needs an X display for the render view (CTest runs it through Testing/with-display.sh).
"""
import argparse
import re
import shutil
import subprocess
import sys

failures = []


def check(condition, message):
    print(("ok:     " if condition else "FAILED: ") + message)
    if not condition:
        failures.append(message)


# Friendly label -> paper name kept in it, per proxy.
RENAMED = {
    "SparseGridHierarchize": {
        "inv1": "Hoist Level Vector (inv1)",
        "inv2": "Parent Offsets Per Block (inv2)",
        "inv3": "Constant-Time Parent Index (inv3)",
        "inv4": "Parent Tables Per Level (inv4)",
        "ichg1": "One Task Per Pole Family (ichg1)",
        "ichg2": "Points Loop Inside Blocks (ichg2)",
        "vec1": "Transposed Point Tiles (vec1)",
        "sred1": "Shift-Based Indexing (sred1)",
        "ChunkSize": "Evaluation Chunk Size",
        "LevelLimits": "Level Limits (X, Y, Z)",
    },
    "SparseGridReconstruct": {"ChunkSize": "Evaluation Chunk Size"},
    "SparseGridResampleToImage": {"ChunkSize": "Evaluation Chunk Size"},
}
# Words the tooltip must contain (the paper's term).
PAPER_TERMS = {"inv1": "inv1", "inv2": "inv2", "inv3": "inv3", "inv4": "inv4", "ichg1": "ichg1",
               "ichg2": "ichg2", "vec1": "vec1", "sred1": "sred1", "ChunkSize": "chunk size",
               "LevelLimits": "level limits"}


def expected_name(label):
    """The rule of paraview.make_name_valid, written out here: letters, digits and '_' kept."""
    name = "".join(c for c in label if c.isascii() and (c.isalnum() or c == "_"))
    return name if name[:1].isalpha() else "a" + name


def check_names(plugin):
    from paraview.simple import LoadPlugin, Wavelet

    constructors = globals()  # LoadPlugin adds the plugin's proxies to this namespace
    LoadPlugin(plugin, remote=False, ns=constructors)
    wavelet = Wavelet()
    for proxy_name, renamed in RENAMED.items():
        if proxy_name == "SparseGridHierarchize":
            proxy = constructors[proxy_name](Input=wavelet)
        elif proxy_name == "SparseGridReconstruct":
            proxy = constructors[proxy_name](Input=wavelet, Source=wavelet)
        else:
            proxy = constructors[proxy_name](Input=wavelet)
        names = proxy.ListProperties()
        for xml_name, label in renamed.items():
            name = expected_name(label)
            check(name in names, "%s: %r is the pvpython name of label %r" % (proxy_name, name, label))
            check(xml_name not in names or xml_name == name,
                  "%s: the jargon name %r is no longer a pvpython name" % (proxy_name, xml_name))
            smproperty = proxy.SMProxy.GetProperty(xml_name)
            check(smproperty is not None and smproperty.GetXMLLabel() == label,
                  "%s: XML name %r kept (state files), labelled %r" % (proxy_name, xml_name, label))
            if smproperty is not None:
                doc = smproperty.GetDocumentation()
                text = doc.GetDescription() if doc else ""
                check(PAPER_TERMS[xml_name].lower() in " ".join(text.split()).lower(),
                      "%s: the tooltip of %r names the paper's %r"
                      % (proxy_name, label, PAPER_TERMS[xml_name]))
        # Setting through the new name reaches the same property.
        if proxy_name == "SparseGridHierarchize":
            proxy.HoistLevelVectorinv1 = 0
            proxy.LevelLimitsXYZ = [3, 2, 1]
            check(proxy.SMProxy.GetProperty("inv1").GetElement(0) == 0
                  and [proxy.SMProxy.GetProperty("LevelLimits").GetElement(i) for i in range(3)]
                  == [3, 2, 1], "Hierarchize: the new names set the properties")
        proxy.EvaluationChunkSize = 77
        check(proxy.SMProxy.GetProperty("ChunkSize").GetElement(0) == 77,
              "%s: EvaluationChunkSize sets ChunkSize" % proxy_name)
    level = constructors["SparseGridHierarchize"](Input=wavelet).SMProxy.GetProperty("Level")
    text = " ".join(level.GetDocumentation().GetDescription().split())
    check(text.startswith("0 (the default) means automatic"),
          "Level's tooltip starts with what 0 means: %r" % text[:60])


# Each scenario of the child: (name, what to do). `r` is a Resample To Image of a compressed
# 17^3 Wavelet; every scenario is shown in a render view and rendered, as Apply does.
CHILD = r'''
import sys
from paraview.simple import *
LoadPlugin(sys.argv[1], remote=False, ns=globals())


def mark(text):
    sys.stderr.write("@@ " + text + "\n")
    sys.stderr.flush()


wavelet = Wavelet(WholeExtent=[-8, 8, -8, 8, -8, 8])
compressed = SparseGridHierarchize(Input=wavelet, Scalars=["RTData"])
compressed.UpdatePipeline()
view = CreateRenderView()


def apply(source):
    """What ParaView does for Apply: update, show, render; then the Information panel."""
    source.UpdatePipeline()
    Show(source, view)
    Render(view)
    source.UpdatePipeline()
    Render(view)
    data = servermanager.Fetch(source)
    mark("points %d" % data.GetNumberOfPoints())
    Hide(source, view)


def resample(**settings):
    r = SparseGridResampleToImage(Input=compressed, SamplingDimensions=[5, 5, 5])
    for key, value in settings.items():
        setattr(r, key, value)
    return r


scenarios = [
    ("huge", dict(SamplingDimensions=[100000, 100000, 100000])),
    ("inverted", dict(UseInputBounds=0, SamplingBounds=[1, 0, 0, 1, 0, 1])),
    ("nan-bounds", dict(UseInputBounds=0, SamplingBounds=[0, float("nan"), 0, 1, 0, 1])),
    ("dimensions", dict(SamplingDimensions=[0, 5, 5])),
    ("lod-low", dict(LevelOfDetail=-1)),
    ("lod-high", dict(LevelOfDetail=65)),
    ("chunk", dict(EvaluationChunkSize=0)),
    ("threads", dict(NumberOfThreads=-1)),
]
for name, settings in scenarios:
    mark("scenario " + name)
    apply(resample(**settings))

# The enumeration's names are all pvpython accepts; a state file or C++ can give any number.
mark("scenario backend")
r = resample()
r.SMProxy.GetProperty("Backend").SetElement(0, 5)
r.SMProxy.UpdateVTKObjects()
apply(r)

mark("scenario not-a-representation")
apply(SparseGridResampleToImage(Input=Sphere(), SamplingDimensions=[5, 5, 5]))

# Corrected after a failure, broken again, corrected again.
r = resample(SamplingDimensions=[100000, 100000, 100000])
mark("scenario cycle-broken")
apply(r)
mark("scenario cycle-fixed")
r.SamplingDimensions = [10, 10, 10]
apply(r)
mark("scenario cycle-broken-again")
r.SamplingDimensions = [100000, 100000, 100000]
apply(r)
mark("scenario cycle-fixed-again")
r.SamplingDimensions = [10, 11, 12]
apply(r)

# Hierarchize refuses values out of range instead of clamping them.
for name, settings in [("level-low", dict(ErrorBoundMode="Off", Level=-5)),
                       ("level-high", dict(ErrorBoundMode="Off", Level=91)),
                       ("limits-high", dict(ErrorBoundMode="Off", LevelLimitsXYZ=[31, 0, 0])),
                       ("limits-low", dict(ErrorBoundMode="Off", LevelLimitsXYZ=[-5, 0, 0])),
                       ("chunk", dict(EvaluationChunkSize=0)),
                       ("threads", dict(NumberOfThreads=-2)),
                       ("bound", dict(ErrorBound=-1.0))]:
    mark("scenario hierarchize-" + name)
    h = SparseGridHierarchize(Input=wavelet, Scalars=["RTData"], **settings)
    h.UpdatePipeline()
    mark("points %d arrays %d" % (servermanager.Fetch(h).GetNumberOfPoints(),
                                  servermanager.Fetch(h).GetFieldData().GetNumberOfArrays()))
# Sparse Grid Reconstruct refuses the same kind of values, and shows each failure once.
for name, settings in [("lod-high", dict(LevelOfDetail=65)), ("chunk", dict(EvaluationChunkSize=0)),
                       ("threads", dict(NumberOfThreads=-1))]:
    mark("scenario reconstruct-" + name)
    apply(SparseGridReconstruct(Source=compressed, Input=wavelet, **settings))
mark("scenario reconstruct-fine")
apply(SparseGridReconstruct(Source=compressed, Input=wavelet))
mark("end")
'''

# Scenario -> (message that must appear exactly once, points of the output).
EXPECTED = {
    "huge": ("The output is too large for this process: an image of 100000 x 100000 x 100000 "
             "points needs", 0),
    "inverted": ("Sampling Bounds are inverted along x: the minimum 1 is larger than the maximum 0", 0),
    "nan-bounds": ("Sampling Bounds must be finite", 0),
    "dimensions": ("Sampling Dimensions must be at least 1 along every axis (got 0 5 5)", 0),
    "lod-low": ("Level Of Detail must be 0 to 64 (0: every level) (got -1)", 0),
    "lod-high": ("Level Of Detail must be 0 to 64 (0: every level) (got 65)", 0),
    "chunk": ("Evaluation Chunk Size must be 1 to 1048576 (got 0)", 0),
    "threads": ("Number Of Threads must be 0 to 4096 (0: all hardware threads) (got -1)", 0),
    "backend": ("Backend must be 0 to 2 (0 Auto, 1 CPU, 2 CUDA) (got 5)", 0),
    "not-a-representation": ("Invalid compressed representation", 0),
    "cycle-broken": ("The output is too large for this process", 0),
    "cycle-fixed": (None, 1000),
    "cycle-broken-again": ("The output is too large for this process", 0),
    "cycle-fixed-again": (None, 1320),
    "reconstruct-lod-high": ("Level Of Detail must be 0 to 64 (0: every level) (got 65)", 0),
    "reconstruct-chunk": ("Evaluation Chunk Size must be 1 to 1048576 (got 0)", 0),
    "reconstruct-threads": ("Number Of Threads must be 0 to 4096 (0: all hardware threads) (got -1)",
                            0),
    "reconstruct-fine": (None, 17 * 17 * 17),
}
HIERARCHIZE = {
    "hierarchize-level-low": "Level must be 0 (automatic) or 1 to 90 (got -5)",
    "hierarchize-level-high": "Level must be 0 (automatic) or 1 to 90 (got 91)",
    "hierarchize-limits-high": "level cap 31 on axis 0",
    "hierarchize-bound": "ErrorBound must be a positive, finite number",
    "hierarchize-limits-low": "Level Limits (x) must be 0 or -1 (automatic) or 1 to 30 (got -5)",
    "hierarchize-chunk": "Evaluation Chunk Size must be 1 to 1048576 (got 0)",
    "hierarchize-threads": "Number Of Threads must be 0 to 4096 (0: all hardware threads) (got -2)",
}


def run_child(pvpython, plugin):
    """The child pvpython on this display; again on a display of its own when the X server
    refused the connection (several people's `xvfb-run -a` on one machine can pick the same
    display number, and then the cookie is someone else's)."""
    command = [pvpython, "-c", CHILD, plugin]
    for attempt in range(3):
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, timeout=300)
        if "bad X server connection" not in result.stderr or not shutil.which("xvfb-run"):
            return result
        print("the X server refused the child's connection; again under its own xvfb-run")
        command = [shutil.which("xvfb-run"), "-a", "-s", "-screen 0 1280x1024x24", pvpython,
                   "-c", CHILD, plugin]
    return result


def check_errors_once(pvpython, plugin):
    result = run_child(pvpython, plugin)
    err = result.stderr
    check(result.returncode == 0 and "@@ end" in err,
          "the child pvpython ran every scenario (exit %d)" % result.returncode)
    sections = {}
    for block in err.split("@@ scenario ")[1:]:
        name, _, body = block.partition("\n")
        sections[name.strip()] = body
    for name, (message, points) in EXPECTED.items():
        body = sections.get(name, "")
        # One message = one "ERR|" line of VTK's logger on pvpython's stderr.
        errors = [line for line in body.splitlines() if "ERR|" in line]
        found = re.search(r"@@ points (\d+)", body)
        check(found is not None and int(found.group(1)) == points,
              "%s: the output has %d points (%s)" % (name, points, found.group(1) if found else None))
        if message is None:
            check(not errors, "%s: no error once the value is corrected: %s" % (name, errors[:2]))
            continue
        count = body.count(message)
        check(count == 1, "%s: %r shown once (%d times)" % (name, message, count))
        check(len(errors) == 1, "%s: exactly one error line in all (%d): %s"
              % (name, len(errors), [e[-150:] for e in errors]))
        check("returned failure" not in body,
              "%s: no generic 'returned failure' line from the executive" % name)
    for name, message in HIERARCHIZE.items():
        body = sections.get(name, "")
        check(message in body, "%s: refused with %r" % (name, message))
        found = re.search(r"@@ points (\d+) arrays (\d+)", body)
        check(found is not None and found.group(2) == "0",
              "%s: the output is empty, not a reinterpreted grid" % name)
    if failures:
        print("---- child's stderr (last 4000 characters)\n" + err[-4000:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--pvpython", required=True)
    args = parser.parse_args()
    check_names(args.plugin)
    check_errors_once(args.pvpython, args.plugin)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
