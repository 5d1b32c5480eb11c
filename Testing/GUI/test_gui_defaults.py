"""What a user sees with the filters' defaults, checked in pvpython.

    pvpython test_gui_defaults.py --plugin SparseGrid.so --case CASE [--out DIR]

Cases:
  compare     Sparse Grid Reconstruct with the original as Input: Add Error Arrays gives
              RTData_error = reconstructed - original (numpy reference), the active scalars,
              within the bound; Clamp To Input Range equals numpy.clip of the unclamped values
              to the original's range and never increases the error.
  laplacian   Laplacian with its defaults on a column mesh: the result is the active scalars
              (the view colors by it), no NaN (Zero Flux), equal to the NaN-boundary result
              wherever that one is defined; shown as Surface.
  inputs      Image Correlation / Image Displacement: two required input ports (the rule of
              ParaView's Filters menu for opening the input dialog); their outputs shown as
              Surface colored by the active scalars, as is Reconstruct's.
  errors      Each mistake of every filter family shows its message once (a child pvpython
              updates, shows and renders each one, as Apply does; its stderr is counted).
  reorder     Reorder Mesh reports the mean point-id span of the cells before and after
              (numpy reference on a shuffled mesh); GPS makes it smaller.
  levels      The .sgrid reader's Level Of Detail range is the file's levels; level 1 is not
              an all-zero image and is within the bound reported for it.
Needs an X display for the render view (CTest runs it through Testing/with-display.sh).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(condition, message):
    print(("ok:     " if condition else "FAILED: ") + message)
    if not condition:
        failures.append(message)


def load(plugin):
    """paraview.simple with the plugin's proxies added (as LoadPlugin's ns= does)."""
    import types
    import paraview.simple as simple
    names = dict(vars(simple))
    simple.LoadPlugin(plugin, remote=False, ns=names)
    return types.SimpleNamespace(**names)


def point_array(data, name):
    from vtkmodules.util.numpy_support import vtk_to_numpy
    array = data.GetPointData().GetArray(name)
    return None if array is None else vtk_to_numpy(array).astype("float64")


def field_value(data, name, index=0):
    array = data.GetFieldData().GetArray(name)
    return None if array is None else array.GetComponent(index, 0)


# ------------------------------------------------------------------------------------------------
def case_compare(simple):
    import numpy as np
    wavelet = simple.Wavelet(WholeExtent=[-12, 12, -12, 12, -12, 12])
    original = point_array(simple.servermanager.Fetch(wavelet), "RTData")
    low, high = original.min(), original.max()
    for bound in (1e-3, 1e-1):
        compressed = simple.SparseGridHierarchize(Input=wavelet, Scalars=["RTData"],
                                                  ErrorBound=bound)
        absolute = field_value(simple.servermanager.Fetch(compressed),
                               "SparseGrid.AbsoluteErrorBound")
        plain = simple.SparseGridReconstruct(Source=compressed, Input=wavelet)
        errors = simple.SparseGridReconstruct(Source=compressed, Input=wavelet, AddErrorArrays=1)
        clamped = simple.SparseGridReconstruct(Source=compressed, Input=wavelet, AddErrorArrays=1,
                                               ClampToInputRange=1)
        p = simple.servermanager.Fetch(plain)
        e = simple.servermanager.Fetch(errors)
        c = simple.servermanager.Fetch(clamped)
        rec = point_array(p, "RTData")
        check(point_array(p, "RTData_error") is None,
              "bound %g: no error array unless asked for" % bound)
        err = point_array(e, "RTData_error")
        check(err is not None and e.GetPointData().GetScalars().GetName() == "RTData_error",
              "bound %g: RTData_error added and the active scalars" % bound)
        # The reference: reconstructed minus original, computed here (float32 rounding).
        tolerance = 1e-6 * max(abs(low), abs(high))
        check(err is not None and np.allclose(err, rec - original, rtol=0, atol=tolerance),
              "bound %g: RTData_error = reconstructed - original (max deviation %.3g)"
              % (bound, np.abs(err - (rec - original)).max() if err is not None else -1))
        check(err is not None and np.abs(err).max() <= absolute * (1 + 1e-6),
              "bound %g: max |error| %.6g <= bound %.6g" % (bound, np.abs(err).max(), absolute))
        crec = point_array(c, "RTData")
        cerr = point_array(c, "RTData_error")
        check(np.allclose(crec, np.clip(rec, low, high), rtol=0, atol=tolerance),
              "bound %g: clamped values = numpy.clip(unclamped, %.4g, %.4g)" % (bound, low, high))
        check(crec.min() >= low - tolerance and crec.max() <= high + tolerance,
              "bound %g: clamped range %.6g..%.6g inside the original's %.6g..%.6g"
              % (bound, crec.min(), crec.max(), low, high))
        check(np.all(np.abs(cerr) <= np.abs(rec - original) + tolerance),
              "bound %g: the clamp never increases the error" % bound)
        if bound == 1e-1:
            # The loose bound must leave the range somewhere, or the clamp was not exercised.
            outside = int(np.sum((rec < low) | (rec > high)))
            changed = int(np.sum(np.abs(crec - rec) > tolerance))
            check(outside > 0 and changed == outside,
                  "bound %g: %d values outside the original's range, %d clamped"
                  % (bound, outside, changed))
        for proxy in (plain, errors, clamped, compressed):
            simple.Delete(proxy)


# ------------------------------------------------------------------------------------------------
def case_laplacian(simple):
    import numpy as np
    from vtkmodules.util.numpy_support import vtk_to_numpy
    mesh = simple.ColumnMesh()
    mesh.UpdatePipeline()  # as Apply does before the next filter is chosen
    lap = simple.Laplacian(Input=mesh)
    association, array = list(lap.Scalars)
    data = simple.servermanager.Fetch(lap)
    attributes = data.GetCellData() if association == "CELLS" else data.GetPointData()
    active = attributes.GetScalars()
    name = active.GetName() if active is not None else None
    check(name == array + "_laplacian",
          "the result of %s %s (%s) is the active scalars" % (association, array, name))
    values = vtk_to_numpy(active).astype("float64") if active is not None else np.array([np.nan])
    check(np.all(np.isfinite(values)), "default boundary: no NaN (%d values)" % values.size)
    reference = simple.Laplacian(Input=mesh, Scalars=[association, array], Boundary="NaN")
    ref_data = simple.servermanager.Fetch(reference)
    ref = vtk_to_numpy((ref_data.GetCellData() if association == "CELLS"
                        else ref_data.GetPointData()).GetArray(name))
    inside = np.isfinite(ref)
    check(0 < inside.sum() < ref.size and np.allclose(values[inside], ref[inside], rtol=1e-9,
                                                      atol=1e-12),
          "equal to the NaN-boundary result on its %d defined values" % inside.sum())
    view = simple.CreateRenderView()
    shown = simple.Show(lap, view)
    simple.Render(view)
    check(shown.Representation == "Surface", "shown as %s" % shown.Representation)
    check(list(shown.ColorArrayName)[1] == name,
          "colored by %s on Show" % list(shown.ColorArrayName))
    simple.Delete(view)


# ------------------------------------------------------------------------------------------------
def required_inputs(proxy):
    """pqPipelineFilter::getRequiredInputPorts: input properties without an Optional hint.
    ParaView's Filters menu opens the input dialog when there are more than one."""
    names = []
    iterator = proxy.SMProxy.NewPropertyIterator()
    iterator.Begin()
    while not iterator.IsAtEnd():
        prop = iterator.GetProperty()
        if prop.IsA("vtkSMInputProperty"):
            hints = prop.GetHints()
            if not (hints and hints.FindNestedElementByName("Optional")):
                names.append(iterator.GetKey())
        iterator.Next()
    return names


def case_inputs(simple):
    # A 2-D image and a copy moved by (3, -2) samples: the correlation peak and displacements.
    image = simple.Wavelet(WholeExtent=[-32, 31, -32, 31, 0, 0])
    moved = simple.Transform(Input=image)
    moved.Transform.Translate = [3, -2, 0]
    moved_image = simple.ResampleWithDataset(SourceDataArrays=moved, DestinationMesh=image)
    view = simple.CreateRenderView()
    for label, make in (("Image Correlation", simple.ImageCorrelation),
                        ("Image Displacement", simple.ImageDisplacement)):
        filt = make(Input=moved_image, Reference=image, Scalars=["POINTS", "RTData"])
        check(sorted(required_inputs(filt)) == ["Input", "Reference"],
              "%s: required inputs %s (the input dialog opens)" % (label, required_inputs(filt)))
        shown = simple.Show(filt, view)
        simple.Render(view)
        data = simple.servermanager.Fetch(filt)
        scalars = data.GetPointData().GetScalars()
        check(shown.Representation == "Surface",
              "%s: shown as %s" % (label, shown.Representation))
        check(scalars is not None and list(shown.ColorArrayName)[1] == scalars.GetName(),
              "%s: colored by %s" % (label, list(shown.ColorArrayName)))
        simple.Hide(filt, view)
    compressed = simple.SparseGridHierarchize(Input=image, Scalars=["RTData"])
    rec = simple.SparseGridReconstruct(Source=compressed, Input=image)
    check(sorted(required_inputs(rec)) == ["Input", "Source"],
          "Sparse Grid Reconstruct: required inputs %s" % required_inputs(rec))
    shown = simple.Show(rec, view)
    check(shown.Representation == "Surface", "Reconstruct: shown as %s" % shown.Representation)
    simple.Delete(view)


# ------------------------------------------------------------------------------------------------
CHILD = r'''
import sys
from paraview.simple import *
LoadPlugin(sys.argv[1], remote=False, ns=globals())
view = CreateRenderView()


def mark(text):
    sys.stderr.write("@@ " + text + "\n")
    sys.stderr.flush()


def apply(source):
    """What ParaView does for Apply: update, show, render; then the Information panel."""
    source.UpdatePipeline()
    Show(source, view)
    Render(view)
    source.UpdatePipeline()
    Render(view)
    servermanager.Fetch(source)
    Hide(source, view)


image = Wavelet(WholeExtent=[-16, 15, -16, 15, 0, 0])
volume = Wavelet(WholeExtent=[-4, 4, -4, 4, -4, 4])
compressed = SparseGridHierarchize(Input=volume, Scalars=["RTData"])
mesh = ColumnMesh()
scenarios = [
    # servermanager's proxy, as the Filters menu's input dialog leaves it (paraview.simple
    # would put the active source on Input).
    ("reconstruct-no-input", lambda: servermanager.filters.SparseGridReconstruct(
        Source=compressed)),
    ("correlation-no-reference", lambda: ImageCorrelation(Input=image,
                                                          Scalars=["POINTS", "RTData"])),
    ("correlation-3d", lambda: ImageCorrelation(Input=volume, Reference=volume,
                                                Scalars=["POINTS", "RTData"])),
    ("displacement-no-reference", lambda: ImageDisplacement(Input=image,
                                                            Scalars=["POINTS", "RTData"])),
    ("laplacian-not-columnar", lambda: Laplacian(Input=Elevation(Input=Sphere()),
                                                                Scalars=["POINTS", "Elevation"])),
    ("laplacian-slice-size", lambda: Laplacian(Input=mesh, Scalars=["CELLS", "Field"],
                                                       SliceSize=0)),
    ("celldata-threads", lambda: CellDataToPointDataAccelerated(Input=mesh, NumberOfThreads=-1)),
    ("reorder-block", lambda: ReorderMesh(Input=mesh, BlockSize=5)),
]
for name, make in scenarios:
    mark("scenario " + name)
    try:
        apply(make())
    except Exception as e:
        mark("exception %s" % e)
mark("end")
'''

# Scenario -> a part of the message that must appear exactly once.
EXPECTED = {
    "reconstruct-no-input": "needs a dataset as Input",
    "correlation-no-reference": "no Reference is connected",
    "correlation-3d": "3-D images are not supported",
    "displacement-no-reference": "no Reference is connected",
    "laplacian-not-columnar": "not a column mesh",
    "laplacian-slice-size": "Slice Size",
    "celldata-threads": "Number Of Threads",
    "reorder-block": "Block Size",
}


def run_child(pvpython, plugin):
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


def error_lines(lines):
    """The lines of VTK error messages (each message starts with ERROR or names the class)."""
    return [l for l in lines if "ERROR" in l or "rror:" in l or "returned failure" in l]


def case_errors(simple, pvpython, plugin):
    result = run_child(pvpython, plugin)
    err = result.stderr
    check(result.returncode == 0 and "@@ end" in err,
          "the child ran every scenario (exit %d)" % result.returncode)
    sections = {}
    current = None
    for line in err.splitlines():
        if line.startswith("@@ scenario "):
            current = line[len("@@ scenario "):]
            sections[current] = []
        elif line.startswith("@@ "):
            if line.startswith("@@ exception"):
                sections.setdefault(current, []).append(line)
            current = None if line == "@@ end" else current
        elif current:
            sections[current].append(line)
    for name, text in EXPECTED.items():
        lines = sections.get(name, [])
        found = sum(1 for l in lines if text in l)
        generic = sum(1 for l in lines if "returned failure" in l or "has 0 connections" in l)
        exceptions = [l for l in lines if l.startswith("@@ exception")]
        check(found == 1 and generic == 0 and not exceptions,
              "%s: '%s' shown %d time(s), %d generic line(s) (want 1, 0)"
              % (name, text, found, generic))
        if found != 1 or generic:
            print("\n".join("    | " + l for l in lines[:40]))


# ------------------------------------------------------------------------------------------------
def case_reorder(simple):
    import numpy as np
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkUnstructuredGrid, VTK_HEXAHEDRON
    from vtkmodules.vtkCommonCore import vtkPoints
    # A 12 x 12 x 12 block of hexahedra whose points are numbered at random.
    n = 13
    rng = np.random.default_rng(5)
    order = rng.permutation(n ** 3)
    position = np.empty(n ** 3, dtype=np.int64)
    position[order] = np.arange(n ** 3)  # new id of the point (i, j, k) -> i + n (j + n k)
    points = vtkPoints()
    points.SetNumberOfPoints(n ** 3)
    for new, old in enumerate(order):
        i, j, k = old % n, (old // n) % n, old // (n * n)
        points.SetPoint(new, i, j, k)
    grid = vtkUnstructuredGrid()
    grid.SetPoints(points)
    corners = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1),
               (0, 1, 1)]
    cells = []
    for k in range(n - 1):
        for j in range(n - 1):
            for i in range(n - 1):
                ids = [int(position[(i + a) + n * ((j + b) + n * (k + c))]) for a, b, c in corners]
                grid.InsertNextCell(VTK_HEXAHEDRON, 8, ids)
                cells.append(ids)
    span_before = float(np.mean([max(c) - min(c) for c in cells]))
    producer = simple.PVTrivialProducer()
    producer.GetClientSideObject().SetOutput(grid)
    reordered = simple.ReorderMesh(Input=producer)
    out = simple.servermanager.Fetch(reordered)
    from vtkmodules.vtkCommonCore import vtkIdList
    ids = vtkIdList()
    spans = []
    for c in range(out.GetNumberOfCells()):
        out.GetCellPoints(c, ids)
        values = [ids.GetId(i) for i in range(ids.GetNumberOfIds())]
        spans.append(max(values) - min(values))
    span_after = float(np.mean(spans))
    before = field_value(out, "ReorderMesh.MeanCellPointSpanBefore")
    after = field_value(out, "ReorderMesh.MeanCellPointSpanAfter")
    check(before is not None and abs(before - span_before) <= 1e-9 * span_before,
          "span before %s = numpy %.6g" % (before, span_before))
    check(after is not None and abs(after - span_after) <= 1e-9 * max(span_after, 1),
          "span after %s = numpy %.6g" % (after, span_after))
    # The natural numbering (x fastest) of the block: a cell spans n^2 + n + 1 ids.
    natural = n * n + n + 1
    check(after is not None and after < 0.25 * before and after <= 2 * natural,
          "GPS shrinks the span of the shuffled mesh (%s -> %s) to within 2x of the natural "
          "numbering's %d" % (before, after, natural))


# ------------------------------------------------------------------------------------------------
def case_levels(simple, out):
    import numpy as np
    wavelet = simple.Wavelet(WholeExtent=[-20, 20, -20, 20, -20, 20])
    compressed = simple.SparseGridHierarchize(Input=wavelet, Scalars=["RTData"])
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "levels.sgrid")
    simple.SaveData(path, proxy=compressed)
    original = point_array(simple.servermanager.Fetch(wavelet), "RTData")
    reader = simple.SparseGridReader(FileName=[path])
    reader.UpdatePipelineInformation()
    data = simple.servermanager.Fetch(reader)
    levels = field_value(data, "SparseGrid.LevelsAvailable")
    domain = reader.GetProperty("LevelOfDetail").SMProperty.GetDomain("range")
    low, high = domain.GetMinimum(0), domain.GetMaximum(0)
    check(levels is not None and levels > 1 and (low, high) == (0, int(levels)),
          "Level Of Detail range %s..%s = 0..the file's %s levels" % (low, high, levels))
    check(reader.LevelOfDetail == 0,
          "a new reader reads every level (Level Of Detail %s, the domain's minimum)"
          % reader.LevelOfDetail)
    # A representation read at a coarser level feeds Reconstruct, whose Level Of Detail 0 then
    # decodes what the reader read: the reader's own image at that level, within its bound.
    coarse = simple.SparseGridReader(FileName=[path], OutputReconstructedImage=0, LevelOfDetail=3)
    rec = simple.SparseGridReconstruct(Source=coarse, Input=wavelet)
    reader.LevelOfDetail = 3
    expected = point_array(simple.servermanager.Fetch(reader), "RTData")
    data = simple.servermanager.Fetch(rec)
    values = point_array(data, "RTData")
    bound = field_value(data, "SparseGrid.AbsoluteErrorBound")
    check(values is not None and np.allclose(values, expected, rtol=0, atol=1e-4)
          and np.abs(values - original).max() <= bound * (1 + 1e-6),
          "Reconstruct of a representation read at level 3 equals the reader's level-3 image "
          "and keeps its bound %s" % bound)
    for level in range(1, int(levels or 1) + 1):
        reader.LevelOfDetail = level
        data = simple.servermanager.Fetch(reader)
        values = point_array(data, "RTData")
        bound = field_value(data, "SparseGrid.AbsoluteErrorBound")
        error = np.abs(values - original).max()
        check(np.abs(values).max() > 0 and error <= bound * (1 + 1e-6),
              "level %d: not all zero (max |value| %.4g), error %.4g <= its bound %.4g"
              % (level, np.abs(values).max(), error, bound))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--pvpython", default=sys.executable)
    parser.add_argument("--out", default=tempfile.gettempdir())
    args = parser.parse_args()
    simple = load(args.plugin)
    if args.case == "compare":
        case_compare(simple)
    elif args.case == "laplacian":
        case_laplacian(simple)
    elif args.case == "inputs":
        case_inputs(simple)
    elif args.case == "errors":
        case_errors(simple, args.pvpython, args.plugin)
    elif args.case == "reorder":
        case_reorder(simple)
    elif args.case == "levels":
        case_levels(simple, args.out)
    else:
        check(False, "unknown case " + args.case)
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
